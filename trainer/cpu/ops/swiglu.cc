#include "trainer/cpu/ops/swiglu.h"

#include <cmath>

namespace bm::train::cpu {

template <typename Float>
void SwiGluForward(Float* out, const Float* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* gate = inp + n * 2 * F;
    const Float* up = gate + F;
    for (int64_t i = 0; i < F; ++i) {
      const Float sig = static_cast<Float>(1) / (static_cast<Float>(1) + std::exp(-gate[i]));
      out[n * F + i] = gate[i] * sig * up[i];
    }
  }
}

template <typename Float>
void SwiGluBackward(Float* dinp, const Float* dout, const Float* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* gate = inp + n * 2 * F;
    const Float* up = gate + F;
    Float* dgate = dinp + n * 2 * F;
    Float* dup = dgate + F;
    for (int64_t i = 0; i < F; ++i) {
      const Float g = gate[i];
      const Float sig = static_cast<Float>(1) / (static_cast<Float>(1) + std::exp(-g));
      const Float silu = g * sig;
      // silu'(g) = sig * (1 + g * (1 - sig))
      const Float dsilu = sig * (static_cast<Float>(1) + g * (static_cast<Float>(1) - sig));
      dgate[i] += dout[n * F + i] * up[i] * dsilu;
      dup[i] += dout[n * F + i] * silu;
    }
  }
}

template void SwiGluForward<float>(float*, const float*, int64_t, int64_t);
template void SwiGluForward<double>(double*, const double*, int64_t, int64_t);
template void SwiGluBackward<float>(float*, const float*, const float*, int64_t, int64_t);
template void SwiGluBackward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace bm::train::cpu
