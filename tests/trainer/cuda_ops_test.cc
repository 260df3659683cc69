// Per-op parity of the CUDA kernels with their CPU twins: fresh random inputs, outputs
// poisoned (NaN) before each run, relative L2 error below 2e-5 (fp32) or 1e-2 (bf16, fp16); a
// NaN anywhere fails. Skips (with the reason) on machines without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <tuple>
#include <type_traits>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/cuda/kernels/bit_checksum.cuh"
#include "trainer/cuda/kernels/classifier.cuh"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/kernels/rmsnorm.cuh"
#include "trainer/cuda/kernels/rope.cuh"
#include "trainer/cuda/kernels/split_master.h"
#include "trainer/cuda/kernels/vision_embed.cuh"
#include "trainer/cuda/matmul.h"

namespace bm::train::cuda {
namespace {

using testing::DeviceBuffer;
using testing::kTol;
using testing::RandomVector;
using testing::RelativeError;
using testing::Rounded;

template <typename T>
class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override { BM_SKIP_WITHOUT_GPU(); }
  uint64_t Seed() { return seed_++ * 7919 + 17; }
  uint64_t seed_ = static_cast<uint64_t>(::testing::UnitTest::GetInstance()->random_seed()) + 1;
};
// A device copy of `h` (cudaFree it).
int* UploadInts(const std::vector<int>& h) {
  int* d = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), std::max<size_t>(h.size(), 1) * 4),
            cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

using Types = ::testing::Types<float, __nv_bfloat16, __half>;
TYPED_TEST_SUITE(CudaOps, Types);

#define EXPECT_CLOSE(got, want, tol)                                        \
  do {                                                                      \
    double err_ = RelativeError(got, want);                                 \
    EXPECT_LT(err_, tol) << #got << " vs " << #want << " rel err " << err_; \
  } while (0)

TYPED_TEST(CudaOps, Embedding) {
  using T = TypeParam;
  int b = 3, t = 17, c = 96, v = 50, n = b * t;
  std::vector<int> tokens(n);
  std::mt19937 rng(this->Seed());
  for (int& x : tokens) x = rng() % 7;  // repeats: several rows per bucket
  auto wte = Rounded<T>(RandomVector(v * c, 1.0f, this->Seed()));
  auto wpe = Rounded<T>(RandomVector(t * c, 1.0f, this->Seed()));
  auto dout = Rounded<T>(RandomVector(n * c, 1.0f, this->Seed()));
  int* dtok = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dtok), n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dtok, tokens.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  DeviceBuffer<T> gwte(wte), gwpe(wpe), gout(n * c), gdout(dout);
  ASSERT_TRUE(EmbeddingForward<T>(gout.get(), dtok, gwte.get(), gwpe.get(), n, t, c, 0, v, 0).ok());
  std::vector<float> want(n * c);
  EmbeddingForwardCpu(want.data(), tokens.data(), wte.data(), wpe.data(), n, t, c, 0, v);
  EXPECT_CLOSE(gout.Download(), want, kTol<T>);
  // A vocabulary-parallel share (ids 4..9): its own rows, zeros for the other tokens.
  ASSERT_TRUE(
      EmbeddingForward<T>(gout.get(), dtok, gwte.get() + 4 * c, nullptr, n, t, c, 4, 6, 0).ok());
  EmbeddingForwardCpu(want.data(), tokens.data(), wte.data() + 4 * c, nullptr, n, t, c, 4, 6);
  EXPECT_CLOSE(gout.Download(), want, kTol<T>);

  EmbeddingBuckets bk = BuildEmbeddingBuckets(tokens.data(), n, 0, v);
  int *bt = UploadInts(bk.tokens), *bo = UploadInts(bk.offsets), *bp = UploadInts(bk.positions);
  auto g0 = RandomVector(v * c, 1.0f, this->Seed()), p0 = RandomVector(t * c, 1.0f, this->Seed());
  DeviceBuffer<float> dwte(g0), dwpe(p0);
  ASSERT_TRUE(EmbeddingBackward<T>(dwte.get(), dwpe.get(), gdout.get(), bt, bo, bp,
                                   int(bk.tokens.size()), n, t, c, 0)
                  .ok());
  EmbeddingBackwardCpu(g0.data(), p0.data(), dout.data(), tokens.data(), n, t, c);
  EXPECT_CLOSE(dwte.Download(), g0, 1e-5);
  EXPECT_CLOSE(dwpe.Download(), p0, 1e-5);
  cudaFree(dtok), cudaFree(bt), cudaFree(bo), cudaFree(bp);
}

// The token rows' gradients as rows of their own (CudaDataParallel::FirstUnitAsRows): each row
// is the dense backward's row over a zeroed table, cast to bf16, to the bit, with its token; the
// rows of two "ranks" (their tokens overlapping, the second's rows padded with a -1 token) added
// into three slices of a zeroed bf16 table (cutting rows, at the table's start and end) give the
// host's sums: per element 0, + the first rank's value, + the second's, each sum rounded to bf16.
TYPED_TEST(CudaOps, EmbeddingRowsAreTheDenseRowsAndAddUp) {
  using T = TypeParam;
  const int b = 3, t = 17, c = 96, v = 50, n = b * t;
  std::mt19937 rng(this->Seed());
  std::vector<int> tokens[2] = {std::vector<int>(n), std::vector<int>(n)};
  for (int& x : tokens[0]) x = rng() % 7;       // tokens 0..6, repeated
  for (int& x : tokens[1]) x = 4 + rng() % 40;  // 4..43: overlaps the first's 4..6
  const int cap = n + 3;                        // room past the last bucket: padding rows
  std::vector<int> row_tokens[2];
  std::vector<float> row_values[2];
  DeviceBuffer<__nv_bfloat16> rows0(cap * c), rows1(cap * c);
  int* row_tok[2] = {nullptr, nullptr};
  for (int k = 0; k < 2; ++k) {
    SCOPED_TRACE(k);
    const auto dout = Rounded<T>(RandomVector(n * c, 1.0f, this->Seed() + k));
    DeviceBuffer<T> gdout(dout);
    EmbeddingBuckets bk = BuildEmbeddingBuckets(tokens[k].data(), n, 0, v);
    int *bt = UploadInts(bk.tokens), *bo = UploadInts(bk.offsets), *bp = UploadInts(bk.positions);
    const int buckets = static_cast<int>(bk.tokens.size());
    DeviceBuffer<float> dense(std::vector<float>(v * c, 0.0f));
    ASSERT_TRUE(
        EmbeddingBackward<T>(dense.get(), nullptr, gdout.get(), bt, bo, bp, buckets, n, t, c, 0)
            .ok());
    DeviceBuffer<__nv_bfloat16> cast(v * c);
    ASSERT_TRUE(CastF32<__nv_bfloat16>(cast.get(), dense.get(), v * c, 0).ok());
    const std::vector<float> want = cast.Download();
    DeviceBuffer<__nv_bfloat16>& rows = k == 0 ? rows0 : rows1;
    row_tok[k] = UploadInts(std::vector<int>(cap, -1));
    ASSERT_TRUE(
        EmbeddingBackwardRows<T>(rows.get(), row_tok[k], gdout.get(), bt, bo, bp, buckets, c, 0)
            .ok());
    row_values[k] = rows.Download();
    row_tokens[k].resize(cap);
    ASSERT_EQ(cudaMemcpy(row_tokens[k].data(), row_tok[k], cap * 4, cudaMemcpyDeviceToHost),
              cudaSuccess);
    std::vector<float> twin(static_cast<size_t>(buckets) * c);
    EmbeddingBackwardRowsCpu(twin.data(), dout.data(), bk, c);
    EXPECT_EQ(0, std::memcmp(row_values[k].data(), twin.data(), twin.size() * 4)) << "the twin";
    for (int i = 0; i < cap; ++i) {
      if (i >= buckets) {
        EXPECT_EQ(row_tokens[k][i], -1) << i;
        continue;
      }
      ASSERT_EQ(row_tokens[k][i], bk.tokens[i]);
      EXPECT_EQ(0, std::memcmp(&row_values[k][i * c], &want[bk.tokens[i] * c], c * 4))
          << "row " << i;
    }
    cudaFree(bt), cudaFree(bo), cudaFree(bp);
  }
  std::vector<float> sum(v * c, 0.0f);  // the twin's (EmbeddingRowsAddCpu: counted by hand below)
  for (int k = 0; k < 2; ++k)
    EmbeddingRowsAddCpu(sum.data(), 0, sum.size(), row_tokens[k].data(), row_values[k].data(), cap,
                        c);
  for (auto [first, count] :
       {std::pair{0, 5 * c + 17}, {5 * c + 17, 30 * c}, {35 * c + 17, 15 * c - 17}}) {
    SCOPED_TRACE(::testing::Message() << "slice from " << first);
    DeviceBuffer<__nv_bfloat16> out(std::vector<float>(count, 0.0f));
    ASSERT_TRUE(EmbeddingRowsAdd(out.get(), first, count, row_tok[0], rows0.get(), cap, c, 0).ok());
    ASSERT_TRUE(EmbeddingRowsAdd(out.get(), first, count, row_tok[1], rows1.get(), cap, c, 0).ok());
    const std::vector<float> got = out.Download();
    EXPECT_EQ(0, std::memcmp(got.data(), sum.data() + first, count * 4));
  }
  cudaFree(row_tok[0]), cudaFree(row_tok[1]);
}

// The rows' CPU twins (no GPU needed), counted by hand with 2 channels. EmbeddingBackwardRowsCpu:
// tokens 1, 0, 1 at rows r0 = (1, 0.5), r1 = (3, -1), r2 = (2^-9, 0.25): token 0's row is r1;
// token 1's is r0 + r2 = (1 + 2^-9, 0.75), and 1 + 2^-9 rounds to 1 in bf16 (half its step at 1 is
// 2^-8). EmbeddingRowsAddCpu into elements [1, 6) of a 3-token table: rank A's token 0 (0.5,
// -0.25) and token 2 (1, 1), then rank B's token 2 (2^-9, 3 · 2^-9), a padding row (-1) and token
// 1 (4, 8): element 0 is outside, 1 = -0.25, 2-3 = 4, 8, 4 = 1 + 2^-9 -> 1, 5 = 1 + 3 · 2^-9 -> 1
// + 2^-7 (the nearer bf16).
TEST(EmbeddingRowsCpu, SumsRoundedAsBf16CountedByHand) {
  const float tiny = std::ldexp(1.0f, -9);
  const std::vector<int> tokens = {1, 0, 1};
  const std::vector<float> dout = {1.0f, 0.5f, 3.0f, -1.0f, tiny, 0.25f};
  const EmbeddingBuckets bk = BuildEmbeddingBuckets(tokens.data(), 3, 0, 3);
  ASSERT_EQ(bk.tokens, (std::vector<int>{0, 1}));
  std::vector<float> rows(4);
  EmbeddingBackwardRowsCpu(rows.data(), dout.data(), bk, 2);
  EXPECT_EQ(rows, (std::vector<float>{3.0f, -1.0f, 1.0f, 0.75f}));
  std::vector<float> out(5, 0.0f);
  const std::vector<int> a_tokens = {0, 2}, b_tokens = {2, -1, 1};
  const std::vector<float> a_rows = {0.5f, -0.25f, 1.0f, 1.0f};
  const std::vector<float> b_rows = {tiny, 3 * tiny, 99.0f, 99.0f, 4.0f, 8.0f};
  EmbeddingRowsAddCpu(out.data(), 1, 5, a_tokens.data(), a_rows.data(), 2, 2);
  EmbeddingRowsAddCpu(out.data(), 1, 5, b_tokens.data(), b_rows.data(), 3, 2);
  EXPECT_EQ(out, (std::vector<float>{-0.25f, 4.0f, 8.0f, 1.0f, 1.0f + std::ldexp(1.0f, -7)}));
}

