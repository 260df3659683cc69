// The CPU ops the vision tower and the projector add: erf GELU and quick-GELU,
// non-causal attention, patch im2col. Values from outside the code under test
// (the standard normal table, a hand-computed softmax, a direct convolution
// loop) and finite differences (double) of every backward.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/trainer/gradcheck.h"
#include "trainer/cpu/ops/attention.h"
#include "trainer/cpu/ops/gelu.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/cpu/ops/patch.h"

namespace bm::train::cpu {
namespace {

using testing::Dot;
using testing::ExpectGradientMatches;
using testing::RandomVector;
using Vec = std::vector<double>;

TEST(VisionOpsTest, GeluErfKnownValues) {
  // x Φ(x) with Φ from the standard normal table: Φ(1) = 0.8413447461, Φ(-1) = 0.1586552539,
  // Φ(-3) = 0.0013498980, Φ(2.5) = 0.9937903347.
  Vec x = {1.0, -1.0, -3.0, 2.5, 0.0}, out(5);
  GeluErfForward(out.data(), x.data(), 5);
  EXPECT_NEAR(out[0], 0.8413447461, 1e-10);
  EXPECT_NEAR(out[1], -0.1586552539, 1e-10);
  EXPECT_NEAR(out[2], -3 * 0.0013498980, 1e-9);
  EXPECT_NEAR(out[3], 2.5 * 0.9937903347, 1e-9);
  EXPECT_EQ(out[4], 0.0);
  // the derivative at 0 is Φ(0) = 1/2, at 1 Φ(1) + φ(1) = 0.8413447461 + 0.2419707245
  Vec d(5, 0.0), one(5, 1.0);
  GeluErfBackward(d.data(), x.data(), one.data(), 5);
  EXPECT_NEAR(d[4], 0.5, 1e-15);
  EXPECT_NEAR(d[0], 0.8413447461 + 0.2419707245, 1e-9);
  // float agrees with double to float precision
  std::vector<float> xf(x.begin(), x.end()), of(5);
  GeluErfForward(of.data(), xf.data(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(of[i], out[i], 1e-6) << i;
}

TEST(VisionOpsTest, QuickGeluKnownValues) {
  // x / (1 + e^(-1.702 x)): e^-1.702 = 0.1823185221, so quick_gelu(1) = 1 / 1.1823185221
  Vec x = {1.0, -1.0, 0.0, 2.0}, out(4);
  QuickGeluForward(out.data(), x.data(), 4);
  EXPECT_NEAR(out[0], 1.0 / 1.1823185221, 1e-9);
  EXPECT_NEAR(out[1], -1.0 / (1.0 + 1.0 / 0.1823185221), 1e-9);
  EXPECT_EQ(out[2], 0.0);
  // σ(3.404) = 0.96782...: 2 σ(3.404)
  EXPECT_NEAR(out[3], 2.0 / (1.0 + std::exp(-3.404)), 1e-12);
  // derivative at 0: σ(0) = 1/2
  Vec d(4, 0.0), one(4, 1.0);
  QuickGeluBackward(d.data(), x.data(), one.data(), 4);
  EXPECT_NEAR(d[2], 0.5, 1e-15);
  // far in the tails: 0 and x, without NaN from exp overflow
  std::vector<float> tails = {-200.0f, 200.0f}, ot(2), dt(2, 0.0f), ones(2, 1.0f);
  QuickGeluForward(ot.data(), tails.data(), 2);
  QuickGeluBackward(dt.data(), tails.data(), ones.data(), 2);
  EXPECT_EQ(ot[0], 0.0f);
  EXPECT_EQ(ot[1], 200.0f);
  EXPECT_EQ(dt[0], 0.0f);
  EXPECT_EQ(dt[1], 1.0f);
}

TEST(VisionOpsTest, GeluVariantsGradCheck) {
  const int64_t N = 60;
  Vec x = RandomVector(N, 1, 2.5), dout = RandomVector(N, 2), out(N);
  auto erf = [&] {
    GeluErfForward(out.data(), x.data(), N);
    return Dot(out, dout);
  };
  Vec dx(N, 0.0);
  GeluErfBackward(dx.data(), x.data(), dout.data(), N);
  ExpectGradientMatches(x, dx, erf, "gelu erf dinp");
  auto quick = [&] {
    QuickGeluForward(out.data(), x.data(), N);
    return Dot(out, dout);
  };
  Vec dq(N, 0.0);
  QuickGeluBackward(dq.data(), x.data(), dout.data(), N);
  ExpectGradientMatches(x, dq, quick, "quick gelu dinp");
  // backward accumulates
  QuickGeluBackward(dq.data(), x.data(), dout.data(), N);
  Vec once(N, 0.0);
  QuickGeluBackward(once.data(), x.data(), dout.data(), N);
  for (int64_t i = 0; i < N; ++i) EXPECT_NEAR(dq[i], 2 * once[i], 1e-12);
}

// One head of size 1 over two positions, by hand: k = (0, ln 3), v = (4, 8).
//   position 0, q = 1: scores (0, ln 3), softmax (1/4, 3/4), out = 1 + 6 = 7
//   position 1, q = 0: scores (0, 0), softmax (1/2, 1/2), out = 6
// Causal, position 0 sees only itself: out = 4.
TEST(VisionOpsTest, NonCausalAttentionByHand) {
  const double ln3 = std::log(3.0);
  Vec qkv = {1.0, 0.0, 4.0,  // position 0: q, k, v
             0.0, ln3, 8.0};
  Vec out(2), att(4);
  AttentionForward(out.data(), att.data(), qkv.data(), 1, 2, 1, 1, 1, /*causal=*/false);
  EXPECT_NEAR(out[0], 7.0, 1e-12);
  EXPECT_NEAR(out[1], 6.0, 1e-12);
  EXPECT_NEAR(att[0], 0.25, 1e-12);
  EXPECT_NEAR(att[1], 0.75, 1e-12);
  EXPECT_NEAR(att[2], 0.5, 1e-12);
  AttentionForward(out.data(), att.data(), qkv.data(), 1, 2, 1, 1, 1, /*causal=*/true);
  EXPECT_NEAR(out[0], 4.0, 1e-12);
  EXPECT_EQ(att[1], 0.0);
  EXPECT_NEAR(out[1], 6.0, 1e-12);
}

TEST(VisionOpsTest, NonCausalAttentionGradCheck) {
  const int64_t B = 2, T = 5, NH = 2, KVH = 2, HS = 3, W = (NH + 2 * KVH) * HS;
  Vec qkv = RandomVector(B * T * W, 1), dout = RandomVector(B * T * NH * HS, 2);
  Vec out(B * T * NH * HS), att(B * NH * T * T);
  auto f = [&] {
    AttentionForward(out.data(), att.data(), qkv.data(), B, T, NH, KVH, HS, false);
    return Dot(out, dout);
  };
  f();
  Vec dqkv(B * T * W, 0.0);
  AttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, NH, KVH, HS, false);
  ExpectGradientMatches(qkv, dqkv, f, "dqkv");
  // every position sees the last one: changing it changes every output
  Vec before = out;
  for (int64_t i = 0; i < W; ++i) qkv[(T - 1) * W + i] += 1.0;
  f();
  for (int64_t t = 0; t < T; ++t) EXPECT_NE(before[t * NH * HS], out[t * NH * HS]) << t;
}

// A P×P stride-P convolution without bias, computed directly, equals
// PatchForward then a matmul with the weight viewed as [OC, CH*P*P].
TEST(VisionOpsTest, PatchMatmulIsTheConvolution) {
  const int64_t B = 2, CH = 3, S = 6, P = 3, G = S / P, OC = 4, D = CH * P * P;
  Vec pixels = RandomVector(B * CH * S * S, 1), w = RandomVector(OC * D, 2);
  Vec patches(B * G * G * D), out(B * G * G * OC);
  PatchForward(patches.data(), pixels.data(), B, CH, S, P);
  MatmulForward(out.data(), patches.data(), w.data(), static_cast<const double*>(nullptr),
                B * G * G, D, OC);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < OC; ++o)
      for (int64_t gy = 0; gy < G; ++gy)
        for (int64_t gx = 0; gx < G; ++gx) {
          double conv = 0;  // Conv2d: out[b, o, gy, gx]
          for (int64_t c = 0; c < CH; ++c)
            for (int64_t y = 0; y < P; ++y)
              for (int64_t x = 0; x < P; ++x)
                conv += w[((o * CH + c) * P + y) * P + x] *
                        pixels[((b * CH + c) * S + gy * P + y) * S + gx * P + x];
          // the conv output flattened over the grid, row-major: patch gy*G + gx
          EXPECT_NEAR(out[((b * G + gy) * G + gx) * OC + o], conv, 1e-12);
        }
  // pixel (b=1, c=2, y=4, x=2) is in patch (gy=1, gx=0), at (2*3 + 1)*3 + 2
  EXPECT_EQ(patches[((1 * G + 1) * G + 0) * D + (2 * P + 1) * P + 2],
            pixels[((1 * CH + 2) * S + 4) * S + 2]);
}

TEST(VisionOpsTest, PatchGradCheck) {
  const int64_t B = 2, CH = 2, S = 4, P = 2, D = CH * P * P, NP = B * (S / P) * (S / P);
  Vec pixels = RandomVector(B * CH * S * S, 1), dout = RandomVector(NP * D, 2), patches(NP * D);
  auto f = [&] {
    PatchForward(patches.data(), pixels.data(), B, CH, S, P);
    return Dot(patches, dout);
  };
  Vec dpixels(pixels.size(), 1.0);  // accumulates onto what is there
  PatchBackward(dpixels.data(), dout.data(), B, CH, S, P);
  for (double& v : dpixels) v -= 1.0;
  ExpectGradientMatches(pixels, dpixels, f, "dpixels");
}

}  // namespace
}  // namespace bm::train::cpu
