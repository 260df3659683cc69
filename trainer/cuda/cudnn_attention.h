// Causal scaled-dot-product attention through cuDNN's fused flash-attention engines, built
// with the cuDNN backend (graph) API: the same layouts as kernels/attention.cuh (packed qkv,
// out [B*T, H*D], lse [B, H, T] natural-log log-sum-exp of the scaled scores), bf16 or fp16,
// grouped-query attention through kv_heads, scale 1/sqrt(D), head_dim a multiple of 8, <= 128.
//
// The backward graph is the deterministic one (no fp32 dQ accumulator with atomics; engines
// that carry cuDNN's NONDETERMINISTIC numerical note are refused), so two runs give the same
// bits. On Hopper cuDNN's deterministic backward keeps dP (the scores' gradient) for all the
// keys of its call in its workspace, bf16. So that nothing T x T exists, the backward runs
// over blocks of keys: at most `key_chunk` of them and at most half the sequence (rounded
// down to a multiple of 64). The call for keys [k0, k1) takes the queries [k0, T) (top-left
// causal within the block), writes dK and dV of its keys whole and a partial dQ for the rows
// k0.. that is added, in block order, to the others (deterministic). Workspace: B·H·T·block·2
// bytes for dP plus one partial dQ (B·T·H·D·2), linear in T. fp16 runs the same graphs with
// fp16 tensors (every intermediate stays fp32).
//
// Execution plans are built once per shape and key block (first call) and cached for the
// process; the caller passes the workspace (from the arena), sized by
// CudnnAttentionWorkspaceBytes.
//
// Without cuDNN in the build (BENCHMAKE_HAVE_CUDNN unset) every entry point returns
// kUnsupported with a message saying so; CudnnAttentionBuilt() tells beforehand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/result.h"

namespace bm::train::cuda {

// Keys per backward call (see above); RunSpec::attention_chunk.
constexpr int kCudnnKeyChunk = 1024;

struct AttentionShape {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int key_chunk = kCudnnKeyChunk;  // cuDNN backward: at most this many keys per call; 0: one
  bool fp16 = false;               // the tensors are __half rather than __nv_bfloat16
};

bool CudnnAttentionBuilt();

// Built in, a shape cuDNN's engines take (head_dim a multiple of 8 up to 128, heads a multiple
// of kv_heads) and both plans build on this GPU: what attention = "auto" checks before it
// picks cuDNN over our kernels.
bool CudnnAttentionUsable(const AttentionShape& shape);

// Largest workspace of the forward and backward plans for this shape, the backward's partial
// dQ included (builds and caches the plans; fails with the cuDNN status when no engine
// supports a graph).
Result<size_t> CudnnAttentionWorkspaceBytes(const AttentionShape& shape);

// 16-bit tensors passed as void* (__nv_bfloat16, or __half with shape.fp16).
Status CudnnAttentionForward(void* out, float* lse, const void* qkv, const AttentionShape& shape,
                             void* workspace, size_t workspace_bytes, cudaStream_t stream);
Status CudnnAttentionBackward(void* dqkv, const void* dout, const void* out, const void* qkv,
                              const float* lse, const AttentionShape& shape, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);

}  // namespace bm::train::cuda
