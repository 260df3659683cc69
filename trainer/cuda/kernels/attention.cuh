// Scaled-dot-product attention, forward and backward, flash-style: the T x T score matrix is
// never stored (memory linear in T). Grouped-query attention through kv_heads. Causal (query t
// sees keys 0..t: the language models') or, with causal = false, every query sees every key of
// its sequence (the vision tower's encoder).
//
// Layouts (row n = b*T + t):
//   qkv  [B*T, (H + 2*Hkv) * D]: q heads, then k heads, then v heads (the fused projection)
//   out  [B*T, H*D]              (ready for the output projection)
//   lse  [B, H, T] fp32: log-sum-exp of each row's scaled scores (saved for the backward pass)
//   dqkv like qkv, written (not accumulated)
// Query head h reads kv head h / (H / Hkv). Scale 1/sqrt(D).
//
// Implementations: for bf16 and fp16 with D = 64 or 128, tensor-core kernels (flash_attention.cu:
// mma.sync m16n8k16, fp32 accumulation); otherwise, or when kReference is asked for, a
// warp-per-row reference kernel. Both are deterministic: the backward pass computes dQ in one
// kernel (over key tiles) and dK/dV in another (over query tiles and the heads of a group),
// so no gradient is summed with atomics. T need not be a multiple of any tile (CLIP's 577): the
// last tile of queries and of keys is ragged, its missing rows masked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/result.h"

namespace bm::train::cuda {

// kAuto: our tensor-core kernels where they apply (else the reference kernel); kReference:
// the reference kernel; kCudnn: cuDNN's fused attention (cudnn_attention.h, bf16 / fp16; the
// launchers below refuse it: the model calls cudnn_attention.h with its arena workspace).
enum class AttentionImpl { kAuto, kReference, kCudnn };

// Device scratch the backward pass needs, in floats.
size_t AttentionScratchFloats(int batch, int seq, int heads);

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status AttentionForward(T* out, float* lse, const T* qkv, int batch, int seq, int heads,
                        int kv_heads, int head_dim, AttentionImpl impl, cudaStream_t stream,
                        bool causal = true);
template <typename T>
Status AttentionBackward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv,
                         const float* lse, int batch, int seq, int heads, int kv_heads,
                         int head_dim, AttentionImpl impl, cudaStream_t stream, bool causal = true);

// ---- CPU twins (fp32)
void AttentionForwardCpu(float* out, float* lse, const float* qkv, int batch, int seq, int heads,
                         int kv_heads, int head_dim, bool causal = true);
void AttentionBackwardCpu(float* dqkv, const float* dout, const float* out, const float* qkv,
                          const float* lse, int batch, int seq, int heads, int kv_heads,
                          int head_dim, bool causal = true);

}  // namespace bm::train::cuda
