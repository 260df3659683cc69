// The inner loops of Resample (base/image/resample.cc): Pillow's fixed-point sums, exact, in
// any order. Scalar versions everywhere, SSE4.1 (horizontal) and AVX2 (vertical) on x86-64
// CPUs that have them (the horizontal pass two positions at a time with AVX2), chosen at
// run time. Internal to base/image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace bm::image::internal {

// 8 bits of result, 2 bits of headroom for the negative lobes: Pillow's PRECISION_BITS.
inline constexpr int kPrecisionBits = 32 - 8 - 2;
inline constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// Fixed-point taps of output positions: position i sums source indices start[i] ..
// start[i] + count[i] - 1 with weights of(i)[0 .. count[i]).
struct Taps {
  int ksize = 0;
  std::vector<int> start, count;
  std::vector<int32_t> weights;  // positions * ksize, zero past count[i]
  const int32_t* of(int i) const { return weights.data() + static_cast<size_t>(i) * ksize; }
};

// The horizontal pass's taps prepared once per resize for the row kernel.
class HorizontalKernel {
 public:
  HorizontalKernel(const Taps& taps, int in_width);
  // One row: in has in_width RGB pixels, out receives taps.start.size() RGB pixels.
  void Row(const uint8_t* in, uint8_t* out) const;

 private:
  const Taps& taps_;
  int in_width_;
  bool simd_;
  bool avx2_ = false;
  int pairs_ = 0;                   // (ksize + 1) / 2
  std::vector<int16_t> hi_, lo_;    // per position and tap pair: 8 lanes (k >> 8, k & 255)
  std::vector<int16_t> hi2_, lo2_;  // AVX2: positions 2j, 2j + 1 side by side, 16 lanes
};

// Tests: the widest instruction set the kernels may use (the SIMD paths must equal the scalar
// ones). Not thread-safe: set it before resampling starts.
enum class KernelLevel { kBest, kSse41, kScalar };
void LimitKernels(KernelLevel level);

// One output row of the vertical pass: out[j] = clip8((half + sum_t rows[t][j] * k[t]) >> 22)
// for j < n.
void VerticalRow(const uint8_t* const* rows, const int32_t* k, int taps, int n, uint8_t* out);

}  // namespace bm::image::internal
