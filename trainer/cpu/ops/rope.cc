#include "trainer/cpu/ops/rope.h"

#include <cmath>
#include <vector>

namespace bm::train::cpu {
namespace {

// direction +1: forward rotation; -1: its transpose.
template <typename Float>
void Rotate(Float* qkv, int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS, double theta,
            Float direction) {
  const int64_t half = HS / 2;
  const int64_t W = (NH + 2 * KVH) * HS;
  std::vector<Float> cos(T * half), sin(T * half);
  RopeTables(cos.data(), sin.data(), T, HS, theta);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < B * T; ++n) {
    const int64_t t = n % T;
    for (int64_t h = 0; h < NH + KVH; ++h) {  // query heads then key heads
      Float* x = qkv + n * W + h * HS;
      for (int64_t i = 0; i < half; ++i) {
        const Float c = cos[t * half + i], s = direction * sin[t * half + i];
        const Float x0 = x[i], x1 = x[i + half];
        x[i] = x0 * c - x1 * s;
        x[i + half] = x1 * c + x0 * s;
      }
    }
  }
}

}  // namespace

template <typename Float>
void RopeTables(Float* cos, Float* sin, int64_t T, int64_t HS, double theta) {
  const int64_t half = HS / 2;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(HS));
      const double angle = static_cast<double>(t) * freq;
      cos[t * half + i] = static_cast<Float>(std::cos(angle));
      sin[t * half + i] = static_cast<Float>(std::sin(angle));
    }
  }
}

template <typename Float>
void RopeForward(Float* qkv, int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS,
                 double theta) {
  Rotate(qkv, B, T, NH, KVH, HS, theta, Float(1));
}

template <typename Float>
void RopeBackward(Float* dqkv, int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS,
                  double theta) {
  Rotate(dqkv, B, T, NH, KVH, HS, theta, Float(-1));
}

template void RopeForward<float>(float*, int64_t, int64_t, int64_t, int64_t, int64_t, double);
template void RopeForward<double>(double*, int64_t, int64_t, int64_t, int64_t, int64_t, double);
template void RopeBackward<float>(float*, int64_t, int64_t, int64_t, int64_t, int64_t, double);
template void RopeBackward<double>(double*, int64_t, int64_t, int64_t, int64_t, int64_t, double);
template void RopeTables<float>(float*, float*, int64_t, int64_t, double);
template void RopeTables<double>(double*, double*, int64_t, int64_t, double);

}  // namespace bm::train::cpu
