// RMSNorm over the last dimension (LLaMA; Hugging Face LlamaRMSNorm).
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// For each of N rows of C: out = inp * rstd * weight, rstd = 1 / sqrt(mean(inp²) + eps).
// Saves rstd[N].
template <typename Float>
void RmsNormForward(Float* out, Float* rstd, const Float* inp, const Float* weight, int64_t N,
                    int64_t C, double eps);

// dinp[N,C] += ...; dweight[C] += Σ_n dout * inp * rstd (dweight nullable: frozen weights).
template <typename Float>
void RmsNormBackward(Float* dinp, Float* dweight, const Float* dout, const Float* inp,
                     const Float* weight, const Float* rstd, int64_t N, int64_t C);

}  // namespace bm::train::cpu
