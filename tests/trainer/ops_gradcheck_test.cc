// Finite-difference checks (double) of every CPU op's backward.
#include <gtest/gtest.h>

#include "tests/trainer/gradcheck.h"
#include "trainer/cpu/ops/attention.h"
#include "trainer/cpu/ops/embedding.h"
#include "trainer/cpu/ops/gelu.h"
#include "trainer/cpu/ops/layernorm.h"
#include "trainer/cpu/ops/matmul.h"
#include "trainer/cpu/ops/residual.h"
#include "trainer/cpu/ops/rmsnorm.h"
#include "trainer/cpu/ops/rope.h"
#include "trainer/cpu/ops/softmax_xent.h"
#include "trainer/cpu/ops/swiglu.h"

namespace bm::train::cpu {
namespace {

using testing::Dot;
using testing::ExpectGradientMatches;
using testing::RandomVector;
using Vec = std::vector<double>;

TEST(OpsGradCheck, Matmul) {
  const int64_t N = 5, C = 7, OC = 4;
  Vec x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), b = RandomVector(OC, 3);
  Vec dout = RandomVector(N * OC, 4), out(N * OC);
  auto f = [&] {
    MatmulForward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
    return Dot(out, dout);
  };
  Vec dx(N * C, 0.0), dw(OC * C, 0.0), db(OC, 0.0);
  MatmulBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), N, C, OC);
  ExpectGradientMatches(x, dx, f, "dinp");
  ExpectGradientMatches(w, dw, f, "dweight");
  ExpectGradientMatches(b, db, f, "dbias");
}

TEST(OpsGradCheck, MatmulAccumulates) {
  const int64_t N = 2, C = 3, OC = 2;
  Vec x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), dout = RandomVector(N * OC, 4);
  Vec dw1(OC * C, 0.0), dw2(OC * C, 0.0);
  MatmulBackward<double>(nullptr, dw1.data(), nullptr, dout.data(), x.data(), w.data(), N, C, OC);
  dw2 = dw1;
  MatmulBackward<double>(nullptr, dw2.data(), nullptr, dout.data(), x.data(), w.data(), N, C, OC);
  for (size_t i = 0; i < dw1.size(); ++i) EXPECT_NEAR(dw2[i], 2 * dw1[i], 1e-12);
}

TEST(OpsGradCheck, Embedding) {
  const int64_t B = 2, T = 3, C = 4, V = 5;
  std::vector<int32_t> inp = {0, 3, 3, 1, 4, 0};  // repeated ids accumulate
  Vec wte = RandomVector(V * C, 1), wpe = RandomVector(T * C, 2);
  Vec dout = RandomVector(B * T * C, 3), out(B * T * C);
  auto f = [&] {
    EmbeddingForward(out.data(), inp.data(), wte.data(), wpe.data(), B, T, C);
    return Dot(out, dout);
  };
  Vec dwte(V * C, 0.0), dwpe(T * C, 0.0);
  EmbeddingBackward(dwte.data(), dwpe.data(), dout.data(), inp.data(), B, T, C);
  ExpectGradientMatches(wte, dwte, f, "dwte");
  ExpectGradientMatches(wpe, dwpe, f, "dwpe");
}

TEST(OpsGradCheck, LayerNorm) {
  const int64_t N = 4, C = 8;
  Vec x = RandomVector(N * C, 1), w = RandomVector(C, 2), b = RandomVector(C, 3);
  Vec dout = RandomVector(N * C, 4), out(N * C), mean(N), rstd(N);
  auto f = [&] {
    LayerNormForward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C,
                     1e-5);
    return Dot(out, dout);
  };
  f();
  Vec dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  LayerNormBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), mean.data(),
                    rstd.data(), N, C);
  ExpectGradientMatches(x, dx, f, "dinp");
  ExpectGradientMatches(w, dw, f, "dweight");
  ExpectGradientMatches(b, db, f, "dbias");
}

TEST(OpsGradCheck, RmsNorm) {
  const int64_t N = 4, C = 8;
  Vec x = RandomVector(N * C, 1), w = RandomVector(C, 2);
  Vec dout = RandomVector(N * C, 4), out(N * C), rstd(N);
  auto f = [&] {
    RmsNormForward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
    return Dot(out, dout);
  };
  f();
  Vec dx(N * C, 0.0), dw(C, 0.0);
  RmsNormBackward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
  ExpectGradientMatches(x, dx, f, "dinp");
  ExpectGradientMatches(w, dw, f, "dweight");
}

TEST(OpsGradCheck, Gelu) {
  const int64_t N = 50;
  Vec x = RandomVector(N, 1, 2.0), dout = RandomVector(N, 2), out(N);
  auto f = [&] {
    GeluForward(out.data(), x.data(), N);
    return Dot(out, dout);
  };
  Vec dx(N, 0.0);
  GeluBackward(dx.data(), x.data(), dout.data(), N);
  ExpectGradientMatches(x, dx, f, "dinp");
}

TEST(OpsGradCheck, SwiGlu) {
  const int64_t N = 3, F = 6;
  Vec x = RandomVector(N * 2 * F, 1, 2.0), dout = RandomVector(N * F, 2), out(N * F);
  auto f = [&] {
    SwiGluForward(out.data(), x.data(), N, F);
    return Dot(out, dout);
  };
  Vec dx(N * 2 * F, 0.0);
  SwiGluBackward(dx.data(), dout.data(), x.data(), N, F);
  ExpectGradientMatches(x, dx, f, "dinp");
}

