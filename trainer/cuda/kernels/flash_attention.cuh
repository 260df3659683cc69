// Tensor-core flash attention for bf16 and fp16 (T = __nv_bfloat16 or __half), head_dim 64 or
// 128, causal or not (internal to attention.cu; the contract is attention.cuh's). delta [B, H, T] =
// rowsum(dout * out), computed by the caller.
#pragma once

#include <cuda_runtime_api.h>

#include "base/result.h"

namespace bm::train::cuda {

bool FlashAttentionSupports(int head_dim);
template <typename T>
Status FlashAttentionForward(T* out, float* lse, const T* qkv, int batch, int seq, int heads,
                             int kv_heads, int head_dim, cudaStream_t stream, bool causal);
template <typename T>
Status FlashAttentionBackward(T* dqkv, const T* dout, const T* qkv, const float* lse,
                              const float* delta, int batch, int seq, int heads, int kv_heads,
                              int head_dim, cudaStream_t stream, bool causal);

}  // namespace bm::train::cuda
