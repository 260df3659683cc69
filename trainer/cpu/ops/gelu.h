// GELU, tanh approximation (GPT-2's "gelu_new").
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// out[N] = 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))
template <typename Float>
void GeluForward(Float* out, const Float* inp, int64_t N);

// dinp[N] += gelu'(inp) * dout
template <typename Float>
void GeluBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N);

}  // namespace bm::train::cpu
