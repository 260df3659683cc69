// Tensor-core flash attention for bf16, head_dim 64 or 128 (internal to attention.cu; the
// contract is attention.cuh's). delta [B, H, T] = rowsum(dout * out), computed by the caller.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "base/result.h"

namespace bm::train::cuda {

bool FlashAttentionSupports(int head_dim);
Status FlashAttentionForward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, int batch,
                             int seq, int heads, int kv_heads, int head_dim, cudaStream_t stream);
Status FlashAttentionBackward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout,
                              const __nv_bfloat16* qkv, const float* lse, const float* delta,
                              int batch, int seq, int heads, int kv_heads, int head_dim,
                              cudaStream_t stream);

}  // namespace bm::train::cuda
