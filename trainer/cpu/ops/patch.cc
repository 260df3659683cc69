#include "trainer/cpu/ops/patch.h"

// One row of P pixels is contiguous in both layouts: the loops copy rows.
namespace bm::train::cpu {

template <typename Float>
void PatchForward(Float* patches, const Float* pixels, int64_t B, int64_t CH, int64_t S,
                  int64_t P) {
  const int64_t G = S / P, D = CH * P * P;
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < B * G * G; ++bg) {
    const int64_t b = bg / (G * G), gy = (bg / G) % G, gx = bg % G;
    Float* row = patches + bg * D;
    for (int64_t c = 0; c < CH; ++c)
      for (int64_t y = 0; y < P; ++y) {
        const Float* src = pixels + ((b * CH + c) * S + gy * P + y) * S + gx * P;
        Float* dst = row + (c * P + y) * P;
        for (int64_t x = 0; x < P; ++x) dst[x] = src[x];
      }
  }
}

template <typename Float>
void PatchBackward(Float* dpixels, const Float* dpatches, int64_t B, int64_t CH, int64_t S,
                   int64_t P) {
  const int64_t G = S / P, D = CH * P * P;
  // each pixel belongs to one patch: no two iterations write the same element
#pragma omp parallel for schedule(static)
  for (int64_t bg = 0; bg < B * G * G; ++bg) {
    const int64_t b = bg / (G * G), gy = (bg / G) % G, gx = bg % G;
    const Float* row = dpatches + bg * D;
    for (int64_t c = 0; c < CH; ++c)
      for (int64_t y = 0; y < P; ++y) {
        Float* dst = dpixels + ((b * CH + c) * S + gy * P + y) * S + gx * P;
        const Float* src = row + (c * P + y) * P;
        for (int64_t x = 0; x < P; ++x) dst[x] += src[x];
      }
  }
}

template void PatchForward<float>(float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void PatchForward<double>(double*, const double*, int64_t, int64_t, int64_t, int64_t);
template void PatchBackward<float>(float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void PatchBackward<double>(double*, const double*, int64_t, int64_t, int64_t, int64_t);

}  // namespace bm::train::cpu