// Spliced rows (LLaVA's image features): the lookup's rows at 7 positions (unordered, both
// sequences, the first and last row) replaced by given rows (+ the learned position), the
// gradient's rows gathered out, and the token embedding's backward leaving those positions out
// (token 9 appears only there: its row must not move), against the CPU twins; with learned
// positions and without (then the rows' bits exactly), and a sequence-parallel rank's share.
TYPED_TEST(CudaOps, EmbeddingSplicedRows) {
  using T = TypeParam;
  const int b = 3, t = 17, c = 96, v = 50, n = b * t;
  const std::vector<int> positions = {20, 5, 6, 7, 0, 50, 33};
  const int count = static_cast<int>(positions.size());
  std::vector<int> tokens(n);
  std::mt19937 rng(this->Seed());
  for (int& x : tokens) x = rng() % 7;
  tokens[5] = tokens[33] = 9;
  std::vector<unsigned char> skip(n, 0);
  for (int p : positions) skip[p] = 1;
  auto wte = Rounded<T>(RandomVector(v * c, 1.0f, this->Seed()));
  auto wpe = Rounded<T>(RandomVector(t * c, 1.0f, this->Seed()));
  auto rows = Rounded<T>(RandomVector(count * c, 1.0f, this->Seed()));
  auto dout = Rounded<T>(RandomVector(n * c, 1.0f, this->Seed()));
  int *dtok = UploadInts(tokens), *dpos = UploadInts(positions);
  DeviceBuffer<T> gwte(wte), gwpe(wpe), grows(rows), gout(n * c), gdout(dout), gdrows(count * c);
  for (bool positional : {true, false}) {
    const T* pe = positional ? gwpe.get() : nullptr;
    const float* pe_cpu = positional ? wpe.data() : nullptr;
    ASSERT_TRUE(EmbeddingForward<T>(gout.get(), dtok, gwte.get(), pe, n, t, c, 0, v, 0).ok());
    ASSERT_TRUE(
        EmbeddingSpliceForward<T>(gout.get(), dpos, grows.get(), pe, count, 0, n, t, c, 0).ok());
    std::vector<float> want(n * c);
    EmbeddingForwardCpu(want.data(), tokens.data(), wte.data(), pe_cpu, n, t, c, 0, v);
    EmbeddingSpliceForwardCpu(want.data(), positions.data(), rows.data(), pe_cpu, count, 0, n, t,
                              c);
    const std::vector<float> got = gout.Download();
    EXPECT_CLOSE(got, want, kTol<T>);
    // By hand: position 20 (sequence 1, t = 3) holds rows[0] (+ wpe[3]); 21 the lookup.
    for (int k = 0; k < c; ++k) {
      const float pos3 = positional ? wpe[3 * c + k] : 0.0f;
      if (!positional) {
        ASSERT_EQ(got[20 * c + k], rows[k]) << k;  // the row's bits
      } else {
        ASSERT_NEAR(got[20 * c + k], rows[k] + pos3, 2 * kTol<T> * (1 + std::abs(rows[k] + pos3)));
      }
      ASSERT_NEAR(got[21 * c + k], wte[tokens[21] * c + k] + (positional ? wpe[4 * c + k] : 0.0f),
                  2 * kTol<T> * 4);
    }
  }
  // A sequence-parallel rank's rows [17, 34): positions 20 and 33 land there, the others not.
  auto base = Rounded<T>(RandomVector(t * c, 1.0f, this->Seed()));
  DeviceBuffer<T> gshare(base);
  ASSERT_TRUE(
      EmbeddingSpliceForward<T>(gshare.get(), dpos, grows.get(), gwpe.get(), count, 17, t, t, c, 0)
          .ok());
  std::vector<float> want_share = base;
  EmbeddingSpliceForwardCpu(want_share.data(), positions.data(), rows.data(), wpe.data(), count, 17,
                            t, t, c);
  const std::vector<float> share = gshare.Download();
  EXPECT_CLOSE(share, want_share, kTol<T>);
  EXPECT_EQ(share[0], base[0]);  // row 17: not spliced, untouched

  // Backward: the rows' gradient is the output gradient's rows, bit for bit.
  ASSERT_TRUE(EmbeddingSpliceBackward<T>(gdrows.get(), gdout.get(), dpos, count, c, 0).ok());
  std::vector<float> want_drows(count * c);
  EmbeddingSpliceBackwardCpu(want_drows.data(), dout.data(), positions.data(), count, c);
  EXPECT_EQ(gdrows.Download(), want_drows);
  for (int k = 0; k < c; ++k) ASSERT_EQ(want_drows[6 * c + k], dout[33 * c + k]);  // by hand

  EmbeddingBuckets bk = BuildEmbeddingBuckets(tokens.data(), n, 0, v, skip.data());
  int *bt = UploadInts(bk.tokens), *bo = UploadInts(bk.offsets), *bp = UploadInts(bk.positions);
  auto g0 = RandomVector(v * c, 1.0f, this->Seed()), p0 = RandomVector(t * c, 1.0f, this->Seed());
  DeviceBuffer<float> dwte(g0), dwpe(p0);
  ASSERT_TRUE(EmbeddingBackward<T>(dwte.get(), dwpe.get(), gdout.get(), bt, bo, bp,
                                   int(bk.tokens.size()), n, t, c, 0)
                  .ok());
  std::vector<float> g1 = g0, p1 = p0;
  EmbeddingBackwardCpu(g1.data(), p1.data(), dout.data(), tokens.data(), n, t, c, skip.data());
  const std::vector<float> got_dwte = dwte.Download();
  EXPECT_CLOSE(got_dwte, g1, 1e-5);
  EXPECT_CLOSE(dwpe.Download(), p1, 1e-5);
  for (int k = 0; k < c; ++k) ASSERT_EQ(got_dwte[9 * c + k], g0[9 * c + k]) << k;
  cudaFree(dtok), cudaFree(dpos), cudaFree(bt), cudaFree(bo), cudaFree(bp);
}

