// The CUDA backend through the trainer's Backend interface, against the CPU reference backend
// (the oracle), on small models of both families:
//  - one step: the loss and every tensor's gradient (relative L2 error per tensor: fp32 below
//    1e-4, bf16 and fp16 below 5e-2), with a loss mask; fp16 on loss x 1024, unscaled after;
//  - 50 steps of AdamW with clipping: the bf16 and fp16 loss curves track the CPU one (mean
//    relative difference over steps 21-50 below 2%, every step below 5%);
//  - token losses and greedy next tokens agree; bit-identical reruns; resume from parameters
//    and AdamW state equals running through.
// GPU tests skip, saying so, on a machine without a GPU.
#include <cublas_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <span>

#include "tests/trainer/cuda_test_util.h"
#include "trainer/backend.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/host_staging.h"
#include "trainer/model/layout.h"
#include "trainer/platform.h"

namespace bm::train {
namespace {

struct Case {
  std::string name;
  std::string preset;
  nlohmann::json overrides;
};

ModelConfig Config(const Case& c) {
  ModelConfig m = *Preset(c.preset);
  auto r = ApplyOverrides(m, c.overrides);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

constexpr int64_t kB = 2, kT = 64;

std::unique_ptr<Backend> Make(const std::string& device, const ModelConfig& m, Precision p) {
  auto b = CreateBackend(device);
  EXPECT_TRUE(b.ok()) << b.status().message();
  BackendOptions o;
  o.max_batch = kB, o.max_seq = kT, o.precision = p;
  auto st = (*b)->Init(m, o);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::move(*b);
}

// A CUDA backend of `m` with bf16 work at `zero`, gradient sums in bf16 or fp32, planned for
// `micro` micro-batches a step, its parameters InitParameters(m, layout, 9); null (a test
// failure recorded) when it cannot be made.
std::unique_ptr<Backend> Bf16Work(const ModelConfig& m, int zero, bool bf16_sums, int micro) {
  auto b = CreateBackend("cuda");
  EXPECT_TRUE(b.ok()) << b.status().message();
  if (!b.ok()) return nullptr;
  BackendOptions o;
  o.max_batch = kB, o.max_seq = kT, o.precision = Precision::kBf16, o.zero = zero;
  o.grad_reduce_bf16 = bf16_sums;
  o.micro_batches = micro;
  Status st = (*b)->Init(m, o);
  if (st.ok()) st = (*b)->SetParameters(InitParameters(m, ParamLayout(m), 9));
  EXPECT_TRUE(st.ok()) << st.message();
  return st.ok() ? std::move(*b) : nullptr;
}

struct Data {
  std::vector<int32_t> in, tgt;
  std::vector<uint8_t> mask;
  MicroBatch Batch() const { return {in.data(), tgt.data(), mask.data(), kB, kT}; }
};
Data MakeData(int64_t vocab, int which) {
  Data d;
  std::mt19937 rng(77 + which);
  for (int64_t i = 0; i < kB * kT; ++i)
    d.in.push_back(int32_t((i * 5 + which + rng() % 2) % vocab));
  for (int64_t i = 0; i < kB * kT; ++i) d.tgt.push_back(d.in[(i + 1) % d.in.size()]);
  for (int64_t i = 0; i < kB * kT; ++i) d.mask.push_back(i % kT < 8 ? 0 : 1);  // a "prompt"
  return d;
}

float LossScale(Precision p) { return p == Precision::kFp16 ? 1024.0f : 1.0f; }

class CudaBackendTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { BM_SKIP_WITHOUT_GPU(); }
};

TEST_P(CudaBackendTest, OneStepMatchesCpu) {
  ModelConfig m = Config(GetParam());
  ParamLayout layout(m);
  auto init = InitParameters(m, layout, 42);
  Data d = MakeData(m.vocab, 0);
  auto cpu = Make("cpu", m, Precision::kFp32);
  ASSERT_TRUE(cpu->SetParameters(init).ok());
  ASSERT_TRUE(cpu->ZeroGrad().ok());
  auto cl = cpu->ForwardBackward(d.Batch(), 1.0f / 112);
  ASSERT_TRUE(cl.ok());
  std::vector<float> want(layout.total());
  ASSERT_TRUE(cpu->GetGradients(want).ok());
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    const float loss_scale = LossScale(p);
    auto gpu = Make("cuda", m, p);
    ASSERT_TRUE(gpu->SetParameters(init).ok());
    std::vector<float> back(layout.total());
    ASSERT_TRUE(gpu->GetParameters(back).ok());
    EXPECT_EQ(back, init) << "parameters must round-trip through the GPU layout";
    ASSERT_TRUE(gpu->ZeroGrad().ok());
    auto gl = gpu->ForwardBackward(d.Batch(), loss_scale / 112);
    ASSERT_TRUE(gl.ok()) << gl.status().message();
    EXPECT_EQ(gl->count, cl->count);
    bool lowp = p != Precision::kFp32;  // bf16 or fp16
    const std::string name(PrecisionName(p));
    EXPECT_NEAR(gl->sum, cl->sum, (lowp ? 1e-2 : 1e-5) * cl->sum);
    std::vector<float> got(layout.total());
    ASSERT_TRUE(gpu->GetGradients(got).ok());
    for (float& x : got) x /= loss_scale;
    for (const ParamTensor& t : layout.tensors()) {
      std::vector<float> g(got.begin() + t.offset, got.begin() + t.offset + t.numel);
      std::vector<float> w(want.begin() + t.offset, want.begin() + t.offset + t.numel);
      double e = cuda::testing::RelativeError(g, w);
      EXPECT_LT(e, lowp ? 5e-2 : 1e-4) << t.name << " " << name;
    }
    auto norm = gpu->GradNorm();
    ASSERT_TRUE(norm.ok());
    double want_norm = 0;
    for (float x : want) want_norm += double(x) * x;
    EXPECT_NEAR(*norm / loss_scale, std::sqrt(want_norm),
                (lowp ? 3e-2 : 1e-5) * std::sqrt(want_norm))
        << name;
    // Token losses and greedy tokens.
    std::vector<float> tl(kB * kT), tl_cpu(kB * kT);
    ASSERT_TRUE(gpu->TokenLosses(d.Batch(), tl.data()).ok());
    ASSERT_TRUE(cpu->TokenLosses(d.Batch(), tl_cpu.data()).ok());
    EXPECT_LT(cuda::testing::RelativeError(tl, tl_cpu), lowp ? 2e-2 : 1e-5);
    std::vector<int32_t> am(kB * kT), am_cpu(kB * kT);
    ASSERT_TRUE(gpu->NextTokenArgmax(d.in.data(), kB, kT, am.data()).ok());
    ASSERT_TRUE(cpu->NextTokenArgmax(d.in.data(), kB, kT, am_cpu.data()).ok());
    int same = 0;
    for (size_t i = 0; i < am.size(); ++i) same += am[i] == am_cpu[i];
    EXPECT_GE(same, lowp ? int(am.size() * 0.9) : int(am.size()) - 1);
  }
}

// fp16 with a static loss scale of 1024 (the loop's dynamic scaler: cuda_train_loop_test.cc).
std::vector<double> Train(Backend* b, const ModelConfig& m, int first, int steps, float lr = 3e-3f,
                          float loss_scale = 1.0f) {
  std::vector<double> losses;
  for (int s = first; s < first + steps; ++s) {
    Data d = MakeData(m.vocab, s % 2);
    EXPECT_TRUE(b->ZeroGrad().ok());
    auto l = b->ForwardBackward(d.Batch(), loss_scale / 112);
    EXPECT_TRUE(l.ok()) << l.status().message();
    AdamWStep st;
    st.lr = lr, st.step = s + 1, st.grad_clip = 1.0f, st.grad_scale = 1.0f / loss_scale;
    EXPECT_TRUE(b->OptimizerStep(st).ok());
    losses.push_back(l.ok() ? l->sum / l->count : NAN);
  }
  return losses;
}

// Mean relative difference over steps 21-50 and the worst step.
std::pair<double, double> Compare(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0, worst = 0;
  for (size_t s = 0; s < a.size(); ++s) {
    double rel = std::abs(b[s] - a[s]) / a[s];
    if (s >= 20) sum += rel;
    worst = std::max(worst, rel);
  }
  return {sum / (a.size() - 20), worst};
}

// At lr 1e-3, fp32 on the GPU follows the CPU within 0.1% and bf16 within the suites' loss-
// alignment rule (2% mean from step 21). At lr 3e-3 (reported, not checked) the small llama run
// is chaotic enough that bf16 rounding moves its curve by more: see docs/PERFORMANCE.md.
TEST_P(CudaBackendTest, FiftyStepsTrackCpu) {
  ModelConfig m = Config(GetParam());
  ParamLayout layout(m);
  auto init = InitParameters(m, layout, 43);
  struct Run {
    Precision p;
    float lr;
    bool checked;
  };
  for (Run r : {Run{Precision::kFp32, 1e-3f, true}, Run{Precision::kBf16, 1e-3f, true},
                Run{Precision::kFp16, 1e-3f, true}, Run{Precision::kBf16, 3e-3f, false},
                Run{Precision::kFp16, 3e-3f, false}}) {
    Precision p = r.p;
    float lr = r.lr;
    auto cpu = Make("cpu", m, Precision::kFp32);
    auto gpu = Make("cuda", m, p);
    ASSERT_TRUE(cpu->SetParameters(init).ok());
    ASSERT_TRUE(gpu->SetParameters(init).ok());
    auto a = Train(cpu.get(), m, 0, 50, lr), b = Train(gpu.get(), m, 0, 50, lr, LossScale(p));
    auto [mean, worst] = Compare(a, b);
    bool lowp = p != Precision::kFp32;  // bf16 or fp16
    std::printf(
        "  %s %s lr %g: cpu %.4f -> %.4f, cuda %.4f -> %.4f; mean rel diff 21-50 %.5f, "
        "worst %.5f\n",
        GetParam().name.c_str(), std::string(PrecisionName(p)).c_str(), lr, a[0], a[49], b[0],
        b[49], mean, worst);
    if (!r.checked) continue;  // reported only
    EXPECT_LT(mean, lowp ? 0.02 : 1e-3) << PrecisionName(p);
    EXPECT_LT(worst, lowp ? 0.05 : 5e-3) << PrecisionName(p);
  }
}

TEST_P(CudaBackendTest, RerunAndResumeAreBitIdentical) {
  ModelConfig m = Config(GetParam());
  ParamLayout layout(m);
  auto init = InitParameters(m, layout, 44);
  auto run = [&](int steps) {
    auto g = Make("cuda", m, Precision::kBf16);
    EXPECT_TRUE(g->SetParameters(init).ok());
    auto l = Train(g.get(), m, 0, steps);
    return std::make_pair(std::move(g), l);
  };
  auto [g1, l1] = run(6);
  auto [g2, l2] = run(6);
  EXPECT_EQ(l1, l2);
  std::vector<float> p1(layout.total()), p2(layout.total());
  ASSERT_TRUE(g1->GetParameters(p1).ok());
  ASSERT_TRUE(g2->GetParameters(p2).ok());
  EXPECT_EQ(0, std::memcmp(p1.data(), p2.data(), p1.size() * 4));
  // Kill after 3 steps, resume in a fresh backend.
  auto [g3, l3] = run(3);
  std::vector<float> p(layout.total()), mm(layout.total()), vv(layout.total());
  ASSERT_TRUE(g3->GetParameters(p).ok());
  ASSERT_TRUE(g3->GetOptimizerState(mm, vv).ok());
  g3.reset();
  auto g4 = Make("cuda", m, Precision::kBf16);
  ASSERT_TRUE(g4->SetParameters(p).ok());
  ASSERT_TRUE(g4->SetOptimizerState(mm, vv).ok());
  auto rest = Train(g4.get(), m, 3, 3);
  l3.insert(l3.end(), rest.begin(), rest.end());
  EXPECT_EQ(l3, l1);
  std::vector<float> p4(layout.total());
  ASSERT_TRUE(g4->GetParameters(p4).ok());
  EXPECT_EQ(0, std::memcmp(p4.data(), p1.data(), p1.size() * 4));
}

INSTANTIATE_TEST_SUITE_P(
    Models, CudaBackendTest,
    ::testing::Values(Case{"gpt_tiny", "gpt-tiny", nlohmann::json::object()},
                      Case{"llama_tiny", "llama-tiny", nlohmann::json::object()},
                      Case{"gpt_d64", "gpt-tiny", {{"hidden", 128}, {"heads", 2}}},
                      Case{"llama_d64_gqa",
                           "llama-tiny",
                           {{"hidden", 256}, {"heads", 4}, {"kv_heads", 2}, {"ffn_hidden", 512}}}),
    [](const auto& info) { return info.param.name; });

// Parameters from a source (a fresh run draws only what the rank keeps) are SetParameters'
// bits at every ZeRO stage of a world of one, in fp32 and in bf16 (whose zero 0 splits the
// masters); GetParameters into an empty span takes part and keeps nothing.
TEST(CudaBackend, ParametersFromASourceAtEveryZeroStage) {
  BM_SKIP_WITHOUT_GPU();
  ModelConfig m = *Preset("llama-tiny");
  const ParamLayout layout(m);
  const std::vector<float> want = InitParameters(m, layout, 9);
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    for (int zero = 0; zero <= 3; ++zero) {
      SCOPED_TRACE(fmt::format("{} zero {}", PrecisionName(p), zero));
      auto b = CreateBackend("cuda");
      ASSERT_TRUE(b.ok());
      BackendOptions o;
      o.max_batch = kB, o.max_seq = kT, o.precision = p, o.zero = zero;
      ASSERT_TRUE((*b)->Init(m, o).ok());
      Status set = (*b)->SetParametersFrom(InitialParameters(m, layout, 9));
      ASSERT_TRUE(set.ok()) << set.message();
      EXPECT_TRUE((*b)->GetParameters({}).ok());
      std::vector<float> got(layout.total(), -1.0f);
      ASSERT_TRUE((*b)->GetParameters(got).ok());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4));
    }
  }
}

