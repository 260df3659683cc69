// Multi-head self-attention with grouped-query heads, causal (the language
// model) or not (the vision tower: every position sees all T), the plain way:
// it materializes the T×T probabilities, through BLAS (fine for the CPU
// reference; the CUDA backend uses flash attention and is checked against this).
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// qkv[B,T,(NH+2*KVH)*HS]: at each position the NH query heads, then KVH key
//   heads, then KVH value heads, each HS wide (the fused q|k|v projection).
//   Query head h attends with key/value head h / (NH / KVH).
// att[B,NH,T,T]: saved softmax probabilities (causal: 0 above the diagonal).
// out[B,T,NH*HS] = softmax(q k^T / sqrt(HS), causal mask when `causal`) v
template <typename Float>
void AttentionForward(Float* out, Float* att, const Float* qkv, int64_t B, int64_t T, int64_t NH,
                      int64_t KVH, int64_t HS, bool causal = true);

// dqkv[B,T,(NH+2*KVH)*HS] += gradient of out w.r.t. qkv, given dout[B,T,NH*HS];
// `causal` as in the forward that saved att.
template <typename Float>
void AttentionBackward(Float* dqkv, const Float* dout, const Float* qkv, const Float* att,
                       int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS,
                       bool causal = true);

}  // namespace bm::train::cpu