// The buckets without the spliced positions, by hand (no GPU needed): tokens 3 1 3 2 1 3 with
// positions 2 and 4 spliced leave token 1 at {1}, token 2 at {3}, token 3 at {0, 5}.
TEST(EmbeddingBuckets, LeaveSplicedPositionsOut) {
  const std::vector<int> tokens = {3, 1, 3, 2, 1, 3};
  const std::vector<unsigned char> skip = {0, 0, 1, 0, 1, 0};
  EmbeddingBuckets b = BuildEmbeddingBuckets(tokens.data(), 6, 0, 5, skip.data());
  EXPECT_EQ(b.tokens, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(b.offsets, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(b.positions, (std::vector<int>{1, 3, 0, 5}));
  // every position spliced: no buckets
  const std::vector<unsigned char> all(6, 1);
  b = BuildEmbeddingBuckets(tokens.data(), 6, 0, 5, all.data());
  EXPECT_TRUE(b.tokens.empty());
  EXPECT_EQ(b.offsets, (std::vector<int>{0}));
  EXPECT_TRUE(b.positions.empty());
}

// Widths from small to twice GPT-2's (200, 768, 1536), rows not a multiple of the kernels'
// blocks or of the column pass's chunks. 256, 512 and bf16's 768 take the backward that sums
// the weight and bias gradients in its row pass; 9,000 rows give each warp several. The forward
// keeps the row in registers at 256 to 2,048 and bf16's 4,096.
template <typename T>
void CheckLayerNorm(int n, int c, uint64_t seed) {
  auto x = Rounded<T>(RandomVector(n * c, 2.0f, seed));
  for (int r = 0; r < n; ++r) x[r * c] += 3.0f;  // a non-zero mean
  auto w = Rounded<T>(RandomVector(c, 1.0f, seed));
  auto b = Rounded<T>(RandomVector(c, 1.0f, seed));
  auto dy = Rounded<T>(RandomVector(n * c, 1.0f, seed));
  auto dx0 = Rounded<T>(RandomVector(n * c, 1.0f, seed));
  DeviceBuffer<T> gx(x), gw(w), gb(b), gy(n * c), gdy(dy), gdx(dx0);
  DeviceBuffer<float> mean(n), rstd(n), scratch(LayerNormScratchFloats(n, c));
  auto dw0 = RandomVector(c, 1.0f, seed), db0 = RandomVector(c, 1.0f, seed);
  DeviceBuffer<float> gdw(dw0), gdb(db0);
  ASSERT_TRUE(
      LayerNormForward<T>(gy.get(), mean.get(), rstd.get(), gx.get(), gw.get(), gb.get(), n, c, 0)
          .ok());
  std::vector<float> y(n * c), m(n), rs(n);
  LayerNormForwardCpu(y.data(), m.data(), rs.data(), x.data(), w.data(), b.data(), n, c);
  EXPECT_CLOSE(gy.Download(), y, kTol<T>);
  EXPECT_CLOSE(rstd.Download(), rs, 1e-4);
  ASSERT_TRUE(LayerNormBackward<T>(gdx.get(), gdw.get(), gdb.get(), scratch.get(), gdy.get(),
                                   gx.get(), gw.get(), mean.get(), rstd.get(), n, c, 0)
                  .ok());
  std::vector<float> dx = dx0;
  LayerNormBackwardCpu(dx.data(), dw0.data(), db0.data(), dy.data(), x.data(), w.data(), m.data(),
                       rs.data(), n, c);
  EXPECT_CLOSE(gdx.Download(), dx, kTol<T>);
  EXPECT_CLOSE(gdw.Download(), dw0, 1e-3);
  EXPECT_CLOSE(gdb.Download(), db0, 1e-5);
}

TYPED_TEST(CudaOps, LayerNorm) {
  CheckLayerNorm<TypeParam>(300, 200, this->Seed());  // more rows than one column chunk
  CheckLayerNorm<TypeParam>(333, 768, this->Seed());
  CheckLayerNorm<TypeParam>(70, 1536, this->Seed());
  CheckLayerNorm<TypeParam>(9000, 256, this->Seed());
  CheckLayerNorm<TypeParam>(2001, 512, this->Seed());
  CheckLayerNorm<TypeParam>(37, 4096, this->Seed());  // GPT-3 6.7B's width: 16 packs a lane
  // The backward's row kernel over 2, 4, 8 and 10 warps a row (bf16 1,024: 2 x 2 packs a lane;
  // 2,048: 4 x 2; 3,072: 4 x 3; 4,096: 8 x 2; 5,120, GPT-3 13B's: 10 x 2; fp32 1,024 and 2,048
  // at 4 x 2 and 8 x 2), many rows a group.
  CheckLayerNorm<TypeParam>(3001, 1024, this->Seed());
  CheckLayerNorm<TypeParam>(1500, 2048, this->Seed());
  CheckLayerNorm<TypeParam>(257, 3072, this->Seed());
  CheckLayerNorm<TypeParam>(1001, 4096, this->Seed());
  CheckLayerNorm<TypeParam>(129, 5120, this->Seed());
}

// The backward paths: the row kernel a warp pair a row at 64 x a pack x 1-4 channels (bf16 512
// to 2,048, fp32 512 and 1,024), 4 warps at bf16 3,072 and 4,096 and fp32 1,536 and 2,048, 10
// at bf16 5,120; a block a row summing the weight gradient in its row pass elsewhere (136, fp32's
// 3,072 and 4,096); a warp a row and a column pass where a block cannot hold a row (fp32 5,120);
// rows not a multiple of the kernels' blocks and, at 1,001 rows and more, several a group; and the
// model's epsilon (the aquila2-7b preset's 1e-6) on inputs small enough for it to matter. The
// forward: a block a row at 136 channels (and fp32's 4096), a warp a row with the row in registers
// at 512, 2048 and bf16's 4096.
template <typename T>
void CheckRmsNorm(int n, int c, uint64_t seed, float amplitude = 2.0f, float eps = 1e-5f) {
  auto x = Rounded<T>(RandomVector(n * c, amplitude, seed));
  auto w = Rounded<T>(RandomVector(c, 1.0f, seed + 1));
  auto dy = Rounded<T>(RandomVector(n * c, 1.0f, seed + 2));
  auto dx0 = Rounded<T>(RandomVector(n * c, 1.0f, seed + 3));
  DeviceBuffer<T> gx(x), gw(w), gy(n * c), gdy(dy), gdx(dx0);
  DeviceBuffer<float> rstd(n), scratch(RmsNormScratchFloats(n, c));
  auto dw0 = RandomVector(c, 1.0f, seed + 4);
  DeviceBuffer<float> gdw(dw0);
  ASSERT_TRUE(RmsNormForward<T>(gy.get(), rstd.get(), gx.get(), gw.get(), n, c, 0, eps).ok());
  std::vector<float> y(n * c), rs(n);
  RmsNormForwardCpu(y.data(), rs.data(), x.data(), w.data(), n, c, eps);
  EXPECT_CLOSE(gy.Download(), y, kTol<T>);
  if (eps != 1e-5f) {  // the epsilon given is the one used
    std::vector<float> y5(n * c), rs5(n);
    RmsNormForwardCpu(y5.data(), rs5.data(), x.data(), w.data(), n, c, 1e-5f);
    EXPECT_GT(std::abs(rs5[0] - rs[0]), 0.05f * rs[0]);
    EXPECT_CLOSE(rstd.Download(), rs, 1e-3);
  }
  ASSERT_TRUE(RmsNormBackward<T>(gdx.get(), gdw.get(), scratch.get(), gdy.get(), gx.get(), gw.get(),
                                 rstd.get(), n, c, 0)
                  .ok());
  std::vector<float> dx = dx0;
  RmsNormBackwardCpu(dx.data(), dw0.data(), dy.data(), x.data(), w.data(), rs.data(), n, c);
  EXPECT_CLOSE(gdx.Download(), dx, kTol<T>);
  EXPECT_CLOSE(gdw.Download(), dw0, 1e-3);
}

TYPED_TEST(CudaOps, RmsNorm) {
  CheckRmsNorm<TypeParam>(300, 136, this->Seed());
  CheckRmsNorm<TypeParam>(70, 2048, this->Seed());
  CheckRmsNorm<TypeParam>(70, 2048, this->Seed(), 2e-3f, 1e-6f);
  CheckRmsNorm<TypeParam>(37, 4096, this->Seed());
  CheckRmsNorm<TypeParam>(5000, 512, this->Seed());
  // Many rows a warp pair (bf16 2,048: four packs a lane; 1,024: two, fp32 four; 1,536: three,
  // fp32 six, which takes the block-a-row kernel).
  CheckRmsNorm<TypeParam>(3001, 2048, this->Seed());
  CheckRmsNorm<TypeParam>(9001, 1024, this->Seed());
  CheckRmsNorm<TypeParam>(257, 1536, this->Seed());
  // 4 warps a row (bf16 4,096, LLaMA-2-7B's: four packs a lane; 3,072: three), 10 (5,120).
  CheckRmsNorm<TypeParam>(1001, 4096, this->Seed());
  CheckRmsNorm<TypeParam>(257, 3072, this->Seed());
  CheckRmsNorm<TypeParam>(129, 5120, this->Seed());
}

TYPED_TEST(CudaOps, Rope) {
  using T = TypeParam;
  int b = 2, t = 33, h = 4, hkv = 2, d = 32, n = b * t, cols = (h + 2 * hkv) * d;
  auto table = RopeTable(t, d, 10000.0);
  DeviceBuffer<float> gtable(table);
  for (bool inverse : {false, true}) {
    auto x = Rounded<T>(RandomVector(n * cols, 1.0f, this->Seed()));
    DeviceBuffer<T> gx(x);
    ASSERT_TRUE(Rope<T>(gx.get(), gtable.get(), b, t, h, hkv, d, inverse, 0).ok());
    RopeCpu(x.data(), table.data(), b, t, h, hkv, d, inverse);
    EXPECT_CLOSE(gx.Download(), x, kTol<T>);
  }
}

TYPED_TEST(CudaOps, GeluAndSwiglu) {
  using T = TypeParam;
  size_t n = 5000;
  int rows = 37, f = 70;
  auto x = Rounded<T>(RandomVector(n, 2.0f, this->Seed()));
  auto dy = Rounded<T>(RandomVector(n, 1.0f, this->Seed()));
  DeviceBuffer<T> gx(x), gy(n), gdy(dy), gdx(n);
  ASSERT_TRUE(GeluForward<T>(gy.get(), gx.get(), n, 0).ok());
  ASSERT_TRUE(GeluBackward<T>(gdx.get(), gdy.get(), gx.get(), n, 0).ok());
  std::vector<float> y(n), dx(n);
  GeluForwardCpu(y.data(), x.data(), n);
  GeluBackwardCpu(dx.data(), dy.data(), x.data(), n);
  EXPECT_CLOSE(gy.Download(), y, kTol<T>);
  EXPECT_CLOSE(gdx.Download(), dx, kTol<T>);

  auto in = Rounded<T>(RandomVector(rows * 2 * f, 2.0f, this->Seed()));
  auto dout = Rounded<T>(RandomVector(rows * f, 1.0f, this->Seed()));
  DeviceBuffer<T> gin(in), gout(rows * f), gout2(rows * f), gdout(dout), gdin(rows * 2 * f);
  ASSERT_TRUE(SwigluForward<T>(gout.get(), gin.get(), rows, f, 0).ok());
  std::vector<float> out(rows * f), din(rows * 2 * f);
  SwigluForwardCpu(out.data(), in.data(), rows, f);
  SwigluBackwardCpu(din.data(), dout.data(), in.data(), rows, f);
  EXPECT_CLOSE(gout.Download(), out, kTol<T>);
  // Backward alone, then with the forward output recomputed on the way (the same bits as
  // SwigluForward's).
  ASSERT_TRUE(SwigluBackward<T>(gdin.get(), nullptr, gdout.get(), gin.get(), rows, f, 0).ok());
  EXPECT_CLOSE(gdin.Download(), din, kTol<T>);
  DeviceBuffer<T> gdin2(rows * 2 * f);
  ASSERT_TRUE(SwigluBackward<T>(gdin2.get(), gout2.get(), gdout.get(), gin.get(), rows, f, 0).ok());
  EXPECT_CLOSE(gdin2.Download(), din, kTol<T>);
  EXPECT_EQ(gout2.Download(), gout.Download());
}

// Exact (erf) GELU and quick-GELU: 5,001 elements (a ragged last pack) from an aligned start
// and from one element on (every load unaligned: the scalar path).
TYPED_TEST(CudaOps, GeluErfAndQuickGelu) {
  using T = TypeParam;
  const size_t n = 5001;
  auto x = Rounded<T>(RandomVector(n + 1, 2.0f, this->Seed()));
  auto dy = Rounded<T>(RandomVector(n + 1, 1.0f, this->Seed()));
  DeviceBuffer<T> gx(x), gdy(dy);
  using Fwd = Status (*)(T*, const T*, size_t, cudaStream_t);
  using Bwd = Status (*)(T*, const T*, const T*, size_t, cudaStream_t);
  using FwdCpu = void (*)(float*, const float*, size_t);
  using BwdCpu = void (*)(float*, const float*, const float*, size_t);
  struct Op {
    const char* name;
    Fwd fwd;
    Bwd bwd;
    FwdCpu fwd_cpu;
    BwdCpu bwd_cpu;
  };
  for (const Op& op : {Op{"gelu_erf", GeluErfForward<T>, GeluErfBackward<T>, GeluErfForwardCpu,
                          GeluErfBackwardCpu},
                       Op{"quick_gelu", QuickGeluForward<T>, QuickGeluBackward<T>,
                          QuickGeluForwardCpu, QuickGeluBackwardCpu}}) {
    for (size_t off : {size_t{0}, size_t{1}}) {
      DeviceBuffer<T> gy(n), gdx(n);
      ASSERT_TRUE(op.fwd(gy.get(), gx.get() + off, n, 0).ok());
      ASSERT_TRUE(op.bwd(gdx.get(), gdy.get() + off, gx.get() + off, n, 0).ok());
      std::vector<float> y(n), dx(n);
      op.fwd_cpu(y.data(), x.data() + off, n);
      op.bwd_cpu(dx.data(), dy.data() + off, x.data() + off, n);
      EXPECT_LT(RelativeError(gy.Download(), y), kTol<T>) << op.name << " offset " << off;
      EXPECT_LT(RelativeError(gdx.Download(), dx), kTol<T>) << op.name << " offset " << off;
    }
  }
}

// The twins on values computed apart (Python's math.erf and math.exp on the formulas:
// 0.5 x (1 + erf(x / sqrt 2)) and x sigmoid(1.702 x), and their derivatives).
TEST(CudaOpsCpuTwin, GeluErfAndQuickGeluValues) {
  const float x[3] = {1.0f, -0.5f, 2.5f}, dy[3] = {1.0f, 1.0f, 1.0f};
  const double gelu[3] = {0.8413447460685429, -0.15426876936299344, 2.4844758366855597};
  const double gelu_d[3] = {1.0833154705876864, 0.13250487534383712, 1.037611085908145};
  const double quick[3] = {0.8457957659328212, -0.1496115633936199, 2.46501383495143};
  const double quick_d[3] = {1.067779606556334, 0.12077808803458576, 1.0447186660813743};
  float y[3], dx[3];
  GeluErfForwardCpu(y, x, 3);
  GeluErfBackwardCpu(dx, dy, x, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(y[i], gelu[i], 1e-6) << x[i];
    EXPECT_NEAR(dx[i], gelu_d[i], 1e-6) << x[i];
  }
  QuickGeluForwardCpu(y, x, 3);
  QuickGeluBackwardCpu(dx, dy, x, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(y[i], quick[i], 1e-6) << x[i];
    EXPECT_NEAR(dx[i], quick_d[i], 1e-6) << x[i];
  }
}

// The patch embedding's im2col: one element worked out by hand, then the device against the
// twin (two 28 px images of 14 px patches, and CLIP-L/14-336's 24 x 24 grid).
TEST(CudaOpsCpuTwin, PatchIm2ColLayout) {
  const int n = 2, s = 28, p = 14, cols = 3 * p * p;
  std::vector<float> pixels(n * 3 * s * s);
  std::iota(pixels.begin(), pixels.end(), 0.0f);
  std::vector<float> rows(n * 4 * cols);
  PatchIm2ColCpu(rows.data(), pixels.data(), n, s, p);
  // Image 1, patch (py 1, px 0) = row 1*4 + 2 = 6; channel 2, ky 3, kx 5 = column 2*196 + 3*14
  // + 5 = 439; the pixel (img 1, c 2, y 14 + 3, x 5) = ((1*3 + 2)*28 + 17)*28 + 5 = 4401.
  EXPECT_EQ(rows[6 * cols + 439], 4401.0f);
  EXPECT_EQ(rows[0], 0.0f);
  EXPECT_EQ(rows[1 * cols + 0], 14.0f);           // patch (0, 1) starts 14 pixels to the right
  EXPECT_EQ(rows[2 * cols + 1], 14.0f * 28 + 1);  // patch (1, 0), its second pixel
}

TYPED_TEST(CudaOps, VisionEmbeddings) {
  using T = TypeParam;
  for (auto [n, s, p, c] : {std::tuple{2, 28, 14, 32}, std::tuple{1, 336, 14, 40}}) {
    const int g = s / p, np = g * g, cols = 3 * p * p;
    auto pixels = RandomVector(size_t(n) * 3 * s * s, 1.0f, this->Seed());
    DeviceBuffer<float> gpix(pixels);
    DeviceBuffer<T> grows(size_t(n) * np * cols);
    ASSERT_TRUE(PatchIm2Col<T>(grows.get(), gpix.get(), n, s, p, 0).ok());
    std::vector<float> rows(size_t(n) * np * cols);
    PatchIm2ColCpu(rows.data(), pixels.data(), n, s, p);
    EXPECT_EQ(grows.Download(), Rounded<T>(rows)) << "im2col copies (rounds) only";

    auto patches = Rounded<T>(RandomVector(size_t(n) * np * c, 1.0f, this->Seed()));
    auto cls = Rounded<T>(RandomVector(c, 1.0f, this->Seed()));
    auto pos = Rounded<T>(RandomVector(size_t(np + 1) * c, 1.0f, this->Seed()));
    DeviceBuffer<T> gpatches(patches), gcls(cls), gpos(pos), gx(size_t(n) * (np + 1) * c);
    ASSERT_TRUE(
        VisionEmbedForward<T>(gx.get(), gpatches.get(), gcls.get(), gpos.get(), n, np, c, 0).ok());
    std::vector<float> x(size_t(n) * (np + 1) * c);
    VisionEmbedForwardCpu(x.data(), patches.data(), cls.data(), pos.data(), n, np, c);
    EXPECT_CLOSE(gx.Download(), x, kTol<T>);

    auto dx = Rounded<T>(RandomVector(x.size(), 1.0f, this->Seed()));
    auto dcls0 = RandomVector(c, 1.0f, this->Seed());
    auto dpos0 = RandomVector(pos.size(), 1.0f, this->Seed());
    DeviceBuffer<T> gdx(dx), gdrop(patches.size()), gins(x.size());
    std::vector<std::vector<float>> runs;
    for (int run = 0; run < 2; ++run) {  // deterministic: the same bits twice
      DeviceBuffer<float> gdcls(dcls0), gdpos(dpos0);
      ASSERT_TRUE(VisionEmbedBackward<T>(gdcls.get(), gdpos.get(), gdx.get(), n, np, c, 0).ok());
      runs.push_back(gdpos.Download());
      if (run == 0) {
        std::vector<float> dcls = dcls0, dpos = dpos0;
        VisionEmbedBackwardCpu(dcls.data(), dpos.data(), dx.data(), n, np, c);
        EXPECT_CLOSE(gdcls.Download(), dcls, 1e-5);
        EXPECT_CLOSE(gdpos.Download(), dpos, 1e-5);
      }
    }
    EXPECT_EQ(runs[0], runs[1]);
    ASSERT_TRUE(DropClassRows<T>(gdrop.get(), gdx.get(), n, np, c, 0).ok());
    std::vector<float> drop(patches.size()), ins(x.size());
    DropClassRowsCpu(drop.data(), dx.data(), n, np, c);
    EXPECT_EQ(gdrop.Download(), drop);
    EXPECT_EQ(drop[0], dx[c]) << "patch 0 of image 0 is row 1";
    ASSERT_TRUE(InsertClassRows<T>(gins.get(), gdrop.get(), n, np, c, 0).ok());
    InsertClassRowsCpu(ins.data(), drop.data(), n, np, c);
    EXPECT_EQ(gins.Download(), ins);
    EXPECT_EQ(ins[0], 0.0f);
  }
}

// Gradients reduced in 16 bits: CastF32 rounds fp32 to T as the host does (to nearest even),
// WidenF32 gives back exactly those values, or adds them to fp32 values as the host adds them,
// and AccumulateF32 adds; four at a time with a tail (n % 4 = 3) and one at a time (pointers
// not 16-byte aligned).
TYPED_TEST(CudaOps, CastToSixteenBitsAndWidenBack) {
  using T = TypeParam;
  if constexpr (std::is_same_v<T, float>) {
    GTEST_SKIP() << "fp32 has nothing to widen";
  } else {
    for (size_t n : {size_t{1000}, size_t{100003}}) {
      const std::vector<float> x = RandomVector(n, 3.0f, this->Seed());
      const std::vector<float> prev = RandomVector(n, 1.0f, this->Seed() + 1);
      DeviceBuffer<float> gx(x), gout(n), gacc(prev), gsum(prev);
      DeviceBuffer<T> g16(n);
      ASSERT_TRUE(CastF32<T>(g16.get(), gx.get(), n, 0).ok());
      const std::vector<float> rounded = Rounded<T>(x);
      EXPECT_EQ(g16.Download(), rounded) << n;
      ASSERT_TRUE(WidenF32<T>(gout.get(), g16.get(), n, /*accumulate=*/false, 0).ok());
      EXPECT_EQ(gout.Download(), rounded) << n;
      ASSERT_TRUE(WidenF32<T>(gacc.get(), g16.get(), n, /*accumulate=*/true, 0).ok());
      std::vector<float> sum(n);
      for (size_t i = 0; i < n; ++i) sum[i] = prev[i] + rounded[i];
      EXPECT_EQ(gacc.Download(), sum) << n;
      ASSERT_TRUE(AccumulateF32(gsum.get(), gout.get(), n, 0).ok());
      EXPECT_EQ(gsum.Download(), sum) << n;
      // From the second element: not aligned for four at a time, one at a time.
      DeviceBuffer<T> g16b(n);
      ASSERT_TRUE(CastF32<T>(g16b.get() + 1, gx.get() + 1, n - 1, 0).ok());
      std::vector<float> shifted = g16b.Download();
      shifted[0] = rounded[0];
      EXPECT_EQ(shifted, rounded) << n;
    }
  }
}

// WidenF32Squares writes what WidenF32 writes, bit for bit, and its kUnitSquareBlocks partial
// sums add up (SumSquarePartials) to the sum of the squares of those values, summed on the host
// in double; four at a time (a tail of n % 4 = 3) and one at a time (not 16-byte aligned), fewer
// elements than threads included.
TYPED_TEST(CudaOps, WidenF32SquaresSumsTheSquaresOfWhatItWrites) {
  using T = TypeParam;
  if constexpr (std::is_same_v<T, float>) {
    GTEST_SKIP() << "fp32 has nothing to widen";
  } else {
    for (size_t n : {size_t{7}, size_t{100003}, size_t{3000001}})
      for (size_t first : {size_t{0}, size_t{1}})
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << "n " << n << " from " << first << " accumulate " << accumulate);
          const std::vector<float> x = Rounded<T>(RandomVector(n, 3.0f, this->Seed()));
          const std::vector<float> prev = RandomVector(n, 1.0f, this->Seed() + 1);
          DeviceBuffer<float> gx(x), want(prev), got(prev), partials(kUnitSquareBlocks), sum(1);
          DeviceBuffer<T> g16(n);
          ASSERT_TRUE(CastF32<T>(g16.get(), gx.get(), n, 0).ok());
          const size_t m = n - first;
          ASSERT_TRUE(WidenF32<T>(want.get() + first, g16.get() + first, m, accumulate, 0).ok());
          ASSERT_TRUE(WidenF32Squares<T>(got.get() + first, g16.get() + first, m, accumulate,
                                         partials.get(), 0)
                          .ok());
          const std::vector<float> w = want.Download(), g = got.Download();
          ASSERT_EQ(0, std::memcmp(g.data(), w.data(), n * 4));
          double host = 0;
          for (size_t i = first; i < n; ++i) host += static_cast<double>(w[i]) * w[i];
          const std::vector<float> parts = partials.Download();
          double added = 0;
          for (float p : parts) added += p;
          EXPECT_NEAR(added, host, 1e-5 * host);
          ASSERT_TRUE(SumSquarePartials(sum.get(), partials.get(), kUnitSquareBlocks, 0).ok());
          EXPECT_NEAR(sum.Download()[0], host, 1e-5 * host);
          if (accumulate) continue;
          // No output (sums kept in 16 bits): the squares alone, the same partials to the bit.
          DeviceBuffer<float> alone(kUnitSquareBlocks);
          ASSERT_TRUE(
              WidenF32Squares<T>(nullptr, g16.get() + first, m, false, alone.get(), 0).ok());
          const std::vector<float> a = alone.Download();
          EXPECT_EQ(0, std::memcmp(a.data(), parts.data(), kUnitSquareBlocks * 4));
        }
  }
}