// BackendOptions::attention_backward: cuDNN's deterministic backward over blocks of keys (128 of
// 256 here: at most half the sequence) or in one call, as asked, and the plan says which. Both
// are the gradients of the same step (the forward is the same call; the backward adds dQ in
// another order), and a run that does not take cuDNN's attention refuses the option.
TEST(CudaBackend, AttentionBackwardRunsAsAsked) {
  BM_SKIP_WITHOUT_GPU();
  if (!cuda::CudnnAttentionBuilt()) GTEST_SKIP() << "this build has no cuDNN";
  auto tiny = ApplyOverrides(*Preset("llama-tiny"), {{"max_seq", 256}});
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  const ModelConfig m = *tiny;
  const ParamLayout layout(m);
  constexpr int64_t kLong = 256;
  std::vector<int32_t> in(kB * kLong), tgt(kB * kLong);
  std::vector<uint8_t> mask(kB * kLong, 1);
  std::mt19937 rng(5);
  for (size_t i = 0; i < in.size(); ++i) in[i] = rng() % m.vocab, tgt[i] = rng() % m.vocab;
  auto options = [&](const char* attention, const char* backward, Precision p) {
    BackendOptions o;
    o.max_batch = kB, o.max_seq = kLong, o.precision = p;
    o.attention = attention, o.attention_backward = backward;
    return o;
  };
  std::vector<float> grads[2];
  double loss[2] = {0, 0};
  const char* ways[2] = {"blocks", "one_call"};
  for (int w = 0; w < 2; ++w) {
    SCOPED_TRACE(ways[w]);
    auto b = CreateBackend("cuda");
    ASSERT_TRUE(b.ok());
    Status st = (*b)->Init(m, options("auto", ways[w], Precision::kBf16));
    ASSERT_TRUE(st.ok()) << st.message();
    const std::string plan = (*b)->Memory().plan;
    EXPECT_NE(plan.find(fmt::format("cuDNN's attention backward: {} of the 256 keys a call",
                                    w == 0 ? 128 : 256)),
              std::string::npos)
        << plan;
    ASSERT_TRUE((*b)->SetParameters(InitParameters(m, layout, 9)).ok());
    ASSERT_TRUE((*b)->ZeroGrad().ok());
    auto l = (*b)->ForwardBackward({in.data(), tgt.data(), mask.data(), kB, kLong}, 1.0f);
    ASSERT_TRUE(l.ok()) << l.status().message();
    loss[w] = l->sum;
    grads[w].assign(layout.total(), 0.0f);
    ASSERT_TRUE((*b)->GetGradients(grads[w]).ok());
  }
  EXPECT_EQ(loss[0], loss[1]) << "the same forward";
  EXPECT_LT(cuda::testing::RelativeError(grads[1], grads[0]), 1e-2);
  for (auto [attention, p] :
       {std::pair{"flash", Precision::kBf16}, std::pair{"auto", Precision::kFp32}}) {
    auto b = CreateBackend("cuda");
    ASSERT_TRUE(b.ok());
    Status st = (*b)->Init(m, options(attention, "one_call", p));
    EXPECT_FALSE(st.ok()) << attention;
    EXPECT_NE(
        st.message().find("attention_backward \"one_call\" chooses how cuDNN's attention runs"),
        std::string::npos)
        << st.message();
  }
}