TEST(OpsGradCheck, Residual) {
  const int64_t N = 10;
  Vec a = RandomVector(N, 1), b = RandomVector(N, 2), dout = RandomVector(N, 3), out(N);
  auto f = [&] {
    ResidualForward(out.data(), a.data(), b.data(), N);
    return Dot(out, dout);
  };
  Vec da(N, 0.0), db(N, 0.0);
  ResidualBackward(da.data(), db.data(), dout.data(), N);
  ExpectGradientMatches(a, da, f, "da");
  ExpectGradientMatches(b, db, f, "db");
}

TEST(OpsGradCheck, Rope) {
  const int64_t B = 2, T = 5, NH = 4, KVH = 2, HS = 6;
  const int64_t W = (NH + 2 * KVH) * HS;
  Vec x = RandomVector(B * T * W, 1), dout = RandomVector(B * T * W, 2), out;
  auto f = [&] {
    out = x;
    RopeForward(out.data(), B, T, NH, KVH, HS, 10000.0);
    return Dot(out, dout);
  };
  Vec dx = dout;
  RopeBackward(dx.data(), B, T, NH, KVH, HS, 10000.0);
  ExpectGradientMatches(x, dx, f, "dqkv");
  // value heads pass through untouched; position 0 is the identity
  f();
  EXPECT_EQ(out[(NH + KVH) * HS], x[(NH + KVH) * HS]);
  EXPECT_EQ(out[1], x[1]);
}

TEST(OpsGradCheck, AttentionGroupedQuery) {
  for (int64_t KVH : {1, 2, 4}) {
    const int64_t B = 2, T = 5, NH = 4, HS = 3;
    const int64_t W = (NH + 2 * KVH) * HS;
    Vec qkv = RandomVector(B * T * W, 1), dout = RandomVector(B * T * NH * HS, 2);
    Vec out(B * T * NH * HS), att(B * NH * T * T);
    auto f = [&] {
      AttentionForward(out.data(), att.data(), qkv.data(), B, T, NH, KVH, HS);
      return Dot(out, dout);
    };
    f();
    Vec dqkv(B * T * W, 0.0);
    AttentionBackward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, NH, KVH, HS);
    ExpectGradientMatches(qkv, dqkv, f, "dqkv");
  }
}

TEST(OpsGradCheck, AttentionIsCausal) {
  const int64_t B = 1, T = 4, NH = 2, KVH = 2, HS = 3, W = (NH + 2 * KVH) * HS;
  Vec qkv = RandomVector(T * W, 1), out(T * NH * HS), att(NH * T * T), out2(T * NH * HS);
  AttentionForward(out.data(), att.data(), qkv.data(), B, T, NH, KVH, HS);
  for (int64_t i = 0; i < W; ++i) qkv[(T - 1) * W + i] += 1.0;  // change the last position only
  AttentionForward(out2.data(), att.data(), qkv.data(), B, T, NH, KVH, HS);
  for (int64_t i = 0; i < (T - 1) * NH * HS; ++i) EXPECT_EQ(out[i], out2[i]) << i;
  EXPECT_NE(out[(T - 1) * NH * HS], out2[(T - 1) * NH * HS]);
}

TEST(OpsGradCheck, CrossEntropy) {
  const int64_t N = 4, V = 7;
  Vec logits = RandomVector(N * V, 1, 3.0), dloss = RandomVector(N, 2), losses(N), probs(N * V);
  std::vector<int32_t> targets = {0, 6, 3, 3};
  auto f = [&] {
    CrossEntropyForward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    return Dot(losses, dloss);
  };
  f();
  Vec dlogits(N * V);
  CrossEntropyBackward(dlogits.data(), probs.data(), targets.data(), dloss.data(), N, V);
  ExpectGradientMatches(logits, dlogits, f, "dlogits");
  // in place (probs aliasing logits) gives the same losses
  Vec z = logits, inplace(N);
  CrossEntropyForward(inplace.data(), z.data(), z.data(), targets.data(), N, V);
  f();
  for (int64_t n = 0; n < N; ++n) EXPECT_NEAR(inplace[n], losses[n], 1e-12);
  std::vector<int32_t> am(N);
  ArgmaxRows(am.data(), logits.data(), N, V);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V; ++v) EXPECT_LE(logits[n * V + v], logits[n * V + am[n]]);
}

TEST(OpsGradCheck, FloatMatchesDouble) {
  // The float instantiation is the backend; it must agree with the double one.
  const int64_t N = 6, C = 16;
  Vec x = RandomVector(N * C, 1), w = RandomVector(C, 2), out(N * C), rstd(N);
  std::vector<float> xf(x.begin(), x.end()), wf(w.begin(), w.end()), outf(N * C), rstdf(N);
  RmsNormForward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
  RmsNormForward(outf.data(), rstdf.data(), xf.data(), wf.data(), N, C, 1e-5);
  for (int64_t i = 0; i < N * C; ++i) EXPECT_NEAR(outf[i], out[i], 1e-5 * (1 + std::abs(out[i])));
}

}  // namespace
}  // namespace bm::train::cpu
