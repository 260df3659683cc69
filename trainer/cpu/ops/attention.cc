#include "trainer/cpu/ops/attention.h"

#include <cmath>
#include <limits>
#include <vector>

namespace bm::train::cpu {

template <typename Float>
void AttentionForward(Float* out, Float* att, const Float* qkv, int64_t B, int64_t T, int64_t NH,
                      int64_t KVH, int64_t HS) {
  const int64_t W = (NH + 2 * KVH) * HS;  // qkv row width
  const int64_t group = NH / KVH;
  const Float scale = static_cast<Float>(1.0 / std::sqrt(static_cast<double>(HS)));
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t t = 0; t < T; ++t) {
        const int64_t kvh = h / group;
        const Float* q = qkv + (b * T + t) * W + h * HS;
        Float* a = att + ((b * NH + h) * T + t) * T;
        // scores and their max over the causal window t2 <= t
        Float maxv = -std::numeric_limits<Float>::infinity();
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const Float* k = qkv + (b * T + t2) * W + (NH + kvh) * HS;
          Float s = 0;
          for (int64_t i = 0; i < HS; ++i) s += q[i] * k[i];
          s *= scale;
          a[t2] = s;
          if (s > maxv) maxv = s;
        }
        Float sum = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          a[t2] = std::exp(a[t2] - maxv);
          sum += a[t2];
        }
        const Float inv = static_cast<Float>(1) / sum;
        for (int64_t t2 = 0; t2 <= t; ++t2) a[t2] *= inv;
        for (int64_t t2 = t + 1; t2 < T; ++t2) a[t2] = 0;
        // out = Σ att * v
        Float* o = out + (b * T + t) * NH * HS + h * HS;
        for (int64_t i = 0; i < HS; ++i) o[i] = 0;
        for (int64_t t2 = 0; t2 <= t; ++t2) {
          const Float* v = qkv + (b * T + t2) * W + (NH + KVH + kvh) * HS;
          for (int64_t i = 0; i < HS; ++i) o[i] += a[t2] * v[i];
        }
      }
    }
  }
}

template <typename Float>
void AttentionBackward(Float* dqkv, const Float* dout, const Float* qkv, const Float* att,
                       int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS) {
  const int64_t W = (NH + 2 * KVH) * HS;
  const int64_t group = NH / KVH;
  const Float scale = static_cast<Float>(1.0 / std::sqrt(static_cast<double>(HS)));
  // One task per (batch, key/value head): it owns dk and dv of that head and
  // dq of the query heads that share it, so no two tasks write the same value.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t kvh = 0; kvh < KVH; ++kvh) {
      std::vector<Float> datt(T), dpre(T);
      for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        for (int64_t t = 0; t < T; ++t) {
          const Float* a = att + ((b * NH + h) * T + t) * T;
          const Float* go = dout + (b * T + t) * NH * HS + h * HS;
          const Float* q = qkv + (b * T + t) * W + h * HS;
          Float* dq = dqkv + (b * T + t) * W + h * HS;
          // datt[t2] = dout · v[t2];  dv[t2] += att[t2] * dout
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            const Float* v = qkv + (b * T + t2) * W + (NH + KVH + kvh) * HS;
            Float* dv = dqkv + (b * T + t2) * W + (NH + KVH + kvh) * HS;
            Float s = 0;
            for (int64_t i = 0; i < HS; ++i) {
              s += go[i] * v[i];
              dv[i] += a[t2] * go[i];
            }
            datt[t2] = s;
          }
          // softmax backward: dpre = att * (datt - Σ att * datt)
          Float dot = 0;
          for (int64_t t2 = 0; t2 <= t; ++t2) dot += a[t2] * datt[t2];
          for (int64_t t2 = 0; t2 <= t; ++t2) dpre[t2] = a[t2] * (datt[t2] - dot) * scale;
          // scores = q · k * scale: dq += dpre * k; dk += dpre * q
          for (int64_t t2 = 0; t2 <= t; ++t2) {
            const Float* k = qkv + (b * T + t2) * W + (NH + kvh) * HS;
            Float* dk = dqkv + (b * T + t2) * W + (NH + kvh) * HS;
            for (int64_t i = 0; i < HS; ++i) {
              dq[i] += dpre[t2] * k[i];
              dk[i] += dpre[t2] * q[i];
            }
          }
        }
      }
    }
  }
}

template void AttentionForward<float>(float*, float*, const float*, int64_t, int64_t, int64_t,
                                      int64_t, int64_t);
template void AttentionForward<double>(double*, double*, const double*, int64_t, int64_t, int64_t,
                                       int64_t, int64_t);
template void AttentionBackward<float>(float*, const float*, const float*, const float*, int64_t,
                                       int64_t, int64_t, int64_t, int64_t);
template void AttentionBackward<double>(double*, const double*, const double*, const double*,
                                        int64_t, int64_t, int64_t, int64_t, int64_t);

}  // namespace bm::train::cpu
