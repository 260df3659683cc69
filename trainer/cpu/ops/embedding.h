// Token (and learned position) embedding.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// out[B,T,C] = wte[inp[b,t], :] + wpe[t, :]      (wpe nullable: no positions)
template <typename Float>
void EmbeddingForward(Float* out, const int32_t* inp, const Float* wte, const Float* wpe, int64_t B,
                      int64_t T, int64_t C);

// dwte[inp[b,t], :] += dout[b,t,:];  dwpe[t,:] += Σ_b dout[b,t,:]   (dwpe nullable)
template <typename Float>
void EmbeddingBackward(Float* dwte, Float* dwpe, const Float* dout, const int32_t* inp, int64_t B,
                       int64_t T, int64_t C);

}  // namespace bm::train::cpu
