// SwiGLU (LLaMA's MLP): silu(gate) * up, on the fused gate|up projection.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// inp[N,2F]: each row is gate[F] then up[F].  out[N,F] = silu(gate) * up,
// silu(x) = x * sigmoid(x).
template <typename Float>
void SwiGluForward(Float* out, const Float* inp, int64_t N, int64_t F);

// dinp[N,2F] += (d gate, d up) given dout[N,F].
template <typename Float>
void SwiGluBackward(Float* dinp, const Float* dout, const Float* inp, int64_t N, int64_t F);

}  // namespace bm::train::cpu
