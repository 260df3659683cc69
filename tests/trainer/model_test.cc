// The whole model on the CPU: finite-difference gradients (double) for both
// families, and the float backend's behaviour (overfitting, accumulation,
// determinism).
#include "trainer/cpu/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "tests/trainer/gradcheck.h"
#include "trainer/backend.h"
#include "trainer/model/layout.h"

namespace bm::train::cpu {
namespace {

ModelConfig Tiny(const char* preset) {
  ModelConfig c = *Preset(preset);
  c.vocab = 11;
  c.hidden = 8;
  c.layers = 2;
  c.heads = 2;
  c.kv_heads = c.family == Family::kLlama ? 1 : 2;  // grouped-query for llama
  c.ffn_hidden = c.family == Family::kLlama ? 12 : 32;
  c.max_seq = 6;
  return c;
}

void CheckWholeModel(const ModelConfig& config) {
  const int64_t B = 2, T = 5;
  Model<double> model(config, B, T);
  std::vector<float> init = InitParameters(config, model.layout(), 3);
  // larger weights than the 0.02 init, so every path carries signal
  for (size_t i = 0; i < init.size(); ++i)
    model.params()[i] = init[i] * 10.0 + 0.05 * NormalAt(9, 9, i);
  std::vector<int32_t> inputs = {1, 4, 2, 9, 0, 3, 3, 10, 5, 7};
  std::vector<int32_t> targets = {4, 2, 9, 0, 6, 3, 10, 5, 7, 1};
  std::vector<uint8_t> mask = {1, 1, 0, 1, 1, 0, 1, 1, 1, 1};
  const double scale = 0.37;
  double sum = 0;
  int64_t count = 0;
  model.ForwardBackward(inputs.data(), targets.data(), mask.data(), B, T, scale, &sum, &count);
  EXPECT_EQ(count, 8);
  std::vector<double> analytic = model.grads();
  std::vector<double> losses(B * T);
  auto f = [&] {
    model.TokenLosses(inputs.data(), targets.data(), B, T, losses.data());
    double s = 0;
    for (int64_t n = 0; n < B * T; ++n) s += mask[n] ? scale * losses[n] : 0.0;
    return s;
  };
  for (const ParamTensor& t : model.layout().tensors()) {
    std::vector<double> x(model.params().begin() + t.offset,
                          model.params().begin() + t.offset + t.numel);
    std::vector<double> g(analytic.begin() + t.offset, analytic.begin() + t.offset + t.numel);
    auto ft = [&] {
      std::copy(x.begin(), x.end(), model.params().begin() + t.offset);
      return f();
    };
    testing::ExpectGradientMatches(x, g, ft, t.name.c_str(), 1e-6, 60);
    std::copy(x.begin(), x.end(), model.params().begin() + t.offset);
  }
}

TEST(ModelGradCheck, Llama) { CheckWholeModel(Tiny("llama-tiny")); }
TEST(ModelGradCheck, Gpt) { CheckWholeModel(Tiny("gpt-tiny")); }
TEST(ModelGradCheck, LlamaTiedEmbeddings) {
  ModelConfig c = Tiny("llama-tiny");
  c.tied_embeddings = true;
  CheckWholeModel(c);
}

// Spliced rows (LLaVA's image features) in place of the lookup at positions 1, 2 and 7: every
// parameter's gradient and the rows' own gradient against finite differences of the loss.
void CheckSplicedRows(const ModelConfig& config) {
  const int64_t B = 2, T = 5, C = config.hidden;
  Model<double> model(config, B, T);
  std::vector<float> init = InitParameters(config, model.layout(), 3);
  for (size_t i = 0; i < init.size(); ++i)
    model.params()[i] = init[i] * 10.0 + 0.05 * NormalAt(9, 9, i);
  std::vector<int32_t> inputs = {1, 0, 0, 9, 0, 3, 3, 0, 5, 7};
  std::vector<int32_t> targets = {4, 2, 9, 0, 6, 3, 10, 5, 7, 1};
  std::vector<uint8_t> mask = {1, 0, 0, 1, 1, 0, 1, 0, 1, 1};
  const std::vector<int64_t> positions = {1, 2, 7};
  std::vector<double> rows = testing::RandomVector(3 * C, 5, 0.5), grad(3 * C, -1.0);
  SplicedRows<double> spliced{positions.data(), 3, rows.data(), grad.data()};
  const double scale = 0.37;
  double sum = 0;
  int64_t count = 0;
  model.ForwardBackward(inputs.data(), targets.data(), mask.data(), B, T, scale, &sum, &count,
                        &spliced);
  EXPECT_EQ(count, 6);
  std::vector<double> analytic = model.grads();
  std::vector<double> losses(B * T);
  auto f = [&] {
    model.TokenLosses(inputs.data(), targets.data(), B, T, losses.data(), &spliced);
    double s = 0;
    for (int64_t n = 0; n < B * T; ++n) s += mask[n] ? scale * losses[n] : 0.0;
    return s;
  };
  for (const ParamTensor& t : model.layout().tensors()) {
    std::vector<double> x(model.params().begin() + t.offset,
                          model.params().begin() + t.offset + t.numel);
    std::vector<double> g(analytic.begin() + t.offset, analytic.begin() + t.offset + t.numel);
    auto ft = [&] {
      std::copy(x.begin(), x.end(), model.params().begin() + t.offset);
      return f();
    };
    testing::ExpectGradientMatches(x, g, ft, t.name.c_str(), 1e-6, 60);
    std::copy(x.begin(), x.end(), model.params().begin() + t.offset);
  }
  const std::vector<double> saved = rows;
  auto fr = [&] { return f(); };  // f reads `rows` through spliced.rows
  testing::ExpectGradientMatches(rows, grad, fr, "spliced rows", 1e-6, 400);
  EXPECT_EQ(rows, saved);
}

TEST(ModelGradCheck, LlamaSplicedRows) { CheckSplicedRows(Tiny("llama-tiny")); }
TEST(ModelGradCheck, GptSplicedRows) { CheckSplicedRows(Tiny("gpt-tiny")); }

// Rows equal to the token embedding of the ids at their positions give the plain model's loss
// bit for bit, and gradients that add up to the plain ones: the rows' gradients are what the
// plain model's embedding got from those positions. No rows (count 0): the plain model's bits.
TEST(ModelSplicedRows, LookupRowsGiveThePlainModel) {
  const ModelConfig config = Tiny("llama-tiny");
  const int64_t B = 2, T = 5, C = config.hidden;
  std::vector<int32_t> inputs = {1, 4, 2, 9, 0, 3, 3, 10, 5, 7};
  std::vector<int32_t> targets = {4, 2, 9, 0, 6, 3, 10, 5, 7, 1};
  const std::vector<int64_t> positions = {2, 6, 7};
  auto run = [&](Model<float>& m, const SplicedRows<float>* spliced, double* sum) {
    std::vector<float> init = InitParameters(config, m.layout(), 3);
    std::copy(init.begin(), init.end(), m.params().begin());
    std::fill(m.grads().begin(), m.grads().end(), 0.0f);
    int64_t count = 0;
    m.ForwardBackward(inputs.data(), targets.data(), nullptr, B, T, 0.1f, sum, &count, spliced);
  };
  Model<float> plain(config, B, T), empty(config, B, T), lookup(config, B, T);
  double plain_sum = 0, empty_sum = 0, lookup_sum = 0;
  run(plain, nullptr, &plain_sum);
  SplicedRows<float> none{positions.data(), 0, nullptr, nullptr};
  run(empty, &none, &empty_sum);
  EXPECT_EQ(empty_sum, plain_sum);
  EXPECT_EQ(empty.grads(), plain.grads());
  const ParamTensor* wte = plain.layout().Find("model.embed_tokens.weight");
  std::vector<float> rows(3 * C), grad(3 * C);
  for (int i = 0; i < 3; ++i)
    for (int64_t k = 0; k < C; ++k)
      rows[i * C + k] = plain.params()[wte->offset + inputs[positions[i]] * C + k];
  SplicedRows<float> same{positions.data(), 3, rows.data(), grad.data()};
  run(lookup, &same, &lookup_sum);
  EXPECT_EQ(lookup_sum, plain_sum);
  std::vector<float> g = lookup.grads();
  for (int i = 0; i < 3; ++i)
    for (int64_t k = 0; k < C; ++k)
      g[wte->offset + inputs[positions[i]] * C + k] += grad[i * C + k];
  double worst = 0, norm = 0;
  for (size_t j = 0; j < g.size(); ++j)
    worst = std::max(worst, std::abs(static_cast<double>(g[j]) - plain.grads()[j]));
  for (float x : grad) norm += std::abs(x);
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(norm, 0.0);
  // outside the embedding, exactly the plain gradients
  for (size_t j = wte->offset + wte->numel; j < g.size(); ++j)
    ASSERT_EQ(lookup.grads()[j], plain.grads()[j]) << j;
}

// The float model with spliced rows against the same model in float64: the loss, every
// parameter's gradient and the rows' gradient agree to float rounding (a relative 1e-4 of
// each tensor's largest value); llama and gpt (learned positions added to the rows).
void CheckSplicedFloatAgainstDouble(const ModelConfig& config) {
  const int64_t B = 2, T = 5, C = config.hidden;
  Model<float> f32(config, B, T);
  Model<double> f64(config, B, T);
  std::vector<float> init = InitParameters(config, f32.layout(), 4);
  for (size_t i = 0; i < init.size(); ++i) {
    f32.params()[i] = init[i] * 10.0f;
    f64.params()[i] = static_cast<double>(f32.params()[i]);
  }
  std::vector<int32_t> inputs = {1, 0, 0, 9, 0, 3, 3, 0, 5, 7};
  std::vector<int32_t> targets = {4, 2, 9, 0, 6, 3, 10, 5, 7, 1};
  std::vector<uint8_t> mask = {1, 0, 1, 1, 1, 0, 1, 0, 1, 1};
  const std::vector<int64_t> positions = {1, 2, 4, 7};
  std::vector<float> rows32 = testing::RandomFloats(4 * C, 8, 0.5), grad32(4 * C);
  std::vector<double> rows64(rows32.begin(), rows32.end()), grad64(4 * C);
  SplicedRows<float> s32{positions.data(), 4, rows32.data(), grad32.data()};
  SplicedRows<double> s64{positions.data(), 4, rows64.data(), grad64.data()};
  double sum32 = 0, sum64 = 0;
  int64_t n32 = 0, n64 = 0;
  f32.ForwardBackward(inputs.data(), targets.data(), mask.data(), B, T, 0.5f, &sum32, &n32, &s32);
  f64.ForwardBackward(inputs.data(), targets.data(), mask.data(), B, T, 0.5, &sum64, &n64, &s64);
  EXPECT_EQ(n32, 7);
  EXPECT_EQ(n64, 7);
  EXPECT_NEAR(sum32, sum64, 1e-5 * std::abs(sum64));
  auto expect_close = [](const float* a, const double* b, int64_t n, const std::string& what) {
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(b[i]));
    for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_GT(scale, 0.0) << what;
    EXPECT_LE(worst, 1e-4 * scale) << what;
  };
  for (const ParamTensor& t : f32.layout().tensors())
    expect_close(f32.grads().data() + t.offset, f64.grads().data() + t.offset, t.numel, t.name);
  expect_close(grad32.data(), grad64.data(), 4 * C, "spliced rows");
}

TEST(ModelSplicedRows, FloatMatchesDoubleLlama) {
  CheckSplicedFloatAgainstDouble(Tiny("llama-tiny"));
}
TEST(ModelSplicedRows, FloatMatchesDoubleGpt) { CheckSplicedFloatAgainstDouble(Tiny("gpt-tiny")); }

// SetParametersFrom gives SetParameters' bits; GetParameters into an empty span keeps nothing;
// a wrong size is refused.
TEST(CpuBackendTest, ParametersFromASourceAndAGatherThatKeepsNothing) {
  ModelConfig c = *Preset("llama-tiny");
  const ParamLayout layout(c);
  BackendOptions o;
  o.max_batch = 1;
  o.max_seq = 8;
  std::vector<float> from_buffer(layout.total()), from_source(layout.total());
  for (bool sourced : {false, true}) {
    std::unique_ptr<Backend> b = std::move(*CreateBackend("cpu"));
    ASSERT_TRUE(b->Init(c, o).ok());
    Status set = sourced ? b->SetParametersFrom(InitialParameters(c, layout, 4))
                         : b->SetParameters(InitParameters(c, layout, 4));
    ASSERT_TRUE(set.ok()) << set.message();
    EXPECT_TRUE(b->GetParameters({}).ok());
    ASSERT_TRUE(b->GetParameters(sourced ? from_source : from_buffer).ok());
    std::vector<float> short_buffer(3);
    EXPECT_EQ(b->GetParameters(short_buffer).code(), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(from_source, from_buffer);
  EXPECT_EQ(from_source, InitParameters(c, layout, 4));
  std::unique_ptr<Backend> fresh = std::move(*CreateBackend("cpu"));
  EXPECT_EQ(fresh->SetParametersFrom(InitialParameters(c, layout, 4)).code(), ErrorCode::kInternal);
}

// x rounded to bf16 (8 significant bits), to nearest with ties to even, from its binade:
// nearbyint in units of the last place (the default rounding mode is to nearest even) — not
// from the bits, as trainer/dist/bf16.h rounds.
float RoundedToBf16(float x) {
  if (x == 0.0f || !std::isfinite(x)) return x;
  const double ulp = std::ldexp(1.0, std::max(std::ilogb(x), -126) - 7);  // subnormals: 2^-133
  return static_cast<float>(std::nearbyint(static_cast<double>(x) / ulp) * ulp);
}

// Gradients summed in bf16 on one rank (grad_reduce = "bf16", the cuda backend's option too):
// the reduced gradients are the fp32 reduction's rounded to bf16, element for element, at ZeRO
// 0 and 1 (whose full gradients one rank reads back); the rounding reference at hand-picked
// ties first.
TEST(CpuBackendTest, Bf16GradientReductionRoundsTheGradients) {
  EXPECT_EQ(RoundedToBf16(1.0f + 0x1p-8f), 1.0f);                // a tie, to even (down)
  EXPECT_EQ(RoundedToBf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);  // a tie, to even (up)
  EXPECT_EQ(RoundedToBf16(-(1.0f + 0x1p-7f + 0x1p-9f)), -(1.0f + 0x1p-7f));
  ModelConfig c = *Preset("llama-tiny");
  const ParamLayout layout(c);
  std::vector<int32_t> in(2 * 8), tgt(2 * 8);
  for (int i = 0; i < 16; ++i) in[i] = (i * 37) % 512, tgt[i] = (i * 53 + 5) % 512;
  const MicroBatch batch{in.data(), tgt.data(), nullptr, 2, 8};
  for (int zero : {0, 1}) {
    std::vector<float> g[2];
    for (bool bf16 : {false, true}) {
      Result<std::unique_ptr<Backend>> b = CreateBackend("cpu");
      ASSERT_TRUE(b.ok());
      BackendOptions o;
      o.max_batch = 2, o.max_seq = 8, o.zero = zero, o.threads = 1;
      o.grad_reduce_bf16 = bf16;
      ASSERT_TRUE((*b)->Init(c, o).ok());
      ASSERT_TRUE((*b)->SetParameters(InitParameters(c, layout, 4)).ok());
      ASSERT_TRUE((*b)->ZeroGrad().ok());
      ASSERT_TRUE((*b)->ForwardBackward(batch, 1.0f / 16).ok());
      g[bf16].assign(layout.total(), 0.0f);
      ASSERT_TRUE((*b)->GetGradients(g[bf16]).ok());
    }
    EXPECT_NE(g[0], g[1]) << "zero " << zero << ": the rounding changes some gradient";
    size_t differ = 0;
    for (size_t i = 0; i < g[0].size(); ++i) differ += g[1][i] != RoundedToBf16(g[0][i]);
    EXPECT_EQ(differ, 0u) << "zero " << zero;
  }
}

TEST(CpuBackendTest, LastTokenArgmaxMatchesAllPositions) {
  ModelConfig c = *Preset("llama-tiny");
  Result<std::unique_ptr<Backend>> b = CreateBackend("cpu");
  ASSERT_TRUE(b.ok());
  BackendOptions o;
  o.max_batch = 3;
  o.max_seq = 8;
  ASSERT_TRUE((*b)->Init(c, o).ok());
  ASSERT_TRUE((*b)->SetParameters(InitParameters(c, ParamLayout(c), 4)).ok());
  std::vector<int32_t> inputs(24);
  for (int i = 0; i < 24; ++i) inputs[i] = (i * 37) % 512;
  std::vector<int32_t> all(24), last(3);
  std::vector<int64_t> lengths = {8, 1, 5};
  ASSERT_TRUE((*b)->NextTokenArgmax(inputs.data(), 3, 8, all.data()).ok());
  ASSERT_TRUE((*b)->LastTokenArgmax(inputs.data(), lengths.data(), 3, 8, last.data()).ok());
  for (int r = 0; r < 3; ++r) EXPECT_EQ(last[r], all[r * 8 + lengths[r] - 1]) << r;
  // the base class's default gives the same
  std::vector<int32_t> base(3);
  ASSERT_TRUE(
      (*b)->Backend::LastTokenArgmax(inputs.data(), lengths.data(), 3, 8, base.data()).ok());
  EXPECT_EQ(base, last);
  lengths[1] = 0;
  EXPECT_FALSE((*b)->LastTokenArgmax(inputs.data(), lengths.data(), 3, 8, last.data()).ok());
  inputs[3] = 512;  // outside the vocabulary
  EXPECT_EQ((*b)->NextTokenArgmax(inputs.data(), 3, 8, all.data()).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CreateBackend("tpu").status().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace bm::train::cpu