// Gradients reduced in bf16 (BackendOptions::grad_reduce_bf16) on one rank, at ZeRO 0 and 1
// (whose full gradients one rank reads back); the backward itself is the same bits. Planned for
// two micro-batches a step, the backward writes fp32 and the staging rounds it: the reduced
// gradients are the fp32 reduction's rounded on the host (to nearest even), element for element.
// Planned for one, the products write the matrices' gradients in bf16 themselves
// (CudaDataParallel::GradBf16): each is cuBLASLt's fp32 sum rounded once by its
// epilogue, so the host's rounding or, where the bf16-output product sums in another order, its
// bf16 neighbour; the rest (norms, biases, the embeddings' scattered sums, GPT's head tied to
// them) is still the host's rounding.
TEST(CudaBackend, Bf16GradientReductionRoundsTheGradients) {
  BM_SKIP_WITHOUT_GPU();
  for (const char* preset : {"llama-tiny", "gpt-tiny"})
    for (int micro : {2, 1})
      for (int zero : {0, 1}) {
        SCOPED_TRACE(fmt::format("{}, zero {}, {} micro-batch(es) a step", preset, zero, micro));
        ModelConfig m = *Preset(preset);
        const ParamLayout layout(m);
        const Data d = MakeData(m.vocab, 0);
        std::vector<float> g[2];
        for (bool bf16 : {false, true}) {
          auto b = Bf16Work(m, zero, bf16, micro);
          ASSERT_TRUE(b);
          ASSERT_TRUE(b->ZeroGrad().ok());
          auto loss = b->ForwardBackward(d.Batch(), 1.0f);
          ASSERT_TRUE(loss.ok()) << loss.status().message();
          g[bf16].assign(layout.total(), 0.0f);
          ASSERT_TRUE(b->GetGradients(g[bf16]).ok());
        }
        EXPECT_NE(g[0], g[1]) << "the rounding changes some gradient";
        const std::vector<float> want = cuda::testing::Rounded<__nv_bfloat16>(g[0]);
        if (micro == 2) {
          EXPECT_EQ(g[1], want);
          continue;
        }
        int64_t by_products = 0, neighbours = 0;
        for (const ParamTensor& t : layout.tensors()) {
          bool product = t.weight_decay;  // the matrices, but for the embeddings
          for (const char* e : {"embed", "wte", "wpe"})
            product = product && t.name.find(e) == std::string::npos;
          for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
            if (!product || g[1][i] == want[i]) {
              ASSERT_EQ(g[1][i], want[i]) << t.name << " [" << i - t.offset << "]";
              by_products += product;
              continue;
            }
            ++by_products, ++neighbours;
            const float step = std::ldexp(1.0f, std::ilogb(want[i]) - 7);  // one bf16 step there
            ASSERT_LE(std::abs(g[1][i] - want[i]), step) << t.name << " [" << i - t.offset << "]";
          }
        }
        EXPECT_GT(by_products, layout.total() / 2);
        std::printf(
            "note: %s zero %d: %lld of %lld product-written gradients are the bf16 neighbour "
            "of the host's rounding\n",
            preset, zero, static_cast<long long>(neighbours), static_cast<long long>(by_products));
      }
}

