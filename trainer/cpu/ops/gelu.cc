#include "trainer/cpu/ops/gelu.h"

#include <cmath>

namespace bm::train::cpu {
namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kInvSqrt2 = 0.7071067811865476;
constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2π)
constexpr double kQuick = 1.702;
}  // namespace

template <typename Float>
void GeluForward(Float* out, const Float* inp, int64_t N) {
  const Float k = static_cast<Float>(kSqrt2OverPi);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const Float x = inp[i];
    const Float cube = static_cast<Float>(0.044715) * x * x * x;
    out[i] = static_cast<Float>(0.5) * x * (static_cast<Float>(1) + std::tanh(k * (x + cube)));
  }
}

template <typename Float>
void GeluBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N) {
  const Float k = static_cast<Float>(kSqrt2OverPi);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const Float x = inp[i];
    const Float u = k * (x + static_cast<Float>(0.044715) * x * x * x);
    const Float th = std::tanh(u);
    const Float sech2 = static_cast<Float>(1) - th * th;
    const Float du = k * (static_cast<Float>(1) + static_cast<Float>(3 * 0.044715) * x * x);
    const Float grad = static_cast<Float>(0.5) * (static_cast<Float>(1) + th) +
                       static_cast<Float>(0.5) * x * sech2 * du;
    dinp[i] += grad * dout[i];
  }
}

template <typename Float>
void GeluErfForward(Float* out, const Float* inp, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const Float x = inp[i];
    out[i] = static_cast<Float>(0.5) * x *
             (static_cast<Float>(1) + std::erf(x * static_cast<Float>(kInvSqrt2)));
  }
}

template <typename Float>
void GeluErfBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const Float x = inp[i];
    const Float cdf = static_cast<Float>(0.5) *
                      (static_cast<Float>(1) + std::erf(x * static_cast<Float>(kInvSqrt2)));
    const Float pdf = static_cast<Float>(kInvSqrt2Pi) * std::exp(static_cast<Float>(-0.5) * x * x);
    dinp[i] += (cdf + x * pdf) * dout[i];
  }
}

template <typename Float>
void QuickGeluForward(Float* out, const Float* inp, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const Float x = inp[i];
    out[i] = x / (static_cast<Float>(1) + std::exp(static_cast<Float>(-kQuick) * x));
  }
}

template <typename Float>
void QuickGeluBackward(Float* dinp, const Float* inp, const Float* dout, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    const Float x = inp[i];
    const Float s =
        static_cast<Float>(1) / (static_cast<Float>(1) + std::exp(static_cast<Float>(-kQuick) * x));
    dinp[i] += (s + static_cast<Float>(kQuick) * x * s * (static_cast<Float>(1) - s)) * dout[i];
  }
}

template void GeluForward<float>(float*, const float*, int64_t);
template void GeluForward<double>(double*, const double*, int64_t);
template void GeluBackward<float>(float*, const float*, const float*, int64_t);
template void GeluBackward<double>(double*, const double*, const double*, int64_t);
template void GeluErfForward<float>(float*, const float*, int64_t);
template void GeluErfForward<double>(double*, const double*, int64_t);
template void GeluErfBackward<float>(float*, const float*, const float*, int64_t);
template void GeluErfBackward<double>(double*, const double*, const double*, int64_t);
template void QuickGeluForward<float>(float*, const float*, int64_t);
template void QuickGeluForward<double>(double*, const double*, int64_t);
template void QuickGeluBackward<float>(float*, const float*, const float*, int64_t);
template void QuickGeluBackward<double>(double*, const double*, const double*, int64_t);

}  // namespace bm::train::cpu
