// Rotary position embedding (rotate-half convention, as Hugging Face's LLaMA), in place on
// the fused qkv activations.
//
// qkv [B*T, (H + 2*Hkv) * D]: q heads first, then k heads, then v heads (v untouched).
// For position t and pair i < D/2 with angle a = t * theta^(-2i/D):
//   x'[i] = x[i] cos a - x[i + D/2] sin a;   x'[i + D/2] = x[i + D/2] cos a + x[i] sin a.
// The backward pass is the inverse rotation applied to dqkv (angle -a).
// table [T, D/2, 2] holds (cos a, sin a) in fp32, from RopeTable().
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "base/result.h"

namespace bm::train::cuda {

std::vector<float> RopeTable(int seq, int head_dim, double theta);

// ---- launchers (T = float, __nv_bfloat16 or __half); inverse = true for the backward pass
template <typename T>
Status Rope(T* qkv, const float* table, int batch, int seq, int heads, int kv_heads, int head_dim,
            bool inverse, cudaStream_t stream);

// ---- CPU twin (fp32)
void RopeCpu(float* qkv, const float* table, int batch, int seq, int heads, int kv_heads,
             int head_dim, bool inverse);

}  // namespace bm::train::cuda
