// CudaModel with spliced rows (cuda_model.h's SplicedRows: LLaVA's image features in place of
// the token lookup at the image positions) against the trainer's CPU model with the same rows
// (trainer/cpu/model.h: cpu::SplicedRows<float>), on the tiny llama and gpt presets:
//  - one step: the loss, every tensor's gradient and the rows' gradient, within the tolerances
//    of cuda_model_test.cc (fp32 1e-4 relative L2 per tensor, bf16 / fp16 5e-2; the loss 1e-5
//    / 1e-2); fp16 on loss x 1024 (the rows' gradient comes scaled too), unscaled after; the
//    forward-only token losses likewise;
//  - count 0 gives the bits of the call without spliced rows (loss and gradients);
//  - rows equal to the lookup give the plain model's loss bit for bit, and the rows' gradient
//    is what the plain model's token embedding got from those positions;
//  - bad positions (outside the batch, twice, too many) are refused, naming the row; so are
//    pointers of the wrong kind or too short (host rows, device positions, a short buffer);
//  - without a GPU: the kernels' CPU twins composed as the model composes them
//    (cuda_cpu_model.h) against the trainer's CPU model with the same rows.
// The parameters move between the two layouts by name (shard_map.h, as the CUDA backend does).
// Skips with the reason on machines without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/trainer/cuda_cpu_model.h"
#include "tests/trainer/cuda_test_util.h"
#include "trainer/cpu/model.h"
#include "trainer/cuda/cuda_model.h"
#include "trainer/cuda/kernels/split_master.h"
#include "trainer/cuda/shard_map.h"
#include "trainer/model/layout.h"
#include "trainer/model/shard.h"

