// The fp32 masters as a bf16 working copy and a low half (trainer/cuda/kernels/split_master.h,
// RunSpec::split_masters), on the host: runs without a GPU. The kernels use the same functions;
// cuda_model_test.cc holds the GPU run with split masters to the run without, bit for bit.
//   - every fp32 pattern that is not a NaN comes back exactly (all 65,536 high halves with the
//     low halves at and around the rounding points, and a million random patterns);
//   - the high half is bf16 rounded to nearest: round-to-nearest-even's bits except at exact
//     ties, which go away from zero; a NaN stays a NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "trainer/cuda/kernels/split_master.h"

namespace bm::train::cuda {
namespace {

bool IsNan(uint32_t b) { return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu) != 0; }

// Round to nearest even, on the bits (finite values).
uint16_t NearestEven(uint32_t b) {
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

void Check(uint32_t b) {
  const uint16_t hi = MasterHigh(b), lo = MasterLow(b);
  const uint32_t back = JoinMaster(hi, lo);
  if (IsNan(b)) {
    ASSERT_TRUE(IsNan(back)) << std::hex << b;
    ASSERT_TRUE(IsNan(static_cast<uint32_t>(hi) << 16)) << std::hex << b;
    return;
  }
  ASSERT_EQ(back, b) << std::hex << "bits " << b << " hi " << hi << " lo " << lo;
  if ((b & 0x7f800000u) == 0x7f800000u) {  // an infinity stays one
    ASSERT_EQ(hi, b >> 16) << std::hex << b;
    return;
  }
  const uint32_t low = b & 0xffffu;
  if (low == 0x8000u)  // a tie: away from zero
    ASSERT_EQ(hi, (b >> 16) + 1) << std::hex << b;
  else
    ASSERT_EQ(hi, NearestEven(b)) << std::hex << b;
}

TEST(SplitMaster, EveryHighHalfWithTheLowHalvesAroundTheRoundingPointsComesBackExactly) {
  for (uint32_t h = 0; h < 0x10000u; ++h)
    for (uint32_t l : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xfffeu, 0xffffu})
      ASSERT_NO_FATAL_FAILURE(Check((h << 16) | l));
}

TEST(SplitMaster, RandomPatternsComeBackExactly) {
  std::mt19937 rng(17);
  for (int i = 0; i < 1000000; ++i) ASSERT_NO_FATAL_FAILURE(Check(rng()));
}

TEST(SplitMaster, HostLoopsRoundTripWeights) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> w(4099), back(w.size());
  for (float& x : w) x = d(rng);
  w[0] = 0.0f, w[1] = -0.0f, w[2] = 1e-40f, w[3] = -3.4e38f;
  std::vector<uint16_t> hi(w.size()), lo(w.size());
  SplitMastersCpu(w.data(), w.size(), hi.data(), lo.data());
  JoinMastersCpu(hi.data(), lo.data(), w.size(), back.data());
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_EQ(FloatBits(back[i]), FloatBits(w[i])) << "element " << i;
}

}  // namespace
}  // namespace bm::train::cuda
