#include "trainer/cpu/ops/softmax_xent.h"

#include <cmath>

namespace bm::train::cpu {

template <typename Float>
void CrossEntropyForward(Float* losses, Float* probs, const Float* logits, const int32_t* targets,
                         int64_t N, int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* z = logits + n * V;
    Float* p = probs + n * V;
    Float maxv = z[0];
    for (int64_t v = 1; v < V; ++v)
      if (z[v] > maxv) maxv = z[v];
    const Float target_logit = z[targets[n]];  // read before p (maybe z) is written
    Float sum = 0;
    for (int64_t v = 0; v < V; ++v) {
      p[v] = std::exp(z[v] - maxv);
      sum += p[v];
    }
    const Float inv = static_cast<Float>(1) / sum;
    for (int64_t v = 0; v < V; ++v) p[v] *= inv;
    // -log p[target] = log Σ exp(z - max) - (z[target] - max): exact even where p underflows
    losses[n] = std::log(sum) - (target_logit - maxv);
  }
}

template <typename Float>
void CrossEntropyBackward(Float* dlogits, const Float* probs, const int32_t* targets,
                          const Float* dlosses, int64_t N, int64_t V, int64_t v0) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float d = dlosses[n];
    const Float* p = probs + n * V;
    Float* g = dlogits + n * V;
    for (int64_t v = 0; v < V; ++v) g[v] = d * p[v];
    const int64_t target = targets[n] - v0;
    if (target >= 0 && target < V) g[target] -= d;
  }
}

template <typename Float>
void RowMax(Float* maxes, const Float* logits, int64_t N, int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* z = logits + n * V;
    Float maxv = z[0];
    for (int64_t v = 1; v < V; ++v)
      if (z[v] > maxv) maxv = z[v];
    maxes[n] = maxv;
  }
}

template <typename Float>
void ShiftedExp(Float* probs, Float* sums, Float* target_logits, const Float* logits,
                const Float* maxes, const int32_t* targets, int64_t N, int64_t V, int64_t v0) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* z = logits + n * V;
    Float* p = probs + n * V;
    const int64_t target = targets[n] - v0;
    target_logits[n] = target >= 0 && target < V ? z[target] : Float(0);  // before p is written
    Float sum = 0;
    for (int64_t v = 0; v < V; ++v) {
      p[v] = std::exp(z[v] - maxes[n]);
      sum += p[v];
    }
    sums[n] = sum;
  }
}

template <typename Float>
void NormalizeXent(Float* losses, Float* probs, const Float* sums, const Float* target_logits,
                   const Float* maxes, int64_t N, int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    Float* p = probs + n * V;
    const Float inv = static_cast<Float>(1) / sums[n];
    for (int64_t v = 0; v < V; ++v) p[v] *= inv;
    losses[n] = std::log(sums[n]) - (target_logits[n] - maxes[n]);
  }
}

template <typename Float>
void ArgmaxRows(int32_t* out, const Float* logits, int64_t N, int64_t V) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const Float* z = logits + n * V;
    int64_t best = 0;
    for (int64_t v = 1; v < V; ++v)
      if (z[v] > z[best]) best = v;
    out[n] = static_cast<int32_t>(best);
  }
}

template void CrossEntropyForward<float>(float*, float*, const float*, const int32_t*, int64_t,
                                         int64_t);
template void CrossEntropyForward<double>(double*, double*, const double*, const int32_t*, int64_t,
                                          int64_t);
template void CrossEntropyBackward<float>(float*, const float*, const int32_t*, const float*,
                                          int64_t, int64_t, int64_t);
template void CrossEntropyBackward<double>(double*, const double*, const int32_t*, const double*,
                                           int64_t, int64_t, int64_t);
template void RowMax<float>(float*, const float*, int64_t, int64_t);
template void RowMax<double>(double*, const double*, int64_t, int64_t);
template void ShiftedExp<float>(float*, float*, float*, const float*, const float*, const int32_t*,
                                int64_t, int64_t, int64_t);
template void ShiftedExp<double>(double*, double*, double*, const double*, const double*,
                                 const int32_t*, int64_t, int64_t, int64_t);
template void NormalizeXent<float>(float*, float*, const float*, const float*, const float*,
                                   int64_t, int64_t);
template void NormalizeXent<double>(double*, double*, const double*, const double*, const double*,
                                    int64_t, int64_t);
template void ArgmaxRows<float>(int32_t*, const float*, int64_t, int64_t);
template void ArgmaxRows<double>(int32_t*, const double*, int64_t, int64_t);

}  // namespace bm::train::cpu