TYPED_TEST(CudaOps, ResidualAndBiasGrad) {
  using T = TypeParam;
  int rows = 700, cols = 45;
  auto a = Rounded<T>(RandomVector(rows * cols, 1.0f, this->Seed()));
  auto b = Rounded<T>(RandomVector(rows * cols, 1.0f, this->Seed()));
  DeviceBuffer<T> ga(a), gb(b), gout(rows * cols);
  ASSERT_TRUE(ResidualAdd<T>(gout.get(), ga.get(), gb.get(), a.size(), 0).ok());
  std::vector<float> out(a.size());
  ResidualAddCpu(out.data(), a.data(), b.data(), a.size());
  EXPECT_CLOSE(gout.Download(), out, kTol<T>);
  auto db = RandomVector(cols, 1.0f, this->Seed());
  DeviceBuffer<float> gdb(db), scratch(BiasGradScratchFloats(rows, cols));
  ASSERT_TRUE(BiasGrad<T>(gdb.get(), scratch.get(), ga.get(), rows, cols, 0).ok());
  BiasGradCpu(db.data(), a.data(), rows, cols);
  EXPECT_CLOSE(gdb.Download(), db, 1e-5);
  {  // 16-byte loads where rows are aligned: the same sums, to the bit, as one column at a time
    const int wide = 296;
    auto dy = Rounded<T>(RandomVector(rows * wide, 1.0f, this->Seed()));
    std::vector<float> shifted(dy.size() + 1, 0.0f);
    std::copy(dy.begin(), dy.end(), shifted.begin() + 1);
    DeviceBuffer<T> gdy(dy), gshifted(shifted);  // the latter's rows start 1 element off
    std::vector<float> zeros(wide, 0.0f);
    DeviceBuffer<float> vec_db(zeros), one_db(zeros), s2(BiasGradScratchFloats(rows, wide));
    ASSERT_TRUE(BiasGrad<T>(vec_db.get(), s2.get(), gdy.get(), rows, wide, 0).ok());
    ASSERT_TRUE(BiasGrad<T>(one_db.get(), s2.get(), gshifted.get() + 1, rows, wide, 0).ok());
    std::vector<float> want(wide, 0.0f);
    BiasGradCpu(want.data(), dy.data(), rows, wide);
    EXPECT_CLOSE(vec_db.Download(), want, 1e-5);
    EXPECT_EQ(vec_db.Download(), one_db.Download());
  }
  // AddRows: rows 3.. of 2 sequences of 350, 40 columns of 45-wide rows, from 45-wide rows
  // (scalar path) and 16 of 24 from 16 (vector path when aligned).
  for (auto [ld_dst, ld_src, use] : {std::tuple{45, 45, 40}, std::tuple{24, 16, 16}}) {
    auto dst = Rounded<T>(RandomVector(rows * ld_dst, 1.0f, this->Seed()));
    auto src = Rounded<T>(RandomVector(rows * ld_src, 1.0f, this->Seed()));
    DeviceBuffer<T> gdst(dst), gsrc(src);
    ASSERT_TRUE(AddRows<T>(gdst.get(), ld_dst, gsrc.get(), ld_src, 2, rows / 2, 3, use, 0).ok());
    AddRowsCpu(dst.data(), ld_dst, src.data(), ld_src, 2, rows / 2, 3, use);
    EXPECT_CLOSE(gdst.Download(), dst, kTol<T>);
  }
}

