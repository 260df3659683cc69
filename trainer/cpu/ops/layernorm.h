// LayerNorm over the last dimension (GPT-2).
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// For each of N rows of C: out = (inp - mean) * rstd * weight + bias,
// rstd = 1 / sqrt(var + eps) (biased variance). Saves mean[N] and rstd[N].
template <typename Float>
void LayerNormForward(Float* out, Float* mean, Float* rstd, const Float* inp, const Float* weight,
                      const Float* bias, int64_t N, int64_t C, double eps);

// dinp[N,C] += ...; dweight[C] += Σ_n dout * xhat; dbias[C] += Σ_n dout
// (dweight nullptr: frozen weights, the input gradient only; dbias is then not read).
template <typename Float>
void LayerNormBackward(Float* dinp, Float* dweight, Float* dbias, const Float* dout,
                       const Float* inp, const Float* weight, const Float* mean, const Float* rstd,
                       int64_t N, int64_t C);

}  // namespace bm::train::cpu
