// The GELU family, forward and backward:
//   GeluForward       tanh approximation (GPT-2's "gelu_new")
//   GeluErfForward    the exact GELU, x Φ(x) with erf (PyTorch nn.GELU(), LLaVA's
//                     mlp2x_gelu projector)
//   QuickGeluForward  x σ(1.702 x) (CLIP's "quick_gelu", the vision tower's MLP)
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// out[N] = 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))
template <typename Float>
void GeluForward(Float* out, const Float* inp, int64_t N);

// dinp[N] += gelu'(inp) * dout
template <typename Float>
void GeluBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N);

// out[N] = 0.5 x (1 + erf(x / sqrt(2)))
template <typename Float>
void GeluErfForward(Float* out, const Float* inp, int64_t N);

// dinp[N] += (Φ(x) + x φ(x)) * dout, φ the standard normal density
template <typename Float>
void GeluErfBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N);

// out[N] = x σ(1.702 x)
template <typename Float>
void QuickGeluForward(Float* out, const Float* inp, int64_t N);

// dinp[N] += (σ(1.702 x) + 1.702 x σ(1.702 x)(1 - σ(1.702 x))) * dout
template <typename Float>
void QuickGeluBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N);

}  // namespace bm::train::cpu
