#include "trainer/cpu/ops/adamw.h"

#include <cmath>
#include <vector>

namespace bm::train::cpu {

void AdamWUpdate(float* params, const float* grads, float* m, float* v, int64_t n, float lr,
                 float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                 int64_t t) {
  const float c1 =
      1.0f - static_cast<float>(std::pow(static_cast<double>(beta1), static_cast<double>(t)));
  const float c2 =
      1.0f - static_cast<float>(std::pow(static_cast<double>(beta2), static_cast<double>(t)));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i] * grad_scale;
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float mhat = m[i] / c1;
    const float vhat = v[i] / c2;
    params[i] -= lr * (mhat / (std::sqrt(vhat) + eps) + weight_decay * params[i]);
  }
}

double SumOfSquares(const float* x, int64_t n) {
  constexpr int64_t kBlock = 1 << 14;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    double s = 0;
    const int64_t end = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[b] = s;
  }
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

float ClipScale(float norm, float clip) {
  if (clip <= 0.0f || norm <= clip) return 1.0f;
  return clip / (norm + 1e-6f);
}

}  // namespace bm::train::cpu
