#include "trainer/cpu/ops/rmsnorm.h"

#include <cmath>

namespace bm::train::cpu {

template <typename Float>
void RmsNormForward(Float* out, Float* rstd, const Float* inp, const Float* weight, int64_t N,
                    int64_t C, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* x = inp + n * C;
    Float ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += x[i] * x[i];
    const Float s =
        static_cast<Float>(1) / std::sqrt(ss / static_cast<Float>(C) + static_cast<Float>(eps));
    Float* o = out + n * C;
    for (int64_t i = 0; i < C; ++i) o[i] = x[i] * s * weight[i];
    rstd[n] = s;
  }
}

template <typename Float>
void RmsNormBackward(Float* dinp, Float* dweight, const Float* dout, const Float* inp,
                     const Float* weight, const Float* rstd, int64_t N, int64_t C) {
  // y = x * s * w with s = (mean(x²) + eps)^-1/2:
  // dx = s * (dout * w) - x * s³ * mean(dout * w * x)
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* x = inp + n * C;
    const Float* g = dout + n * C;
    const Float s = rstd[n];
    Float dot = 0;
    for (int64_t i = 0; i < C; ++i) dot += g[i] * weight[i] * x[i];
    dot /= static_cast<Float>(C);
    Float* dx = dinp + n * C;
    for (int64_t i = 0; i < C; ++i) dx[i] += s * g[i] * weight[i] - x[i] * s * s * s * dot;
  }
  if (!dweight) return;  // frozen weights: the input gradient only
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < C; ++i) {
    Float dw = 0;
    for (int64_t n = 0; n < N; ++n) dw += dout[n * C + i] * inp[n * C + i] * rstd[n];
    dweight[i] += dw;
  }
}

template void RmsNormForward<float>(float*, float*, const float*, const float*, int64_t, int64_t,
                                    double);
template void RmsNormForward<double>(double*, double*, const double*, const double*, int64_t,
                                     int64_t, double);
template void RmsNormBackward<float>(float*, float*, const float*, const float*, const float*,
                                     const float*, int64_t, int64_t);
template void RmsNormBackward<double>(double*, double*, const double*, const double*, const double*,
                                      const double*, int64_t, int64_t);

}  // namespace bm::train::cpu