namespace bm::train::cuda {
namespace {

using testing::DeviceBuffer;
using testing::RandomVector;
using testing::RelativeError;
using testing::Rounded;

constexpr int kB = 2, kT = 32;
// Two "images": 8 rows in sequence 0 (t = 3..10) and 6 in sequence 1 (t = 0..5), given out of
// order; the loss mask leaves them out as LLaVA's labels do.
const std::vector<int> kPositions = {35, 36, 37, 32, 33, 34, 3, 4, 5, 6, 7, 8, 9, 10};

train::ModelConfig Config(const std::string& preset) {
  auto c = train::Preset(preset);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return *c;
}

// The CUDA model of the whole config, its spans in the trainer's layout.
struct Gpu {
  std::unique_ptr<CudaModel> model;
  std::vector<TensorSpan> spans;
  std::vector<float> ToGpu(const std::vector<float>& host) const {
    std::vector<float> g(model->layout().total(), 0.0f);
    for (const TensorSpan& s : spans)
      std::copy_n(host.begin() + s.host, s.numel, g.begin() + s.gpu);
    return g;
  }
  std::vector<float> ToHost(const std::vector<float>& gpu, size_t total) const {
    std::vector<float> h(total, 0.0f);
    for (const TensorSpan& s : spans) std::copy_n(gpu.begin() + s.gpu, s.numel, h.begin() + s.host);
    return h;
  }
};

Gpu MakeGpu(const train::ModelConfig& config, DType dtype) {
  Gpu g;
  auto shard = ModelShard::Make(config, {});
  EXPECT_TRUE(shard.ok()) << shard.status().message();
  RunSpec run;
  run.micro_batch = kB, run.seq = kT, run.dtype = dtype;
  run.logits_chunk_rows = 24;  // several classifier chunks, one partial
  run.matmul_tuning = false;   // the same algorithms in every model the tests compare
  auto m = CudaModel::Create(SpecOfShard(config, *shard), run);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return g;
  g.model = std::move(*m);
  auto spans = MapOntoTrainer(g.model->layout(), shard->layout());
  EXPECT_TRUE(spans.ok()) << spans.status().message();
  if (spans.ok()) g.spans = std::move(*spans);
  return g;
}

// The weights' working copy as the model holds it: bf16 rounded as kernels/split_master.h
// rounds it (ties away from zero), fp16 to nearest, fp32 itself.
std::vector<float> WorkingCopy(DType t, std::vector<float> v) {
  if (t == DType::kF16) return Rounded<__half>(std::move(v));
  if (t == DType::kBF16)
    for (float& x : v) x = BitsFloat(static_cast<uint32_t>(MasterHigh(FloatBits(x))) << 16);
  return v;
}

float LossScale(DType t) { return t == DType::kF16 ? 1024.0f : 1.0f; }
constexpr DType kAllTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

struct Data {
  std::vector<int32_t> tokens, targets;
  std::vector<uint8_t> mask;
};
Data MakeData(int vocab) {
  Data d;
  for (int i = 0; i < kB * kT; ++i) d.tokens.push_back((i * 7 + 3 * (i / kT) + i % 5) % 61 % vocab);
  for (int i = 0; i < kB * kT; ++i) d.targets.push_back(d.tokens[(i + 1) % (kB * kT)]);
  d.mask.assign(kB * kT, 1);
  for (int p : kPositions) d.mask[p] = 0;
  return d;
}

// One ForwardBackward on a fresh model from `params` (the trainer's layout) with the rows
// `rows` (count 0: an empty SplicedRows; null: no SplicedRows at all), the rows' gradient into
// *drows (unscaled); returns the loss, the gradients in the trainer's layout (unscaled).
struct GpuStep {
  double loss = 0;
  std::vector<float> grads, drows;
  std::vector<float> losses;  // TokenLosses with the same rows
};
GpuStep RunGpu(const train::ModelConfig& config, DType t, const std::vector<float>& params,
               const Data& d, const std::vector<float>* rows, int count, float scale) {
  GpuStep out;
  Gpu g = MakeGpu(config, t);
  if (!g.model) return out;
  const int c = static_cast<int>(config.hidden);
  EXPECT_TRUE(g.model->SetParameters(g.ToGpu(params)).ok());
  EXPECT_TRUE(g.model->ZeroGradients().ok());
  std::vector<int32_t> positions(kPositions.begin(), kPositions.begin() + count);
  std::vector<float> host_rows = rows ? *rows : std::vector<float>(c);
  DeviceBuffer<float> rows32(host_rows), grad32(std::max(count, 1) * c);
  DeviceBuffer<__nv_bfloat16> rows16b(host_rows), grad16b(std::max(count, 1) * c);
  DeviceBuffer<__half> rows16h(host_rows), grad16h(std::max(count, 1) * c);
  // The uploads and the gradients' poisoning ran on the legacy stream; the model's is another.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  SplicedRows spliced;
  spliced.positions = positions.data(), spliced.count = count;
  spliced.rows = t == DType::kF32    ? static_cast<const void*>(rows32.get())
                 : t == DType::kBF16 ? static_cast<const void*>(rows16b.get())
                                     : static_cast<const void*>(rows16h.get());
  spliced.grad = t == DType::kF32    ? static_cast<void*>(grad32.get())
                 : t == DType::kBF16 ? static_cast<void*>(grad16b.get())
                                     : static_cast<void*>(grad16h.get());
  TokenBatch b;
  b.tokens = d.tokens.data(), b.targets = d.targets.data(), b.mask = d.mask.data();
  b.batch = kB, b.seq = kT, b.spliced = rows ? &spliced : nullptr;
  auto l = g.model->ForwardBackward(b, scale * LossScale(t));
  EXPECT_TRUE(l.ok()) << l.status().message();
  if (!l.ok()) return out;
  out.loss = *l;
  std::vector<float> got;
  EXPECT_TRUE(g.model->GetGradients(&got).ok());
  for (float& x : got) x /= LossScale(t);
  out.grads = g.ToHost(got, params.size());
  if (rows && count > 0) {
    out.drows = t == DType::kF32    ? grad32.Download()
                : t == DType::kBF16 ? grad16b.Download()
                                    : grad16h.Download();
    out.drows.resize(static_cast<size_t>(count) * c);
    for (float& x : out.drows) x /= LossScale(t);
  }
  out.losses.assign(kB * kT, 0.0f);
  EXPECT_TRUE(g.model->TokenLosses(b, out.losses.data()).ok());
  return out;
}

class CudaSplicedTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { BM_SKIP_WITHOUT_GPU(); }
};

double WorstTensorError(const train::ParamLayout& layout, const std::vector<float>& got,
                        const std::vector<float>& want, const std::string& label) {
  double worst = 0.0;
  for (const train::ParamTensor& t : layout.tensors()) {
    std::vector<float> g(got.begin() + t.offset, got.begin() + t.offset + t.numel);
    std::vector<float> w(want.begin() + t.offset, want.begin() + t.offset + t.numel);
    double e = RelativeError(g, w);
    std::printf("  %s grad %-40s rel err %.2e\n", label.c_str(), t.name.c_str(), e);
    worst = std::max(worst, e);
  }
  return worst;
}

TEST_P(CudaSplicedTest, OneStepMatchesCpuModel) {
  const train::ModelConfig config = Config(GetParam());
  const int c = static_cast<int>(config.hidden), count = static_cast<int>(kPositions.size());
  cpu::Model<float> ref(config, kB, kT);
  const std::vector<float> params = InitParameters(config, ref.layout(), 5);
  std::copy(params.begin(), params.end(), ref.params().begin());
  std::fill(ref.grads().begin(), ref.grads().end(), 0.0f);
  const Data d = MakeData(static_cast<int>(config.vocab));
  const float scale = 1.0f / (kB * kT - count);
  for (DType t : kAllTypes) {
    const bool half = t != DType::kF32;
    // The rows as the GPU sees them (rounded to the compute dtype), for both.
    const std::vector<float> rows =
        half ? (t == DType::kBF16 ? Rounded<__nv_bfloat16>(RandomVector(count * c, 0.05f, 3))
                                  : Rounded<__half>(RandomVector(count * c, 0.05f, 3)))
             : RandomVector(count * c, 0.05f, 3);
    std::vector<int64_t> pos64(kPositions.begin(), kPositions.end());
    std::vector<float> want_drows(count * c, 0.0f);
    cpu::SplicedRows<float> s{pos64.data(), count, rows.data(), want_drows.data()};
    std::fill(ref.grads().begin(), ref.grads().end(), 0.0f);
    double want_loss = 0;
    int64_t counted = 0;
    ref.ForwardBackward(d.tokens.data(), d.targets.data(), d.mask.data(), kB, kT, scale, &want_loss,
                        &counted, &s);
    ASSERT_EQ(counted, kB * kT - count);
    std::vector<float> want_losses(kB * kT);
    ref.TokenLosses(d.tokens.data(), d.targets.data(), kB, kT, want_losses.data(), &s);

    GpuStep got = RunGpu(config, t, params, d, &rows, count, scale);
    ASSERT_EQ(got.grads.size(), params.size());
    EXPECT_NEAR(got.loss, want_loss, (half ? 1e-2 : 1e-5) * want_loss) << DTypeName(t);
    const double worst = WorstTensorError(ref.layout(), got.grads, ref.grads(), DTypeName(t));
    EXPECT_LT(worst, half ? 5e-2 : 1e-4) << GetParam() << " " << DTypeName(t);
    const double rows_err = RelativeError(got.drows, want_drows);
    std::printf("  %s rows grad rel err %.2e\n", DTypeName(t), rows_err);
    EXPECT_LT(rows_err, half ? 5e-2 : 1e-4) << GetParam() << " " << DTypeName(t);
    double norm = 0;
    for (float x : want_drows) norm += std::abs(x);
    EXPECT_GT(norm, 0.0);  // the rows do get a gradient
    EXPECT_LT(RelativeError(got.losses, want_losses), half ? 1e-2 : 1e-5) << DTypeName(t);
  }
}

// count 0 is the call without spliced rows, bit for bit.
TEST_P(CudaSplicedTest, NoRowsGiveThePlainBits) {
  const train::ModelConfig config = Config(GetParam());
  const int c = static_cast<int>(config.hidden);
  const std::vector<float> params = InitParameters(config, train::ParamLayout(config), 6);
  const Data d = MakeData(static_cast<int>(config.vocab));
  const std::vector<float> unused(c, 1.0f);
  for (DType t : kAllTypes) {
    GpuStep plain = RunGpu(config, t, params, d, nullptr, 0, 0.01f);
    GpuStep empty = RunGpu(config, t, params, d, &unused, 0, 0.01f);
    ASSERT_FALSE(plain.grads.empty());
    EXPECT_EQ(std::memcmp(&plain.loss, &empty.loss, sizeof(double)), 0) << DTypeName(t);
    EXPECT_TRUE(plain.grads == empty.grads) << DTypeName(t);
    EXPECT_TRUE(plain.losses == empty.losses) << DTypeName(t);
  }
}

// Rows equal to the token embedding's at their positions: the plain loss bit for bit (the
// lookup writes the same bits), and the plain token-embedding gradient is the spliced one plus
// the rows' gradient at their tokens.
TEST_P(CudaSplicedTest, LookupRowsGiveThePlainModel) {
  const train::ModelConfig config = Config(GetParam());
  if (config.family == train::Family::kGpt) GTEST_SKIP() << "gpt adds learned positions";
  const int c = static_cast<int>(config.hidden), count = static_cast<int>(kPositions.size());
  const train::ParamLayout layout(config);
  const std::vector<float> params = InitParameters(config, layout, 7);
  const Data d = MakeData(static_cast<int>(config.vocab));
  const train::ParamTensor* wte = layout.Find("model.embed_tokens.weight");
  ASSERT_NE(wte, nullptr);
  std::vector<float> rows(count * c);
  for (int i = 0; i < count; ++i)
    for (int k = 0; k < c; ++k)
      rows[i * c + k] = params[wte->offset + d.tokens[kPositions[i]] * c + k];
  for (DType t : kAllTypes) {
    const bool half = t != DType::kF32;
    const std::vector<float> r = WorkingCopy(t, rows);
    GpuStep plain = RunGpu(config, t, params, d, nullptr, 0, 0.01f);
    GpuStep lookup = RunGpu(config, t, params, d, &r, count, 0.01f);
    ASSERT_FALSE(plain.grads.empty());
    ASSERT_EQ(lookup.drows.size(), rows.size());
    EXPECT_EQ(std::memcmp(&plain.loss, &lookup.loss, sizeof(double)), 0) << DTypeName(t);
    std::vector<float> g = lookup.grads;
    for (int i = 0; i < count; ++i)
      for (int k = 0; k < c; ++k)
        g[wte->offset + d.tokens[kPositions[i]] * c + k] += lookup.drows[i * c + k];
    std::vector<float> gw(g.begin() + wte->offset, g.begin() + wte->offset + wte->numel);
    std::vector<float> pw(plain.grads.begin() + wte->offset,
                          plain.grads.begin() + wte->offset + wte->numel);
    EXPECT_LT(RelativeError(gw, pw), half ? 1e-2 : 1e-5) << DTypeName(t);
    // outside the token embedding, the plain gradients exactly (the same forward and backward)
    for (size_t j = wte->offset + wte->numel; j < g.size(); ++j)
      ASSERT_EQ(lookup.grads[j], plain.grads[j]) << DTypeName(t) << " " << j;
  }
}

TEST_P(CudaSplicedTest, BadPositionsAreRefused) {
  const train::ModelConfig config = Config(GetParam());
  const int c = static_cast<int>(config.hidden);
  Gpu g = MakeGpu(config, DType::kF32);
  ASSERT_TRUE(g.model);
  const Data d = MakeData(static_cast<int>(config.vocab));
  DeviceBuffer<float> rows(3 * c);
  auto refused = [&](std::vector<int32_t> positions, int count, const char* needle) {
    SplicedRows s;
    s.positions = positions.data(), s.count = count, s.rows = rows.get();
    TokenBatch b;
    b.tokens = d.tokens.data(), b.targets = d.targets.data(), b.batch = kB, b.seq = kT;
    b.spliced = &s;
    auto l = g.model->ForwardBackward(b, 1.0f);
    ASSERT_FALSE(l.ok()) << needle;
    EXPECT_EQ(l.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(needle), std::string::npos) << l.status().message();
  };
  refused({1, 64, 2}, 3, "spliced row 1: position 64 outside");
  refused({1, -1, 2}, 3, "spliced row 1: position -1 outside");
  refused({5, 6, 5}, 3, "spliced row 2: position 5 given twice");
  refused({1, 2, 3}, kB * kT + 1, "spliced rows: 65 rows");
}

// The pointers' kinds and extents (SplicedRows: positions on the host, rows and grad on the GPU,
// [count, hidden] in the compute dtype) are checked before any kernel runs, naming the buffer;
// a bad one would otherwise fault in the splice kernel and be reported, sticky, by a later
// kernel (the RmsNorm after it). After each refusal the model still runs a step.
TEST_P(CudaSplicedTest, WrongPointerKindsAreRefused) {
  const train::ModelConfig config = Config(GetParam());
  const int c = static_cast<int>(config.hidden);
  Gpu g = MakeGpu(config, DType::kF32);
  ASSERT_TRUE(g.model);
  const Data d = MakeData(static_cast<int>(config.vocab));
  const int count = 3;
  std::vector<int32_t> positions = {3, 4, 5};
  // short_rows: one row of three (well under any rounding of the allocation)
  DeviceBuffer<float> rows(count * c), short_rows(c), grad(count * c);
  DeviceBuffer<__nv_bfloat16> half_rows(count * c);  // bf16-sized: half the fp32 bytes
  std::vector<float> host_rows(count * c, 0.5f);
  int32_t* device_positions = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device_positions), count * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device_positions, positions.data(), count * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  auto step = [&](const int32_t* pos, const void* r, void* gr) {
    SplicedRows s;
    s.positions = pos, s.count = count, s.rows = r, s.grad = gr;
    TokenBatch b;
    b.tokens = d.tokens.data(), b.targets = d.targets.data(), b.batch = kB, b.seq = kT;
    b.spliced = &s;
    return g.model->ForwardBackward(b, 1.0f);
  };
  auto refused = [&](const int32_t* pos, const void* r, void* gr, const char* needle) {
    auto l = step(pos, r, gr);
    ASSERT_FALSE(l.ok()) << needle;
    EXPECT_EQ(l.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(l.status().message().find(needle), std::string::npos) << l.status().message();
  };
  refused(positions.data(), host_rows.data(), grad.get(), "SplicedRows::rows");
  refused(positions.data(), host_rows.data(), grad.get(), "pageable host memory");
  refused(device_positions, rows.get(), grad.get(), "SplicedRows::positions");
  refused(positions.data(), short_rows.get(), grad.get(), "run past its allocation");
  refused(positions.data(), half_rows.get(), grad.get(), "run past its allocation");
  refused(positions.data(), rows.get(), short_rows.get(), "SplicedRows::grad");
  // rows inside a larger allocation are fine, and the model is unharmed by the refusals
  DeviceBuffer<float> big(4 * count * c);
  auto ok = step(positions.data(), big.get() + count * c, grad.get());
  EXPECT_TRUE(ok.ok()) << ok.status().message();
  auto again = step(positions.data(), rows.get(), nullptr);
  EXPECT_TRUE(again.ok()) << again.status().message();
  cudaFree(device_positions);
}

// No GPU needed: the CUDA model's splice as its kernels' CPU twins compose it
// (cuda_cpu_model.h: the lookup, then the rows written over it; the rows' gradient gathered
// out of the stream's, the buckets leaving those positions out) against the trainer's CPU model
// and its own splice, the parameters mapped by name as for the GPU; no loss mask (the twin has
// none). The loss, every tensor's gradient and the rows' gradient within 1e-4 (fp32).
TEST(CudaSplicedTwins, MatchTheTrainerModel) {
  for (const char* preset : {"llama-tiny", "gpt-tiny"}) {
    SCOPED_TRACE(preset);
    const train::ModelConfig config = Config(preset);
    const int c = static_cast<int>(config.hidden), count = static_cast<int>(kPositions.size());
    auto shard = ModelShard::Make(config, {});
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    const testing::CpuModel twin(SpecOfShard(config, *shard), kB, kT);
    auto spans = MapOntoTrainer(twin.layout(), shard->layout());
    ASSERT_TRUE(spans.ok()) << spans.status().message();
    cpu::Model<float> ref(config, kB, kT);
    const std::vector<float> params = InitParameters(config, ref.layout(), 8);
    std::copy(params.begin(), params.end(), ref.params().begin());
    std::fill(ref.grads().begin(), ref.grads().end(), 0.0f);
    std::vector<float> twin_params(twin.layout().total(), 0.0f);
    for (const TensorSpan& s : *spans)
      std::copy_n(params.begin() + s.host, s.numel, twin_params.begin() + s.gpu);
    const Data d = MakeData(static_cast<int>(config.vocab));
    const std::vector<float> rows = RandomVector(count * c, 0.05f, 9);
    const float scale = 1.0f / (kB * kT);

    std::vector<int64_t> pos64(kPositions.begin(), kPositions.end());
    std::vector<float> want_drows(count * c, 0.0f);
    cpu::SplicedRows<float> s{pos64.data(), count, rows.data(), want_drows.data()};
    double want_loss = 0;
    int64_t counted = 0;
    ref.ForwardBackward(d.tokens.data(), d.targets.data(), nullptr, kB, kT, scale, &want_loss,
                        &counted, &s);

    std::vector<float> twin_grads(twin.layout().total(), 0.0f), drows(count * c, -1.0f);
    const std::vector<int> tokens(d.tokens.begin(), d.tokens.end());
    const std::vector<int> targets(d.targets.begin(), d.targets.end());
    const double loss = twin.ForwardBackward(twin_params, tokens, targets, scale, &twin_grads,
                                             {kPositions.data(), count, rows.data(), drows.data()});
    EXPECT_NEAR(loss, want_loss, 1e-5 * want_loss);
    std::vector<float> grads(params.size(), 0.0f);
    for (const TensorSpan& sp : *spans)
      std::copy_n(twin_grads.begin() + sp.gpu, sp.numel, grads.begin() + sp.host);
    EXPECT_LT(WorstTensorError(ref.layout(), grads, ref.grads(), "twins"), 1e-4);
    EXPECT_LT(RelativeError(drows, want_drows), 1e-4);
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, CudaSplicedTest, ::testing::Values("llama-tiny", "gpt-tiny"));

}  // namespace
}  // namespace bm::train::cuda
