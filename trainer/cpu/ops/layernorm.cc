#include "trainer/cpu/ops/layernorm.h"

#include <cmath>

namespace bm::train::cpu {

template <typename Float>
void LayerNormForward(Float* out, Float* mean, Float* rstd, const Float* inp, const Float* weight,
                      const Float* bias, int64_t N, int64_t C, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* x = inp + n * C;
    Float m = 0;
    for (int64_t i = 0; i < C; ++i) m += x[i];
    m /= static_cast<Float>(C);
    Float v = 0;
    for (int64_t i = 0; i < C; ++i) v += (x[i] - m) * (x[i] - m);
    v /= static_cast<Float>(C);
    const Float s = static_cast<Float>(1) / std::sqrt(v + static_cast<Float>(eps));
    Float* o = out + n * C;
    for (int64_t i = 0; i < C; ++i) o[i] = (x[i] - m) * s * weight[i] + bias[i];
    mean[n] = m;
    rstd[n] = s;
  }
}

template <typename Float>
void LayerNormBackward(Float* dinp, Float* dweight, Float* dbias, const Float* dout,
                       const Float* inp, const Float* weight, const Float* mean, const Float* rstd,
                       int64_t N, int64_t C) {
  // dinp: rows are independent.
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* x = inp + n * C;
    const Float* g = dout + n * C;
    // dnorm = g * weight; dx = rstd * (dnorm - mean(dnorm) - xhat * mean(dnorm * xhat))
    Float dnorm_mean = 0, dnorm_xhat_mean = 0;
    for (int64_t i = 0; i < C; ++i) {
      const Float xhat = (x[i] - mean[n]) * rstd[n];
      const Float dnorm = g[i] * weight[i];
      dnorm_mean += dnorm;
      dnorm_xhat_mean += dnorm * xhat;
    }
    dnorm_mean /= static_cast<Float>(C);
    dnorm_xhat_mean /= static_cast<Float>(C);
    Float* dx = dinp + n * C;
    for (int64_t i = 0; i < C; ++i) {
      const Float xhat = (x[i] - mean[n]) * rstd[n];
      dx[i] += rstd[n] * (g[i] * weight[i] - dnorm_mean - xhat * dnorm_xhat_mean);
    }
  }
  // dweight, dbias: channels are independent, rows summed in order.
  if (!dweight) return;  // frozen weights: the input gradient only
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < C; ++i) {
    Float dw = 0, db = 0;
    for (int64_t n = 0; n < N; ++n) {
      const Float xhat = (inp[n * C + i] - mean[n]) * rstd[n];
      dw += dout[n * C + i] * xhat;
      db += dout[n * C + i];
    }
    dweight[i] += dw;
    dbias[i] += db;
  }
}

template void LayerNormForward<float>(float*, float*, float*, const float*, const float*,
                                      const float*, int64_t, int64_t, double);
template void LayerNormForward<double>(double*, double*, double*, const double*, const double*,
                                       const double*, int64_t, int64_t, double);
template void LayerNormBackward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, const float*, const float*, int64_t, int64_t);
template void LayerNormBackward<double>(double*, double*, double*, const double*, const double*,
                                        const double*, const double*, const double*, int64_t,
                                        int64_t);

}  // namespace bm::train::cpu