// The gradient norm, read from the fp32 sums or, with bf16 sums, added up from the squares the
// reduction summed as it widened them (CudaDataParallel::squares_summed): on one rank, fp32 and
// bf16 sums, one or two micro-batches a step, it is the norm of the gradients read back (ZeRO
// 0-1, summed on the host in double), two steps running (nothing left from the step before);
// ZeRO 2-3, whose own slices are the whole gradient on one rank but cannot be read back, give
// the first step's: the sum of each micro-batch's gradients reduced alone (ZeRO 2-3 reduce every
// micro-batch; bf16 rounds each). After it their weights differ from ZeRO-0's by rounding.
TEST(CudaBackend, ReducedGradientsNormIsTheirNorm) {
  BM_SKIP_WITHOUT_GPU();
  for (const char* preset : {"llama-tiny", "gpt-tiny"})
    for (bool bf16 : {false, true})
      for (int micro : {1, 2}) {
        ModelConfig m = *Preset(preset);
        const ParamLayout layout(m);
        const Data d[2] = {MakeData(m.vocab, 0), MakeData(m.vocab, 1)};
        // Each micro-batch's gradients reduced alone (ZeRO-0, one micro-batch a step), summed.
        std::vector<float> apart(layout.total(), 0.0f);
        for (int k = 0; k < micro; ++k) {
          auto b = Bf16Work(m, 0, bf16, 1);
          ASSERT_TRUE(b);
          ASSERT_TRUE(b->ZeroGrad().ok());
          ASSERT_TRUE(b->ForwardBackward(d[k].Batch(), 1.0f).ok());
          std::vector<float> g(layout.total());
          ASSERT_TRUE(b->GetGradients(g).ok());
          for (size_t i = 0; i < g.size(); ++i) apart[i] += g[i];
        }
        double first = 0;  // ZeRO 2-3's first step's
        for (float x : apart) first += static_cast<double>(x) * x;
        first = std::sqrt(first);
        for (int zero : {0, 1, 2, 3}) {
          SCOPED_TRACE(fmt::format("{}, {} sums, zero {}, {} micro-batch(es) a step", preset,
                                   bf16 ? "bf16" : "fp32", zero, micro));
          auto b = Bf16Work(m, zero, bf16, micro);
          ASSERT_TRUE(b);
          for (int step = 0; step < (zero <= 1 ? 2 : 1); ++step) {
            ASSERT_TRUE(b->ZeroGrad().ok());
            for (int k = 0; k < micro; ++k) {
              MicroBatch mb = d[(step + k) % 2].Batch();
              mb.last = k == micro - 1;
              auto loss = b->ForwardBackward(mb, 1.0f);
              ASSERT_TRUE(loss.ok()) << loss.status().message();
            }
            double want = first;
            if (zero <= 1) {
              std::vector<float> g(layout.total());
              ASSERT_TRUE(b->GetGradients(g).ok());
              double sum = 0;
              for (float x : g) sum += static_cast<double>(x) * x;
              want = std::sqrt(sum);
            }
            Result<float> norm = b->GradNorm();
            ASSERT_TRUE(norm.ok()) << norm.status().message();
            EXPECT_NEAR(*norm, want, 1e-5 * want) << "step " << step;
            AdamWStep st;
            st.lr = 1e-3f, st.step = step + 1, st.grad_clip = 1.0f;
            ASSERT_TRUE(b->OptimizerStep(st).ok());
          }
        }
      }
}

