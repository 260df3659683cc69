#include "trainer/cpu/ops/embedding.h"

namespace bm::train::cpu {

template <typename Float>
void EmbeddingForward(Float* out, const int32_t* inp, const Float* wte, const Float* wpe, int64_t B,
                      int64_t T, int64_t C, int64_t v0, int64_t rows) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < B * T; ++n) {
    const int64_t t = n % T;
    const int64_t id = static_cast<int64_t>(inp[n]) - v0;
    Float* o = out + n * C;
    if (id < 0 || id >= rows) {  // another rank's token: a zero row
      for (int64_t i = 0; i < C; ++i) o[i] = wpe ? wpe[t * C + i] : Float(0);
      continue;
    }
    const Float* row = wte + id * C;
    if (wpe) {
      const Float* pos = wpe + t * C;
      for (int64_t i = 0; i < C; ++i) o[i] = row[i] + pos[i];
    } else {
      for (int64_t i = 0; i < C; ++i) o[i] = row[i];
    }
  }
}

template <typename Float>
void EmbeddingBackward(Float* dwte, Float* dwpe, const Float* dout, const int32_t* inp, int64_t B,
                       int64_t T, int64_t C, int64_t v0, int64_t rows) {
  // Rows of dwte may repeat, so threads split the channels: each channel is
  // summed over positions in order, whatever the thread count.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < C; ++i) {
    for (int64_t n = 0; n < B * T; ++n) {
      const int64_t id = static_cast<int64_t>(inp[n]) - v0;
      if (id >= 0 && id < rows) dwte[id * C + i] += dout[n * C + i];
      if (dwpe) dwpe[(n % T) * C + i] += dout[n * C + i];
    }
  }
}

template <typename Float>
void AddPositions(Float* out, const Float* wpe, int64_t first_row, int64_t rows, int64_t T,
                  int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t i = 0; i < C; ++i) out[n * C + i] += wpe[((first_row + n) % T) * C + i];
}

template void EmbeddingForward<float>(float*, const int32_t*, const float*, const float*, int64_t,
                                      int64_t, int64_t, int64_t, int64_t);
template void EmbeddingForward<double>(double*, const int32_t*, const double*, const double*,
                                       int64_t, int64_t, int64_t, int64_t, int64_t);
template void EmbeddingBackward<float>(float*, float*, const float*, const int32_t*, int64_t,
                                       int64_t, int64_t, int64_t, int64_t);
template void EmbeddingBackward<double>(double*, double*, const double*, const int32_t*, int64_t,
                                        int64_t, int64_t, int64_t, int64_t);
template void AddPositions<float>(float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void AddPositions<double>(double*, const double*, int64_t, int64_t, int64_t, int64_t);

}  // namespace bm::train::cpu