// A narrow vocabulary and one as wide as the largest presets'; GPT-2's 50,257, whose rows
// start at every 16-byte offset, one narrower than a pack and one with a row stride of its own;
// without the gradient pass the losses are the same bits.
TYPED_TEST(CudaOps, CrossEntropyWithMask) {
  using T = TypeParam;
  for (auto [v, ld] : {std::pair{1000, 1008}, std::pair{60000, 60000}, std::pair{50257, 50257},
                       std::pair{3, 3}, std::pair{1001, 1003}}) {
    int n = 40;
    auto logits = Rounded<T>(RandomVector(n * ld, 3.0f, this->Seed()));
    std::vector<int> targets(n);
    std::vector<float> weights(n);
    std::mt19937 rng(this->Seed());
    for (int i = 0; i < n; ++i) {
      targets[i] = i % 9 == 4 ? -1 : int(rng() % v);
      weights[i] = i % 5 == 0 ? 0.0f : 1.0f;
    }
    int* dt = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dt), n * 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dt, targets.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
    DeviceBuffer<T> gl(logits), gl_nograd(logits);
    DeviceBuffer<float> gw(weights), gloss(n), gloss_nograd(n), gsum(1);
    ASSERT_TRUE(
        CrossEntropy<T>(gl.get(), gloss.get(), dt, gw.get(), 0.01f, n, v, ld, true, 0).ok());
    ASSERT_TRUE(CrossEntropy<T>(gl_nograd.get(), gloss_nograd.get(), dt, gw.get(), 0.01f, n, v, ld,
                                false, 0)
                    .ok());
    ASSERT_TRUE(SumLosses(gsum.get(), gloss.get(), n, 0).ok());
    std::vector<float> losses(n), want = logits;
    CrossEntropyCpu(want.data(), losses.data(), targets.data(), weights.data(), 0.01f, n, v, ld,
                    true);
    EXPECT_CLOSE(gloss.Download(), losses, 1e-5);
    EXPECT_EQ(gloss.Download(), gloss_nograd.Download()) << "V " << v;
    auto got = gl.Download();
    for (int r = 0; r < n; ++r) {  // columns beyond V are not the kernel's: compare [0, V)
      std::copy(want.begin() + r * ld + v, want.begin() + (r + 1) * ld, got.begin() + r * ld + v);
    }
    EXPECT_CLOSE(got, want, kTol<T>);
    double total = std::accumulate(losses.begin(), losses.end(), 0.0);
    EXPECT_NEAR(gsum.Download()[0], total, 1e-4 * std::abs(total));
    cudaFree(dt);
  }
}

// The vocabulary-parallel steps against their twins, one rank's share (ids 300.. of which 250
// real of ld 256); the group's all-reduces are stood in for by a larger maximum and sums.
TYPED_TEST(CudaOps, VocabParallelCrossEntropy) {
  using T = TypeParam;
  int n = 40, real = 250, ld = 256, begin = 300;
  auto logits = Rounded<T>(RandomVector(n * ld, 3.0f, this->Seed()));
  std::vector<int> targets(n);
  std::vector<float> weights(n);
  std::mt19937 rng(this->Seed());
  for (int i = 0; i < n; ++i) {
    targets[i] = i % 9 == 4 ? -1 : int(rng() % 600);  // here or on another rank
    weights[i] = i % 5 == 0 ? 0.0f : 1.0f;
  }
  int* dt = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dt), n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dt, targets.data(), n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  DeviceBuffer<T> gl(logits);
  DeviceBuffer<float> gstats(4 * n), gw(weights), gloss(n);
  ASSERT_TRUE(VocabParallelStats<T>(gstats.get(), gl.get(), dt, n, real, ld, begin, 0).ok());
  std::vector<float> stats(4 * n);
  VocabParallelStatsCpu(stats.data(), logits.data(), targets.data(), n, real, ld, begin);
  EXPECT_CLOSE(gstats.Download(), stats, 1e-5);
  for (int r = 0; r < n; ++r) {  // as if other ranks had larger logits and more mass
    stats[n + r] += 0.5f;
    stats[3 * n + r] += 1.0f;
  }
  gstats.Upload(stats);
  ASSERT_TRUE(VocabParallelRescale(gstats.get(), n, 0).ok());
  VocabParallelRescaleCpu(stats.data(), n);
  EXPECT_CLOSE(gstats.Download(), stats, 1e-5);
  for (int r = 0; r < n; ++r) stats[2 * n + r] += 3.0f;
  gstats.Upload(stats);
  ASSERT_TRUE(VocabParallelFinish<T>(gl.get(), gloss.get(), gstats.get(), dt, gw.get(), 0.01f, n,
                                     real, ld, begin, true, 0)
                  .ok());
  std::vector<float> losses(n), want = logits;
  VocabParallelFinishCpu(want.data(), losses.data(), stats.data(), targets.data(), weights.data(),
                         0.01f, n, real, ld, begin, true);
  EXPECT_CLOSE(gloss.Download(), losses, 1e-5);
  EXPECT_CLOSE(gl.Download(), want, kTol<T>);
  cudaFree(dt);
}

// n = 100003 runs the one-element kernel, n = 100000 the four-element one. With grad_scale
// (fp16's 1 / loss scale) the gradients are given scaled by 1024 and must update the same.
template <typename L>
void CheckAdamW(float loss_scale) {
  for (size_t n : {size_t{100003}, size_t{100000}}) {
    auto p = RandomVector(n, 1.0f, 1), g = RandomVector(n, 0.5f, 2);
    auto m = RandomVector(n, 0.1f, 3), v = RandomVector(n, 0.1f, 4);
    for (float& x : v) x = x * x;
    std::vector<float> scaled = g;
    for (float& x : scaled) x *= loss_scale;
    DeviceBuffer<float> gp(p), gg(scaled), gm(m), gv(v), sumsq(1), partials(kGradNormBlocks);
    DeviceBuffer<L> lowp(n);
    ASSERT_TRUE(GradSumSquares(sumsq.get(), partials.get(), gg.get(), n, 0).ok());
    double want_sumsq = GradSumSquaresCpu(scaled.data(), n);
    EXPECT_NEAR(sumsq.Download()[0], want_sumsq, 1e-5 * want_sumsq);
    AdamWHyper h;
    h.step = 3;
    h.max_norm = 1.0f;  // the norm is ~158: clipping is active
    h.grad_scale = 1.0f / loss_scale;
    ASSERT_TRUE(
        AdamWUpdate(gp.get(), lowp.get(), gm.get(), gv.get(), gg.get(), sumsq.get(), h, n, 0).ok());
    AdamWUpdateCpu(p.data(), m.data(), v.data(), scaled.data(), want_sumsq, h, n);
    EXPECT_CLOSE(gp.Download(), p, 1e-6);
    EXPECT_CLOSE(gm.Download(), m, 1e-5);
    EXPECT_CLOSE(gv.Download(), v, 1e-5);
    EXPECT_CLOSE(lowp.Download(), p, 4e-3);
  }
}