// The bf16 sums kept (one micro-batch a step: AdamW reads them, the norm's squares come from
// them) train as the same sums widened into fp32 slices (planned for two micro-batches a step,
// given one): at ZeRO 2-3, whose products write bf16 gradients either way, the same losses, norms
// and parameters to the bit over three steps.
TEST(CudaBackend, KeptBf16SumsTrainAsTheirWidening) {
  BM_SKIP_WITHOUT_GPU();
  for (const char* preset : {"llama-tiny", "gpt-tiny"})
    for (int zero : {2, 3}) {
      SCOPED_TRACE(fmt::format("{}, zero {}", preset, zero));
      ModelConfig m = *Preset(preset);
      const ParamLayout layout(m);
      const Data d[2] = {MakeData(m.vocab, 0), MakeData(m.vocab, 1)};
      std::vector<double> losses[2];
      std::vector<float> norms[2], params[2];
      for (int planned : {1, 2}) {
        auto b = Bf16Work(m, zero, true, planned);
        ASSERT_TRUE(b);
        for (int step = 0; step < 3; ++step) {
          ASSERT_TRUE(b->ZeroGrad().ok());
          auto loss = b->ForwardBackward(d[step % 2].Batch(), 1.0f);
          ASSERT_TRUE(loss.ok()) << loss.status().message();
          losses[planned - 1].push_back(loss->sum);
          Result<float> norm = b->GradNorm();
          ASSERT_TRUE(norm.ok()) << norm.status().message();
          norms[planned - 1].push_back(*norm);
          AdamWStep st;
          st.lr = 1e-3f, st.step = step + 1, st.grad_clip = 0.5f;
          ASSERT_TRUE(b->OptimizerStep(st).ok());
        }
        params[planned - 1].assign(layout.total(), 0.0f);
        ASSERT_TRUE(b->GetParameters(params[planned - 1]).ok());
      }
      EXPECT_EQ(losses[0], losses[1]);
      EXPECT_EQ(norms[0], norms[1]);
      EXPECT_EQ(0, std::memcmp(params[0].data(), params[1].data(), params[0].size() * 4));
      EXPECT_NE(params[0], InitParameters(m, layout, 9)) << "the steps moved the weights";
    }
}

