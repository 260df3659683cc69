#include "trainer/cpu/ops/residual.h"

namespace bm::train::cpu {

template <typename Float>
void ResidualForward(Float* out, const Float* a, const Float* b, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) out[i] = a[i] + b[i];
}

template <typename Float>
void ResidualBackward(Float* da, Float* db, const Float* dout, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i) {
    da[i] += dout[i];
    db[i] += dout[i];
  }
}

template void ResidualForward<float>(float*, const float*, const float*, int64_t);
template void ResidualForward<double>(double*, const double*, const double*, int64_t);
template void ResidualBackward<float>(float*, float*, const float*, int64_t);
template void ResidualBackward<double>(double*, double*, const double*, int64_t);

}  // namespace bm::train::cpu