// Split masters (kernels/split_master.h): SplitMasters gives the host's halves, JoinMasters the
// fp32 values back, and AdamW over the halves gives the fp32 update's bits and its bf16 copy, on
// both kernels.
TEST(CudaAdamW, SplitMastersUpdateAsTheFp32Masters) {
  BM_SKIP_WITHOUT_GPU();
  for (size_t n : {size_t{100003}, size_t{100000}}) {
    auto p = RandomVector(n, 1.0f, 1), g = RandomVector(n, 0.5f, 2);
    auto m = RandomVector(n, 0.1f, 3), v = RandomVector(n, 0.1f, 4);
    for (float& x : v) x = x * x;
    DeviceBuffer<float> gp(p), gg(g), gm(m), gv(v), sumsq(1), partials(kGradNormBlocks);
    DeviceBuffer<float> sm(m), sv(v);
    DeviceBuffer<uint16_t> hi(n), lo(n), copy(n);
    ASSERT_TRUE(SplitMasters(hi.get(), lo.get(), gp.get(), n, 0).ok());
    std::vector<uint16_t> want_hi(n), want_lo(n), got_hi(n), got_lo(n);
    SplitMastersCpu(p.data(), n, want_hi.data(), want_lo.data());
    auto download = [&](const DeviceBuffer<uint16_t>& b, std::vector<uint16_t>* out) {
      ASSERT_EQ(cudaMemcpy(out->data(), b.get(), n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    };
    download(hi, &got_hi), download(lo, &got_lo);
    EXPECT_EQ(got_hi, want_hi) << n;
    EXPECT_EQ(got_lo, want_lo) << n;
    // The cast at gather time (ZeRO-3): the high halves alone.
    ASSERT_TRUE(SplitMasters(copy.get(), nullptr, gp.get(), n, 0).ok());
    download(copy, &got_hi);
    EXPECT_EQ(got_hi, want_hi) << n;
    // Joined back (GetParameters at ZeRO >= 1): the fp32 bits, from aligned pointers (four at a
    // time) and from pointers one element on (one at a time).
    for (size_t skip : {size_t{0}, size_t{1}}) {
      DeviceBuffer<float> joined(n);
      ASSERT_TRUE(
          JoinMasters(joined.get() + skip, hi.get() + skip, lo.get() + skip, n - skip, 0).ok());
      const std::vector<float> back = joined.Download();
      EXPECT_EQ(0, std::memcmp(back.data() + skip, p.data() + skip, (n - skip) * 4))
          << n << " skip " << skip;
    }
    ASSERT_TRUE(GradSumSquares(sumsq.get(), partials.get(), gg.get(), n, 0).ok());
    AdamWHyper h;
    h.step = 3;
    ASSERT_TRUE(AdamWUpdate(gp.get(), reinterpret_cast<__nv_bfloat16*>(copy.get()), gm.get(),
                            gv.get(), gg.get(), sumsq.get(), h, n, 0)
                    .ok());
    ASSERT_TRUE(
        AdamWSplitUpdate(hi.get(), lo.get(), sm.get(), sv.get(), gg.get(), sumsq.get(), h, n, 0)
            .ok());
    std::vector<float> want = gp.Download(), joined(n);
    std::vector<uint16_t> want_copy(n);
    download(hi, &got_hi), download(lo, &got_lo), download(copy, &want_copy);
    JoinMastersCpu(got_hi.data(), got_lo.data(), n, joined.data());
    EXPECT_EQ(0, std::memcmp(joined.data(), want.data(), n * 4)) << n;
    EXPECT_EQ(got_hi, want_copy) << n;
    EXPECT_EQ(0, std::memcmp(sm.Download().data(), gm.Download().data(), n * 4)) << n;
    EXPECT_EQ(0, std::memcmp(sv.Download().data(), gv.Download().data(), n * 4)) << n;
  }
}

// One side of a comparison of AdamW launches: masters whole (with their bf16 copy) and split,
// each with its moments, from the same starting values.
struct AdamWSide {
  AdamWSide(const std::vector<float>& p, const std::vector<float>& m, const std::vector<float>& v)
      : n(p.size()), p(p), m(m), v(v), w(n), hi(n), lo(n), sm(m), sv(v) {
    EXPECT_TRUE(SplitMasters(hi.get(), lo.get(), this->p.get(), n, 0).ok());
  }
  // Both updates of elements [b, b + len) from `grads` (fp32 or bf16, indexed from 0).
  template <typename G>
  void Update(const G* grads, const float* sumsq, const AdamWHyper& h, size_t b, size_t len,
              const uint32_t* mask = nullptr) {
    EXPECT_TRUE(AdamWUpdate(p.get() + b, w.get() + b, m.get() + b, v.get() + b, grads + b, sumsq, h,
                            len, 0, mask)
                    .ok());
    EXPECT_TRUE(AdamWSplitUpdate(hi.get() + b, lo.get() + b, sm.get() + b, sv.get() + b, grads + b,
                                 sumsq, h, len, 0, mask)
                    .ok());
  }
  size_t n;
  DeviceBuffer<float> p, m, v;
  DeviceBuffer<__nv_bfloat16> w;
  DeviceBuffer<uint16_t> hi, lo;
  DeviceBuffer<float> sm, sv;
};

// Every buffer of the two sides, to the bit.
void ExpectSameSides(const AdamWSide& x, const AdamWSide& y) {
  const auto same = [](const auto& a, const auto& b, const char* what) {
    const auto da = a.Download(), db = b.Download();
    EXPECT_EQ(0, std::memcmp(da.data(), db.data(), da.size() * sizeof(da[0]))) << what;
  };
  same(x.p, y.p, "params"), same(x.m, y.m, "m"), same(x.v, y.v, "v");
  same(x.w, y.w, "bf16 copy"), same(x.sm, y.sm, "split m"), same(x.sv, y.sv, "split v");
  std::vector<uint16_t> a(x.n), b(y.n);
  for (auto [hx, hy] : {std::pair{&x.hi, &y.hi}, {&x.lo, &y.lo}}) {
    ASSERT_EQ(cudaMemcpy(a.data(), hx->get(), x.n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b.data(), hy->get(), y.n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(a, b) << "split halves";
  }
}

// AdamW reading bf16 gradients (the group's sums kept in bf16: CudaDataParallel::keeps_bf16_sums)
// gives the bits of AdamW reading their fp32 widening, masters whole (with a bf16 copy) and
// split, with a decay mask, four at a time (n = 100000) and one at a time (n = 100003, and from
// one element on: not 8-byte aligned).
TEST(CudaAdamW, Bf16GradientsUpdateAsTheirWidening) {
  BM_SKIP_WITHOUT_GPU();
  for (size_t n : {size_t{100000}, size_t{100003}})
    for (size_t first : {size_t{0}, size_t{1}}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " from " << first);
      const std::vector<float> g = Rounded<__nv_bfloat16>(RandomVector(n, 0.5f, 2));
      auto p = RandomVector(n, 1.0f, 1), m = RandomVector(n, 0.1f, 3), v = RandomVector(n, 0.1f, 4);
      for (float& x : v) x = x * x;
      std::vector<uint32_t> mask((n / kDecayChunk + 32) / 32);
      for (size_t w = 0; w < mask.size(); ++w) mask[w] = 0x9e3779b9u * static_cast<uint32_t>(w + 1);
      DeviceBuffer<uint32_t> gmask(mask.size());
      ASSERT_EQ(cudaMemcpy(gmask.get(), mask.data(), mask.size() * 4, cudaMemcpyHostToDevice),
                cudaSuccess);
      DeviceBuffer<float> wide(g), sumsq(1), partials(kGradNormBlocks);
      DeviceBuffer<__nv_bfloat16> narrow(g);
      ASSERT_TRUE(GradSumSquares(sumsq.get(), partials.get(), wide.get(), n, 0).ok());
      AdamWHyper h;
      h.step = 5, h.weight_decay = 0.2f, h.lr = 1e-2f, h.max_norm = 0.5f;
      AdamWSide from_wide(p, m, v), from_narrow(p, m, v);
      from_wide.Update(wide.get(), sumsq.get(), h, first, n - first, gmask.get());
      from_narrow.Update(narrow.get(), sumsq.get(), h, first, n - first, gmask.get());
      ExpectSameSides(from_wide, from_narrow);
      EXPECT_NE(
          0, std::memcmp(from_wide.p.Download().data() + first, p.data() + first, (n - first) * 4))
          << "the update ran";
    }
}

// One launch with a weight-decay mask (a bit per kDecayChunk elements) gives the bits of one
// launch per run of decayed or undecayed chunks, with the masters whole and split, on both
// kernels (n = 100003: one element a thread).
TEST(CudaAdamW, DecayMaskGivesEachRunsOwnLaunchBits) {
  BM_SKIP_WITHOUT_GPU();
  for (size_t n : {size_t{100003}, size_t{100000}}) {
    SCOPED_TRACE(n);
    const size_t chunks = (n + kDecayChunk - 1) / kDecayChunk;
    std::vector<uint32_t> mask((chunks + 31) / 32, 0u);
    std::vector<bool> decayed(chunks);
    for (size_t c = 0; c < chunks; ++c) {
      decayed[c] = (c / 3) % 2 == 0 || c % 7 == 0;  // runs of several lengths
      if (decayed[c]) mask[c / 32] |= 1u << (c % 32);
    }
    auto p = RandomVector(n, 1.0f, 1), g = RandomVector(n, 0.5f, 2);
    auto m = RandomVector(n, 0.1f, 3), v = RandomVector(n, 0.1f, 4);
    for (float& x : v) x = x * x;
    DeviceBuffer<uint32_t> gmask(mask.size());
    ASSERT_EQ(cudaMemcpy(gmask.get(), mask.data(), mask.size() * 4, cudaMemcpyHostToDevice),
              cudaSuccess);
    DeviceBuffer<float> gg(g), sumsq(1), partials(kGradNormBlocks);
    ASSERT_TRUE(GradSumSquares(sumsq.get(), partials.get(), gg.get(), n, 0).ok());
    AdamWHyper h;
    h.step = 4, h.weight_decay = 0.3f, h.lr = 1e-2f;
    AdamWHyper none = h;
    none.weight_decay = 0.0f;
    AdamWSide masked(p, m, v), by_runs(p, m, v);
    masked.Update(gg.get(), sumsq.get(), h, 0, n, gmask.get());  // one launch each
    for (size_t c = 0; c < chunks;) {                            // a launch per run
      size_t e = c;
      while (e < chunks && decayed[e] == decayed[c]) ++e;
      const size_t b = c * kDecayChunk, len = std::min(e * kDecayChunk, n) - b;
      by_runs.Update(gg.get(), sumsq.get(), decayed[c] ? h : none, b, len);
      c = e;
    }
    ExpectSameSides(masked, by_runs);
    EXPECT_NE(0, std::memcmp(masked.p.Download().data(), p.data(), n * 4)) << "the update ran";
  }
}

TEST(CudaAdamW, MatchesCpuWithClipping) {
  BM_SKIP_WITHOUT_GPU();
  CheckAdamW<__nv_bfloat16>(1.0f);
  CheckAdamW<__half>(1024.0f);
}

// Attention: the reference kernel (both types) and the tensor-core kernels (bf16, D 64/128),
// with GQA and sequence lengths that are not multiples of the tiles.
struct AttnCase {
  int b, t, h, hkv, d;
  AttentionImpl impl;
  bool causal = true;
};

template <typename T>
void CheckAttention(const AttnCase& k, uint64_t seed) {
  int n = k.b * k.t, cols = (k.h + 2 * k.hkv) * k.d, ocols = k.h * k.d;
  auto qkv = Rounded<T>(RandomVector(n * cols, 1.0f, seed));
  auto dout = Rounded<T>(RandomVector(n * ocols, 1.0f, seed + 1));
  DeviceBuffer<T> gqkv(qkv), gout(n * ocols), gdout(dout), gdqkv(n * cols);
  DeviceBuffer<float> glse(k.b * k.h * k.t), scratch(AttentionScratchFloats(k.b, k.t, k.h));
  ASSERT_TRUE(AttentionForward<T>(gout.get(), glse.get(), gqkv.get(), k.b, k.t, k.h, k.hkv, k.d,
                                  k.impl, 0, k.causal)
                  .ok());
  std::vector<float> out(n * ocols), lse(k.b * k.h * k.t), dqkv(n * cols);
  AttentionForwardCpu(out.data(), lse.data(), qkv.data(), k.b, k.t, k.h, k.hkv, k.d, k.causal);
  std::string what = std::string(testing::TypeName<T>()) + " B=" + std::to_string(k.b) +
                     " T=" + std::to_string(k.t) + " H=" + std::to_string(k.h) +
                     " Hkv=" + std::to_string(k.hkv) + " D=" + std::to_string(k.d) +
                     (k.impl == AttentionImpl::kReference ? " reference" : " auto") +
                     (k.causal ? "" : " non-causal");
  auto gout_h = gout.Download();
  EXPECT_LT(RelativeError(gout_h, out), kTol<T>) << what;
  EXPECT_LT(RelativeError(glse.Download(), lse), 1e-5 + kTol<T> / 10) << what;
  // Backward from the device's own forward output (what training does).
  ASSERT_TRUE(AttentionBackward<T>(gdqkv.get(), scratch.get(), gdout.get(), gout.get(), gqkv.get(),
                                   glse.get(), k.b, k.t, k.h, k.hkv, k.d, k.impl, 0, k.causal)
                  .ok());
  AttentionBackwardCpu(dqkv.data(), dout.data(), Rounded<T>(gout_h).data(), qkv.data(), lse.data(),
                       k.b, k.t, k.h, k.hkv, k.d, k.causal);
  EXPECT_LT(RelativeError(gdqkv.Download(), dqkv), 2 * kTol<T>) << what;
}

TYPED_TEST(CudaOps, AttentionReference) {
  for (AttnCase k : {AttnCase{2, 37, 4, 2, 16, AttentionImpl::kReference},
                     AttnCase{1, 70, 2, 2, 64, AttentionImpl::kReference}}) {
    CheckAttention<TypeParam>(k, this->Seed());
  }
}

// Without the causal mask (the vision tower's): CLIP-L/14's 577 positions (9 tiles of 64 and
// one row over) at head_dim 64, CLIP's head size, and 128; lengths below one tile and GQA.
TYPED_TEST(CudaOps, AttentionReferenceNonCausal) {
  for (AttnCase k : {AttnCase{2, 37, 4, 2, 16, AttentionImpl::kReference, false},
                     AttnCase{1, 70, 2, 2, 64, AttentionImpl::kReference, false}}) {
    CheckAttention<TypeParam>(k, this->Seed());
  }
}

TEST(CudaOps16Bit, FlashAttentionNonCausal) {
  BM_SKIP_WITHOUT_GPU();
  uint64_t seed = 299;
  for (AttnCase k : {AttnCase{2, 577, 2, 2, 64, AttentionImpl::kAuto, false},
                     AttnCase{1, 50, 4, 4, 64, AttentionImpl::kAuto, false},
                     AttnCase{1, 200, 4, 1, 64, AttentionImpl::kAuto, false},
                     AttnCase{1, 577, 2, 2, 128, AttentionImpl::kAuto, false},
                     AttnCase{2, 130, 4, 2, 128, AttentionImpl::kAuto, false}}) {
    CheckAttention<__nv_bfloat16>(k, seed += 10);
    CheckAttention<__half>(k, seed += 10);
  }
}

// The CPU twin without the mask, on values whose answer is known: with every query zero the
// softmax is uniform, so each output row is the mean of V over the keys it sees (all of them;
// causal: keys 0..t).
TEST(CudaOpsCpuTwin, AttentionNonCausalIsTheMeanOfAllValues) {
  const int t = 5, h = 1, d = 2, cols = 3 * d;
  std::vector<float> qkv(t * cols, 0.0f);
  for (int s = 0; s < t; ++s) {
    qkv[s * cols + d] = 0.3f * s;      // k: anything (q is zero)
    qkv[s * cols + 2 * d] = float(s);  // v[s] = (s, 10 s)
    qkv[s * cols + 2 * d + 1] = 10.0f * s;
  }
  std::vector<float> out(t * d), lse(t);
  AttentionForwardCpu(out.data(), lse.data(), qkv.data(), 1, t, h, h, d, false);
  for (int r = 0; r < t; ++r) {
    EXPECT_NEAR(out[r * d], 2.0f, 1e-6) << r;  // (0+1+2+3+4)/5
    EXPECT_NEAR(out[r * d + 1], 20.0f, 1e-5) << r;
    EXPECT_NEAR(lse[r], std::log(5.0), 1e-6) << r;
  }
  AttentionForwardCpu(out.data(), lse.data(), qkv.data(), 1, t, h, h, d, true);
  EXPECT_NEAR(out[1 * d], 0.5f, 1e-6);       // (0+1)/2
  EXPECT_NEAR(out[3 * d + 1], 15.0f, 1e-5);  // 10 (0+1+2+3)/4
}

TEST(CudaOps16Bit, FlashAttention) {
  BM_SKIP_WITHOUT_GPU();
  uint64_t seed = 99;
  for (AttnCase k : {AttnCase{2, 64, 2, 2, 64, AttentionImpl::kAuto},
                     AttnCase{1, 200, 4, 1, 64, AttentionImpl::kAuto},
                     AttnCase{2, 130, 4, 2, 128, AttentionImpl::kAuto},
                     AttnCase{1, 256, 2, 2, 128, AttentionImpl::kAuto}}) {
    CheckAttention<__nv_bfloat16>(k, seed += 10);
    CheckAttention<__half>(k, seed += 10);
  }
}

// cuDNN's fused attention (backend graph API) against the same CPU twins: forward, lse and
// backward, head sizes 64 and 128, GQA, lengths not multiples of 64; outputs NaN-poisoned;
// the backward run twice must give identical bits (the deterministic engines).
// key_chunk > 0 runs the backward over blocks of that many keys (the default path).
// `accumulated` runs the bench's backward with dQ accumulated in fp32 instead
// (CudnnAttentionAccumulatedBackward: the same tolerance, its bits need not repeat).
template <typename T>
void CheckCudnnAttention(const AttnCase& k, uint64_t seed, int key_chunk,
                         bool accumulated = false) {
  int n = k.b * k.t, cols = (k.h + 2 * k.hkv) * k.d, ocols = k.h * k.d;
  AttentionShape shape{k.b, k.t, k.h, k.hkv, k.d, key_chunk, std::is_same_v<T, __half>, k.causal};
  std::string what =
      std::string("cuDNN ") + testing::TypeName<T>() + " B=" + std::to_string(k.b) +
      " T=" + std::to_string(k.t) + " H=" + std::to_string(k.h) + " Hkv=" + std::to_string(k.hkv) +
      " D=" + std::to_string(k.d) + (k.causal ? "" : " non-causal") +
      (accumulated ? std::string(" dQ accumulated") : " key chunk " + std::to_string(key_chunk));
  auto ws = CudnnAttentionWorkspaceBytes(shape);
  ASSERT_TRUE(ws.ok()) << what << ": " << ws.status().message();
  if (accumulated) {
    auto acc = CudnnAttentionAccumulatedWorkspaceBytes(shape);
    ASSERT_TRUE(acc.ok()) << what << ": " << acc.status().message();
    ws = std::max(*ws, *acc);
  }
  auto qkv = Rounded<T>(RandomVector(n * cols, 1.0f, seed));
  auto dout = Rounded<T>(RandomVector(n * ocols, 1.0f, seed + 1));
  DeviceBuffer<T> gqkv(qkv), gout(n * ocols), gdout(dout), gdqkv(n * cols), gdqkv2(n * cols);
  DeviceBuffer<float> glse(k.b * k.h * k.t);
  DeviceBuffer<char> work(std::max<size_t>(*ws, 1));
  Status st = CudnnAttentionForward(gout.get(), glse.get(), gqkv.get(), shape, work.get(), *ws, 0);
  ASSERT_TRUE(st.ok()) << what << ": " << st.message();
  std::vector<float> out(n * ocols), lse(k.b * k.h * k.t), dqkv(n * cols);
  AttentionForwardCpu(out.data(), lse.data(), qkv.data(), k.b, k.t, k.h, k.hkv, k.d, k.causal);
  auto gout_h = gout.Download();
  double e_out = RelativeError(gout_h, out), e_lse = RelativeError(glse.Download(), lse);
  EXPECT_LT(e_out, kTol<T>) << what;
  EXPECT_LT(e_lse, 1e-5 + kTol<T> / 10) << what;
  for (DeviceBuffer<T>* d : {&gdqkv, &gdqkv2}) {
    st = accumulated
             ? CudnnAttentionAccumulatedBackward(d->get(), gdout.get(), gout.get(), gqkv.get(),
                                                 glse.get(), shape, work.get(), *ws, 0)
             : CudnnAttentionBackward(d->get(), gdout.get(), gout.get(), gqkv.get(), glse.get(),
                                      shape, work.get(), *ws, 0);
    ASSERT_TRUE(st.ok()) << what << ": " << st.message();
  }
  AttentionBackwardCpu(dqkv.data(), dout.data(), Rounded<T>(gout_h).data(), qkv.data(), lse.data(),
                       k.b, k.t, k.h, k.hkv, k.d, k.causal);
  auto g1 = gdqkv.Download(), g2 = gdqkv2.Download();
  double e_d = RelativeError(g1, dqkv);
  EXPECT_LT(e_d, 2 * kTol<T>) << what;
  EXPECT_LT(RelativeError(g2, dqkv), 2 * kTol<T>) << what << " (second run)";
  bool same = std::equal(g1.begin(), g1.end(), g2.begin(),
                         [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; });
  if (!accumulated) {
    EXPECT_TRUE(same) << what << ": backward not bitwise repeatable";
  }
  std::printf("note: %s rel err out %.2e lse %.2e dqkv %.2e workspace %zu B%s\n", what.c_str(),
              e_out, e_lse, e_d, *ws, same ? "" : ", second run's bits differ");
}

TEST(CudaOps16Bit, CudnnAttention) {
  BM_SKIP_WITHOUT_GPU();
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  uint64_t seed = 199;
  for (int chunk : {0, 64}) {
    for (AttnCase k : {AttnCase{2, 64, 2, 2, 64, AttentionImpl::kCudnn},
                       AttnCase{1, 200, 4, 1, 64, AttentionImpl::kCudnn},
                       AttnCase{2, 130, 4, 2, 128, AttentionImpl::kCudnn},
                       AttnCase{1, 256, 2, 2, 128, AttentionImpl::kCudnn}}) {
      CheckCudnnAttention<__nv_bfloat16>(k, seed += 10, chunk);
      CheckCudnnAttention<__half>(k, seed += 10, chunk);
    }
  }
  CheckCudnnAttention<__nv_bfloat16>(AttnCase{2, 384, 4, 4, 64, AttentionImpl::kCudnn}, seed += 10,
                                     128);
  CheckCudnnAttention<__half>(AttnCase{2, 384, 4, 4, 64, AttentionImpl::kCudnn}, seed += 10, 128);
}

// Without the causal mask: every key block's call takes all the queries, and its partial dQ
// covers every row (577 positions: blocks of 64, 128 and 288 keys, the last ragged).
TEST(CudaOps16Bit, CudnnAttentionNonCausal) {
  BM_SKIP_WITHOUT_GPU();
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  uint64_t seed = 699;
  for (int chunk : {0, 64, 128}) {
    for (AttnCase k : {AttnCase{2, 577, 2, 2, 64, AttentionImpl::kCudnn, false},
                       AttnCase{1, 200, 4, 1, 64, AttentionImpl::kCudnn, false},
                       AttnCase{1, 130, 2, 2, 128, AttentionImpl::kCudnn, false}}) {
      CheckCudnnAttention<__nv_bfloat16>(k, seed += 10, chunk);
      CheckCudnnAttention<__half>(k, seed += 10, chunk);
    }
  }
}

// The survey's backward with dQ accumulated in fp32 (cuDNN's non-deterministic engines, all the
// keys in one call) computes the same gradients within the same tolerance.
TEST(CudaOps16Bit, CudnnAttentionAccumulatedDq) {
  BM_SKIP_WITHOUT_GPU();
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  uint64_t seed = 499;
  for (AttnCase k : {AttnCase{2, 64, 2, 2, 64, AttentionImpl::kCudnn},
                     AttnCase{1, 200, 4, 1, 64, AttentionImpl::kCudnn},
                     AttnCase{2, 384, 4, 4, 128, AttentionImpl::kCudnn}}) {
    CheckCudnnAttention<__nv_bfloat16>(k, seed += 10, 0, true);
    CheckCudnnAttention<__half>(k, seed += 10, 0, true);
  }
}

// The backward's memory is linear in T with key blocks (quadratic without: cuDNN's
// deterministic engines keep dP for all the keys of a call).
TEST(CudaOpsBf16, CudnnAttentionWorkspaceLinearInT) {
  BM_SKIP_WITHOUT_GPU();
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  auto bytes = [](int t, int chunk) {
    auto ws = CudnnAttentionWorkspaceBytes(AttentionShape{1, t, 8, 8, 64, chunk});
    EXPECT_TRUE(ws.ok()) << ws.status().message();
    return ws.ok() ? static_cast<double>(*ws) : 0.0;
  };
  double chunked = bytes(4096, 512) / bytes(2048, 512), whole = bytes(4096, 0) / bytes(2048, 0);
  std::printf("note: workspace T 2048 -> 4096: x%.2f with 512-key blocks, x%.2f in one call\n",
              chunked, whole);
  EXPECT_LT(chunked, 2.2);
}

// Matmul in the three forms the model uses, with the fused epilogues, against a naive product.
// The tuner (matmul.h): a tuned Matmul computes the same bits as an untuned one (the
// heuristic's first choice), for a weight-gradient shape big enough to have candidates, with
// beta 0 (tuned) and then beta 1 into itself (never tuned); the fingerprint equals its CPU twin.
TEST(CudaOpsBf16, MatmulTuningKeepsTheFirstChoicesBits) {
  BM_SKIP_WITHOUT_GPU();
  using T = __nv_bfloat16;
  int m = 768, n = 1024, k = 2048;
  auto a = Rounded<T>(RandomVector(size_t(k) * m, 1.0f, 5));
  auto b = Rounded<T>(RandomVector(size_t(k) * n, 1.0f, 6));
  DeviceBuffer<T> ga(a), gb(b);
  std::vector<std::vector<float>> got;
  for (bool tune : {false, true}) {
    DeviceBuffer<char> ws(Matmul::kDefaultWorkspaceBytes);
    auto mm = Matmul::Create(ws.get(), Matmul::kDefaultWorkspaceBytes, tune);
    ASSERT_TRUE(mm.ok()) << mm.status().message();
    DeviceBuffer<float> gd(size_t(m) * n);
    MatmulArgs g;
    g.m = m, g.n = n, g.k = k, g.trans_a = true, g.ab_type = DType::kBF16, g.d_type = DType::kF32;
    g.a = ga.get(), g.lda = m, g.b = gb.get(), g.ldb = n, g.d = gd.get(), g.ldd = n;
    ASSERT_TRUE((*mm)->Run(g, 0).ok());
    g.beta = 1.0f;
    ASSERT_TRUE((*mm)->Run(g, 0).ok());
    got.push_back(gd.Download());
    for (const std::string& line : (*mm)->tuning_log())
      std::printf("note: tuning %s\n", line.c_str());
    if (tune) {
      EXPECT_EQ((*mm)->tuning_log().size(), 1u);
    }
  }
  EXPECT_TRUE(std::equal(got[0].begin(), got[0].end(), got[1].begin(), [](float x, float y) {
    return std::memcmp(&x, &y, 4) == 0;
  })) << "tuned matmul differs from the heuristic's first algorithm";
  DeviceBuffer<float> gx(got[0]);
  DeviceBuffer<float> sum(2);
  ASSERT_TRUE(
      BitChecksum(reinterpret_cast<unsigned long long*>(sum.get()), gx.get(), got[0].size() * 4, 0)
          .ok());
  uint64_t device_sum = 0;
  ASSERT_EQ(cudaMemcpy(&device_sum, sum.get(), 8, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(device_sum, BitChecksumCpu(got[0].data(), got[0].size() * 4));
}

// A shape one dimension away from a tuned one (here k, the tokens of a weight gradient: a
// micro-batch of another width) reuses the tuned one's kept algorithm after the bit check, so
// its bits are still the untuned heuristic's first; a shape two dimensions away is tuned whole.
TEST(CudaOpsBf16, MatmulTuningReusesTheNearestTunedShape) {
  BM_SKIP_WITHOUT_GPU();
  using T = __nv_bfloat16;
  const int m = 768, n = 1024, max_k = 2560;
  auto a = Rounded<T>(RandomVector(size_t(max_k) * (m + 64), 1.0f, 7));
  auto b = Rounded<T>(RandomVector(size_t(max_k) * n, 1.0f, 8));
  DeviceBuffer<T> ga(a), gb(b);
  DeviceBuffer<float> gd(size_t(m + 64) * n);
  auto run = [&](Matmul& mm, int rows, int k) {
    MatmulArgs g;
    g.m = rows, g.n = n, g.k = k, g.trans_a = true, g.ab_type = DType::kBF16;
    g.d_type = DType::kF32;
    g.a = ga.get(), g.lda = rows, g.b = gb.get(), g.ldb = n, g.d = gd.get(), g.ldd = n;
    EXPECT_TRUE(mm.Run(g, 0).ok());
    return gd.Download();
  };
  DeviceBuffer<char> ws_first(Matmul::kDefaultWorkspaceBytes),
      ws_tuned(Matmul::kDefaultWorkspaceBytes);
  auto first = Matmul::Create(ws_first.get(), Matmul::kDefaultWorkspaceBytes, false);
  auto tuned = Matmul::Create(ws_tuned.get(), Matmul::kDefaultWorkspaceBytes, true);
  ASSERT_TRUE(first.ok() && tuned.ok());
  auto same_bits = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
  };
  // (rows, k): the first tuned whole; k farther and nearer (the nearer one is the neighbour
  // the last reuses); rows and k both other: no neighbour.
  const std::vector<std::pair<int, int>> shapes = {
      {m, 2048}, {m, 2560}, {m, 2176}, {m, 2144}, {m + 64, 2144}};
  for (auto [rows, k] : shapes) {
    EXPECT_TRUE(same_bits(run(**first, rows, k), run(**tuned, rows, k)))
        << "rows " << rows << ", k " << k << ": not the heuristic's first bits";
  }
  const std::vector<std::string>& log = (*tuned)->tuning_log();
  for (const std::string& line : log) std::printf("note: tuning %s\n", line.c_str());
  ASSERT_EQ(log.size(), shapes.size());
  EXPECT_EQ(log[0].find("reused"), std::string::npos) << log[0];
  EXPECT_NE(log[1].find("reused the kept algorithm of [m=768 n=1024 k=2048]"), std::string::npos)
      << log[1];
  EXPECT_NE(log[3].find("reused the kept algorithm of [m=768 n=1024 k=2176]"), std::string::npos)
      << log[3];
  EXPECT_EQ(log[4].find("reused"), std::string::npos) << log[4];
}

TYPED_TEST(CudaOps, MatmulForms) {
  using T = TypeParam;
  DType dt = std::is_same_v<T, float>    ? DType::kF32
             : std::is_same_v<T, __half> ? DType::kF16
                                         : DType::kBF16;
  int rows = 96, in = 64, out = 80;
  auto x = Rounded<T>(RandomVector(rows * in, 1.0f, this->Seed()));
  auto w = Rounded<T>(RandomVector(out * in, 1.0f, this->Seed()));
  auto bias = Rounded<T>(RandomVector(out, 1.0f, this->Seed()));
  auto dy = Rounded<T>(RandomVector(rows * out, 1.0f, this->Seed()));
  DeviceBuffer<char> ws(Matmul::kDefaultWorkspaceBytes);
  auto mm = Matmul::Create(ws.get(), Matmul::kDefaultWorkspaceBytes);
  ASSERT_TRUE(mm.ok()) << mm.status().message();
  DeviceBuffer<T> gx(x), gw(w), gb(bias), gy(rows * out), gdy(dy), gdx(rows * in);
  // y = x W^T + b
  MatmulArgs a;
  a.m = rows, a.n = out, a.k = in, a.trans_b = true, a.ab_type = a.d_type = dt;
  a.a = gx.get(), a.lda = in, a.b = gw.get(), a.ldb = in, a.d = gy.get(), a.ldd = out;
  a.epilogue = Epilogue::kBias, a.bias = gb.get();
  ASSERT_TRUE((*mm)->Run(a, 0).ok());
  std::vector<float> y(rows * out), dx(rows * in, 0.0f), dw(out * in, 0.0f), db(out, 0.0f);
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < out; ++o) {
      double s = bias[o];
      for (int i = 0; i < in; ++i) s += double(x[r * in + i]) * w[o * in + i];
      y[r * out + o] = float(s);
    }
  }
  EXPECT_CLOSE(gy.Download(), y, kTol<T>);
  // dx = dy W
  MatmulArgs d;
  d.m = rows, d.n = in, d.k = out, d.ab_type = d.d_type = dt;
  d.a = gdy.get(), d.lda = out, d.b = gw.get(), d.ldb = in, d.d = gdx.get(), d.ldd = in;
  ASSERT_TRUE((*mm)->Run(d, 0).ok());
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < in; ++i) {
      double s = 0;
      for (int o = 0; o < out; ++o) s += double(dy[r * out + o]) * w[o * in + i];
      dx[r * in + i] = float(s);
    }
  }
  EXPECT_CLOSE(gdx.Download(), dx, kTol<T>);
  // dW += dy^T x (fp32, accumulated), db = sum dy (epilogue)
  auto dw0 = RandomVector(out * in, 1.0f, this->Seed());
  DeviceBuffer<float> gdw(dw0), gdb(out);
  MatmulArgs g;
  g.m = out, g.n = in, g.k = rows, g.trans_a = true, g.ab_type = dt, g.d_type = DType::kF32;
  g.a = gdy.get(), g.lda = out, g.b = gx.get(), g.ldb = in, g.d = gdw.get(), g.ldd = in;
  g.beta = 1.0f, g.epilogue = Epilogue::kBGradB, g.bias_grad = gdb.get();
  bool fused = (*mm)->Supports(g);
  if (!fused) g.epilogue = Epilogue::kNone;
  ASSERT_TRUE((*mm)->Run(g, 0).ok());
  for (int o = 0; o < out; ++o) {
    for (int i = 0; i < in; ++i) {
      double s = dw0[o * in + i];
      for (int r = 0; r < rows; ++r) s += double(dy[r * out + o]) * x[r * in + i];
      dw[o * in + i] = float(s);
    }
    for (int r = 0; r < rows; ++r) db[o] += dy[r * out + o];
  }
  EXPECT_CLOSE(gdw.Download(), dw, kTol<T>);
  if (fused)
    EXPECT_CLOSE(gdb.Download(), db, 1e-4);
  else
    std::printf("note: cuBLASLt has no BGRADB epilogue for this shape; fallback used\n");
  // GELU epilogue: post = gelu(x W^T + b), pre saved; then DGELU
  DeviceBuffer<T> pre(rows * out), post(rows * out);
  a.epilogue = Epilogue::kGeluAuxBias, a.d = post.get(), a.aux = pre.get(), a.ld_aux = out;
  if ((*mm)->Supports(a)) {
    ASSERT_TRUE((*mm)->Run(a, 0).ok());
    std::vector<float> want_post(y.size());
    GeluForwardCpu(want_post.data(), y.data(), y.size());
    EXPECT_CLOSE(pre.Download(), y, kTol<T>);
    EXPECT_CLOSE(post.Download(), want_post, kTol<T>);
  } else {
    std::printf("note: cuBLASLt has no GELU_AUX_BIAS epilogue here; fallback used\n");
  }
}

}  // namespace
}  // namespace bm::train::cuda