// ZeroGrad with no micro-batch after it: the norm counts zeros, at every stage, whatever the
// step before wrote (ZeRO 2-3 zero a unit's own slices only where no reduction wrote them).
TEST(CudaBackend, AStepWithoutAMicroBatchHasNoGradient) {
  BM_SKIP_WITHOUT_GPU();
  ModelConfig m = *Preset("llama-tiny");
  const Data d = MakeData(m.vocab, 0);
  for (bool bf16 : {false, true})
    for (int zero : {0, 1, 2, 3}) {
      SCOPED_TRACE(fmt::format("{} sums, zero {}", bf16 ? "bf16" : "fp32", zero));
      auto b = Bf16Work(m, zero, bf16, 1);
      ASSERT_TRUE(b);
      ASSERT_TRUE(b->ZeroGrad().ok());
      ASSERT_TRUE(b->ForwardBackward(d.Batch(), 1.0f).ok());
      Result<float> norm = b->GradNorm();
      ASSERT_TRUE(norm.ok()) << norm.status().message();
      EXPECT_GT(*norm, 0.0f);
      AdamWStep st;
      st.lr = 1e-3f, st.step = 1, st.grad_clip = 1.0f;
      ASSERT_TRUE(b->OptimizerStep(st).ok());
      ASSERT_TRUE(b->ZeroGrad().ok());
      norm = b->GradNorm();
      ASSERT_TRUE(norm.ok()) << norm.status().message();
      EXPECT_EQ(*norm, 0.0f);
    }
}

