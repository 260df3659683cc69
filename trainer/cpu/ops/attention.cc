#include "trainer/cpu/ops/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "trainer/cpu/ops/blas.h"

// Each (batch, head) is a handful of GEMMs over strided views of qkv (the
// full T×T score matrix is computed and, causal, its upper triangle ignored:
// BLAS on twice the work beats scalar loops on the causal half). Heads run one after
// the other, each GEMM threaded by BLAS; the row-wise softmax is OpenMP.
namespace bm::train::cpu {

template <typename Float>
void AttentionForward(Float* out, Float* att, const Float* qkv, int64_t B, int64_t T, int64_t NH,
                      int64_t KVH, int64_t HS, bool causal) {
  const int64_t W = (NH + 2 * KVH) * HS;  // qkv row width
  const int64_t C = NH * HS;              // out row width
  const int64_t group = NH / KVH;
  const Float scale = static_cast<Float>(1.0 / std::sqrt(static_cast<double>(HS)));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      const int64_t kvh = h / group;
      const Float* q = qkv + b * T * W + h * HS;                 // [T, HS], row stride W
      const Float* k = qkv + b * T * W + (NH + kvh) * HS;        // [T, HS]
      const Float* v = qkv + b * T * W + (NH + KVH + kvh) * HS;  // [T, HS]
      Float* a = att + (b * NH + h) * T * T;                     // [T, T]
      // scores[T, T] = q k^T * scale
      Gemm(false, true, T, T, HS, scale, q, W, k, W, Float(0), a, T);
      // softmax of each row over t2 < end (causal: t2 <= t, zeros above the diagonal)
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < T; ++t) {
        Float* row = a + t * T;
        const int64_t end = causal ? t + 1 : T;
        Float maxv = -std::numeric_limits<Float>::infinity();
        for (int64_t t2 = 0; t2 < end; ++t2) maxv = row[t2] > maxv ? row[t2] : maxv;
        Float sum = 0;
        for (int64_t t2 = 0; t2 < end; ++t2) {
          row[t2] = std::exp(row[t2] - maxv);
          sum += row[t2];
        }
        const Float inv = Float(1) / sum;
        for (int64_t t2 = 0; t2 < end; ++t2) row[t2] *= inv;
        for (int64_t t2 = end; t2 < T; ++t2) row[t2] = 0;
      }
      // out[T, HS] = att[T, T] v[T, HS]
      Gemm(false, false, T, HS, T, Float(1), a, T, v, W, Float(0), out + b * T * C + h * HS, C);
    }
  }
}

template <typename Float>
void AttentionBackward(Float* dqkv, const Float* dout, const Float* qkv, const Float* att,
                       int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS, bool causal) {
  const int64_t W = (NH + 2 * KVH) * HS;
  const int64_t C = NH * HS;
  const int64_t group = NH / KVH;
  const Float scale = static_cast<Float>(1.0 / std::sqrt(static_cast<double>(HS)));
  std::vector<Float> dp(T * T);  // d(att), then d(scores)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      const int64_t kvh = h / group;
      const Float* q = qkv + b * T * W + h * HS;
      const Float* k = qkv + b * T * W + (NH + kvh) * HS;
      const Float* v = qkv + b * T * W + (NH + KVH + kvh) * HS;
      Float* dq = dqkv + b * T * W + h * HS;
      Float* dk = dqkv + b * T * W + (NH + kvh) * HS;
      Float* dv = dqkv + b * T * W + (NH + KVH + kvh) * HS;
      const Float* a = att + (b * NH + h) * T * T;
      const Float* go = dout + b * T * C + h * HS;  // [T, HS], row stride C
      // dv[T, HS] += att^T[T, T] dout[T, HS]
      Gemm(true, false, T, HS, T, Float(1), a, T, go, C, Float(1), dv, W);
      // datt[T, T] = dout[T, HS] v^T
      Gemm(false, true, T, T, HS, Float(1), go, C, v, W, Float(0), dp.data(), T);
      // softmax backward: dscores = att * (datt - Σ_t2 att * datt) * scale (causal: 0 above
      // the diagonal)
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < T; ++t) {
        const Float* arow = a + t * T;
        Float* row = dp.data() + t * T;
        const int64_t end = causal ? t + 1 : T;
        Float dot = 0;
        for (int64_t t2 = 0; t2 < end; ++t2) dot += arow[t2] * row[t2];
        for (int64_t t2 = 0; t2 < end; ++t2) row[t2] = arow[t2] * (row[t2] - dot) * scale;
        for (int64_t t2 = end; t2 < T; ++t2) row[t2] = 0;
      }
      // dq[T, HS] += dscores[T, T] k[T, HS];  dk[T, HS] += dscores^T q[T, HS]
      Gemm(false, false, T, HS, T, Float(1), dp.data(), T, k, W, Float(1), dq, W);
      Gemm(true, false, T, HS, T, Float(1), dp.data(), T, q, W, Float(1), dk, W);
    }
  }
}

template void AttentionForward<float>(float*, float*, const float*, int64_t, int64_t, int64_t,
                                      int64_t, int64_t, bool);
template void AttentionForward<double>(double*, double*, const double*, int64_t, int64_t, int64_t,
                                       int64_t, int64_t, bool);
template void AttentionBackward<float>(float*, const float*, const float*, const float*, int64_t,
                                       int64_t, int64_t, int64_t, int64_t, bool);
template void AttentionBackward<double>(double*, const double*, const double*, const double*,
                                        int64_t, int64_t, int64_t, int64_t, int64_t, bool);

}  // namespace bm::train::cpu