// The energy counter of the GPU (NVML, which every machine with the driver has): nothing before
// Init; then it names the GPU by its UUID and moves, over 1.5 s of steps, by what a GPU draws
// (above an idle board's, below any board's limit).
TEST(CudaBackend, EnergyCounterMovesWithTheSteps) {
  BM_SKIP_WITHOUT_GPU();
  auto b = CreateBackend("cuda");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE((*b)->ReadEnergy());
  const ModelConfig m =
      Config({"llama",
              "llama-tiny",
              {{"hidden", 256}, {"heads", 4}, {"kv_heads", 2}, {"ffn_hidden", 512}}});
  BackendOptions o;
  o.max_batch = kB, o.max_seq = kT, o.precision = Precision::kBf16;
  ASSERT_TRUE((*b)->Init(m, o).ok());
  ASSERT_TRUE((*b)->SetParametersFrom(InitialParameters(m, ParamLayout(m), 3)).ok());
  const Data d = MakeData(m.vocab, 0);
  const std::optional<EnergyReading> before = (*b)->ReadEnergy();
  ASSERT_TRUE(before) << "no NVML energy counter on a machine with a GPU";
  EXPECT_TRUE(std::regex_match(before->device, std::regex("[0-9a-f]{32}"))) << before->device;
  const auto t0 = std::chrono::steady_clock::now();
  double seconds = 0;
  while (seconds < 1.5) {
    ASSERT_TRUE((*b)->ZeroGrad().ok());
    Result<LossSum> loss = (*b)->ForwardBackward(d.Batch(), 1.0f);
    ASSERT_TRUE(loss.ok()) << loss.status().message();
    ASSERT_TRUE((*b)->GradNorm().ok());
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const std::optional<EnergyReading> after = (*b)->ReadEnergy();
  ASSERT_TRUE(after);
  EXPECT_EQ(after->device, before->device);
  const double watts = (after->joules - before->joules) / seconds;
  EXPECT_GT(watts, 30.0);
  EXPECT_LT(watts, 1500.0);
}

// HostStaging in chunks far smaller than the range: every value arrives where it belongs, the
// source is asked for exactly the range, and the sink gets it in order.
TEST(CudaBackend, HostStagingMovesRangesInChunks) {
  BM_SKIP_WITHOUT_GPU();
  constexpr size_t kN = 1000, kFirst = 37;
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), kN * sizeof(float)), cudaSuccess);
  {
    cuda::HostStaging staging;
    ASSERT_TRUE(staging.Init(nullptr, 7).ok());
    size_t asked = 0, next = kFirst;
    Status up = staging.Upload(
        [&](size_t begin, std::span<float> out) {
          EXPECT_EQ(begin, next);
          next += out.size();
          asked += out.size();
          for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(begin + i);
        },
        kFirst, kN, device);
    ASSERT_TRUE(up.ok()) << up.message();
    EXPECT_EQ(asked, kN);
    std::vector<float> back(kN, -1.0f);
    next = kFirst;
    Status down =
        staging.Download(device, kN, kFirst, [&](size_t begin, std::span<const float> values) {
          EXPECT_EQ(begin, next);
          next += values.size();
          std::copy(values.begin(), values.end(), back.begin() + (begin - kFirst));
        });
    ASSERT_TRUE(down.ok()) << down.message();
    EXPECT_EQ(next, kFirst + kN);
    for (size_t i = 0; i < kN; ++i) ASSERT_EQ(back[i], static_cast<float>(kFirst + i)) << i;
  }
  cudaFree(device);
}

// The platform facts name the cuBLASLt and cuDNN the process loaded (no GPU needed): the same
// major version as the headers built against (the soname), cuDNN only where it is built in.
// A CPU run's record: the GPU libraries are not loaded for it (cuBLASLt alone costs ~0.4 s).
TEST(CudaBackend, ACpuRunsProbeLeavesTheGpuLibrariesOut) {
  const nlohmann::json p = ProbePlatform(/*gpu_libraries=*/false);
  EXPECT_TRUE(p["cublaslt"].is_null()) << p.dump();
  EXPECT_TRUE(p["cudnn"].is_null()) << p.dump();
  EXPECT_TRUE(p["gpus"].is_array()) << p.dump();
}

TEST(CudaBackend, ProbeNamesTheLibrariesLoaded) {
  const nlohmann::json p = ProbePlatform();
  const std::regex version(R"((\d+)\.\d+\.\d+)");
  std::smatch m;
  ASSERT_TRUE(p["cublaslt"].is_string()) << p.dump();
  const std::string lt = p["cublaslt"].get<std::string>();
  ASSERT_TRUE(std::regex_match(lt, m, version)) << lt;
  EXPECT_EQ(std::stoi(m[1]), CUBLAS_VER_MAJOR);
  if (!cuda::CudnnAttentionBuilt()) {
    EXPECT_TRUE(p["cudnn"].is_null()) << p.dump();
    return;
  }
  ASSERT_TRUE(p["cudnn"].is_string()) << p.dump();
  const std::string dnn = p["cudnn"].get<std::string>();
  ASSERT_TRUE(std::regex_match(dnn, m, version)) << dnn;
  EXPECT_GE(std::stoi(m[1]), 9);
}

TEST(CudaBackend, ProbeAndRegistry) {
  auto names = BackendNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
  auto b = CreateBackend("cuda");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->device(), "cuda");
}

}  // namespace
}  // namespace bm::train
