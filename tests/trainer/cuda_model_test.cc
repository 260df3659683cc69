// Whole-model tests of the CUDA backend against the CPU twin of the step (cuda_cpu_model.h):
//  - one step's per-tensor gradients: fp32 within 1e-4 relative, bf16 and fp16 within 5e-2 (per
//    tensor, L2 relative; stated in docs/PERFORMANCE.md); fp16 with a static loss scale of 1024
//    taken out again (the training loop's dynamic scaler is tested through the backend);
//  - 50 AdamW steps: the bf16 and fp16 loss curves track the CPU one (mean relative difference
//    from step 21 on below 2%, the suites' loss-alignment rule; every step within 5%);
//  - bit-identical reruns; recompute equals no recompute bitwise; resuming from saved
//    parameters and AdamW moments equals running through.
// Skips with the reason on machines without a GPU, except the checks that refuse arguments
// before any device is touched (CudaModelChecks).
#include "trainer/cuda/cuda_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "tests/trainer/cuda_cpu_model.h"
#include "tests/trainer/cuda_test_util.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/memory_plan.h"

namespace bm::train::cuda {
namespace {

using testing::CpuModel;
using testing::RelativeError;

constexpr int kBatch = 2, kSeq = 64;

ModelSpec Tiny(const std::string& name) {
  ModelSpec s;
  EXPECT_TRUE(ModelPreset(name, &s));
  return s;
}

// Matrices first, then vectors, each in layout order: the draws do not depend on how the
// layout interleaves them (it tiles by units), so the curves below stay those measured before.
std::vector<float> InitParams(const ParamLayout& layout, uint64_t seed) {
  std::vector<float> p(layout.total(), 0.0f);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.05f);
  for (bool vectors : {false, true}) {
    for (const ParamTensor& t : layout.tensors()) {
      bool vec = t.cols == 1;
      if (vec != vectors) continue;
      bool gain = vec && t.name.find("bias") == std::string::npos;
      for (size_t i = 0; i < t.numel(); ++i) p[t.offset + i] = gain ? 1.0f + d(rng) : d(rng);
    }
  }
  return p;
}

struct Batch {
  std::vector<int> tokens, targets;
  TokenBatch View() const {
    TokenBatch v;
    v.tokens = tokens.data(), v.targets = targets.data(), v.batch = kBatch, v.seq = kSeq;
    return v;
  }
};
// A pool of 2 batches of a repetitive sequence, so the loss falls fast.
Batch MakeBatch(int vocab, int which) {
  Batch b;
  std::mt19937 rng(1234 + which);
  for (int i = 0; i < kBatch * kSeq; ++i) {
    int tok = (i * 7 + which * 3 + int(rng() % 3)) % 61;
    b.tokens.push_back(tok % vocab);
  }
  for (int i = 0; i < kBatch * kSeq; ++i) b.targets.push_back(b.tokens[(i + 1) % b.tokens.size()]);
  return b;
}

// The RunSpec choices the tests vary (the rest as RunSpec's defaults). A step is one
// micro-batch unless a test accumulates: the top layer's activations lie over gradients.
struct Options {
  bool recompute = false;
  AttentionImpl attention = AttentionImpl::kAuto;
  bool deterministic_attention = true;
  bool recompute_norms = false, split_masters = true;
  int micro_batches_per_step = 1;
  int zero = 0;  // a world of one
};

std::unique_ptr<CudaModel> MakeModel(const ModelSpec& spec, DType dtype, Options o = {}) {
  RunSpec run;
  run.micro_batch = kBatch, run.seq = kSeq, run.dtype = dtype, run.recompute = o.recompute;
  run.recompute_norms = o.recompute_norms;
  run.split_masters = o.split_masters;
  run.micro_batches_per_step = o.micro_batches_per_step;
  run.zero = o.zero;
  run.attention = o.attention;
  run.deterministic_attention = o.deterministic_attention;
  run.logits_chunk_rows = 48;  // several classifier chunks, one partial
  auto m = CudaModel::Create(spec, run);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? std::move(*m) : nullptr;
}

// fp16 runs on loss x 1024 (a static loss scale) and takes it out of the gradients again.
float LossScale(DType t) { return t == DType::kF16 ? 1024.0f : 1.0f; }
std::vector<float> Unscaled(std::vector<float> g, DType t) {
  for (float& x : g) x /= LossScale(t);
  return g;
}
constexpr DType kAllTypes[] = {DType::kF32, DType::kBF16, DType::kF16};

class CudaModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { BM_SKIP_WITHOUT_GPU(); }
};

// Relative L2 error of each tensor's gradient; returns the worst.
double WorstTensorError(const ParamLayout& layout, const std::vector<float>& got,
                        const std::vector<float>& want, const std::string& label) {
  double worst = 0.0;
  for (const ParamTensor& t : layout.tensors()) {
    std::vector<float> g(got.begin() + t.offset, got.begin() + t.offset + t.numel());
    std::vector<float> w(want.begin() + t.offset, want.begin() + t.offset + t.numel());
    double e = RelativeError(g, w);
    std::printf("  %s grad %-48s rel err %.2e\n", label.c_str(), t.name.c_str(), e);
    worst = std::max(worst, e);
  }
  return worst;
}

// One forward and backward of b from params on a fresh model: its loss and its gradients
// (unscaled: divided by LossScale(t) again).
void GpuGradients(const ModelSpec& spec, DType t, const Options& o,
                  const std::vector<float>& params, const Batch& b, float scale, double* loss,
                  std::vector<float>* grads) {
  auto m = MakeModel(spec, t, o);
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->SetParameters(params).ok());
  ASSERT_TRUE(m->ZeroGradients().ok());
  auto l = m->ForwardBackward(b.View(), scale * LossScale(t));
  ASSERT_TRUE(l.ok()) << l.status().message();
  *loss = *l;
  std::vector<float> got;
  ASSERT_TRUE(m->GetGradients(&got).ok());
  *grads = Unscaled(std::move(got), t);
}

TEST_P(CudaModelTest, OneStepGradientsMatchCpu) {
  ModelSpec spec = Tiny(GetParam());
  CpuModel cpu(spec, kBatch, kSeq);
  auto params = InitParams(cpu.layout(), 7);
  Batch b = MakeBatch(spec.vocab, 0);
  float scale = 1.0f / (kBatch * kSeq);
  std::vector<float> want(cpu.layout().total(), 0.0f);
  double want_loss = cpu.ForwardBackward(params, b.tokens, b.targets, scale, &want);
  for (DType t : kAllTypes) {
    bool half = t != DType::kF32;
    double loss = 0;
    std::vector<float> got;
    ASSERT_NO_FATAL_FAILURE(GpuGradients(spec, t, {}, params, b, scale, &loss, &got));
    EXPECT_NEAR(loss, want_loss, (half ? 1e-2 : 1e-5) * want_loss);
    double worst = WorstTensorError(cpu.layout(), got, want, DTypeName(t));
    EXPECT_LT(worst, half ? 5e-2 : 1e-4) << GetParam() << " " << DTypeName(t);
  }
}

// Gradient accumulation: the first micro-batch writes the gradients (ZeroGradients only marks
// them), the second adds; stale gradients from an earlier step must not leak into either, and
// ZeroGradients followed by a read gives zeros.
TEST_P(CudaModelTest, TwoMicroBatchesAccumulateOverStaleGradients) {
  ModelSpec spec = Tiny(GetParam());
  CpuModel cpu(spec, kBatch, kSeq);
  auto params = InitParams(cpu.layout(), 11);
  Batch b0 = MakeBatch(spec.vocab, 0), b1 = MakeBatch(spec.vocab, 1);
  float scale = 0.5f / (kBatch * kSeq);
  std::vector<float> want(cpu.layout().total(), 0.0f);
  cpu.ForwardBackward(params, b0.tokens, b0.targets, scale, &want);
  cpu.ForwardBackward(params, b1.tokens, b1.targets, scale, &want);
  for (DType t : kAllTypes) {
    bool half = t != DType::kF32;
    float s = scale * LossScale(t);
    auto m = MakeModel(spec, t, {.micro_batches_per_step = 2});
    ASSERT_TRUE(m);
    ASSERT_EQ(m->memory().layers_over_gradients, 0);
    ASSERT_TRUE(m->SetParameters(params).ok());
    ASSERT_TRUE(m->ZeroGradients().ok());
    ASSERT_TRUE(m->ForwardBackward(b1.View(), 3.0f * s).ok());  // stale: a "previous step"
    ASSERT_TRUE(m->ZeroGradients().ok());
    ASSERT_TRUE(m->ForwardBackward(b0.View(), s).ok());
    ASSERT_TRUE(m->ForwardBackward(b1.View(), s).ok());
    std::vector<float> got;
    ASSERT_TRUE(m->GetGradients(&got).ok());
    double worst = WorstTensorError(cpu.layout(), Unscaled(got, t), want,
                                    std::string(DTypeName(t)) + " accum");
    EXPECT_LT(worst, half ? 5e-2 : 1e-4) << GetParam() << " " << DTypeName(t);
    ASSERT_TRUE(m->ZeroGradients().ok());
    ASSERT_TRUE(m->GetGradients(&got).ok());
    EXPECT_EQ(std::count(got.begin(), got.end(), 0.0f), static_cast<long>(got.size()));
  }
}

// With activations over the gradients a micro-batch that would accumulate (not the step's last,
// or no ZeroGradients before it) is refused rather than run over its own gradients.
TEST_P(CudaModelTest, ActivationsOverGradientsRefuseAccumulation) {
  ModelSpec spec = Tiny(GetParam());
  auto m = MakeModel(spec, DType::kBF16);
  ASSERT_TRUE(m);
  ASSERT_GT(m->memory().layers_over_gradients, 0);
  Batch b = MakeBatch(spec.vocab, 0);
  ASSERT_TRUE(m->ZeroGradients().ok());
  auto first = m->ForwardBackward(b.View(), 1.0f, /*last=*/false);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(first.status().message().find("one micro-batch a step"), std::string::npos)
      << first.status().message();
  ASSERT_TRUE(m->ZeroGradients().ok());
  ASSERT_TRUE(m->ForwardBackward(b.View(), 1.0f).ok());
  EXPECT_FALSE(m->ForwardBackward(b.View(), 1.0f).ok()) << "a second micro-batch in the step";
}

std::vector<double> CpuCurve(const ModelSpec& spec, const std::vector<float>& init, int steps,
                             const AdamWHyper& base) {
  CpuModel cpu(spec, kBatch, kSeq);
  std::vector<float> p = init, m(p.size(), 0.0f), v(p.size(), 0.0f);
  std::vector<double> losses;
  float scale = 1.0f / (kBatch * kSeq);
  for (int s = 0; s < steps; ++s) {
    Batch b = MakeBatch(spec.vocab, s % 2);
    std::vector<float> g(p.size(), 0.0f);
    losses.push_back(cpu.ForwardBackward(p, b.tokens, b.targets, scale, &g) * scale);
    AdamWHyper h = base;
    h.step = s + 1;
    double sumsq = GradSumSquaresCpu(g.data(), g.size());
    const float decay = h.weight_decay;
    for (const Range& seg : cpu.layout().segments()) {
      h.weight_decay = seg.decay ? decay : 0.0f;
      AdamWUpdateCpu(p.data() + seg.offset, m.data() + seg.offset, v.data() + seg.offset,
                     g.data() + seg.offset, sumsq, h, seg.numel);
    }
  }
  return losses;
}

// With loss_scale S (fp16), the backward runs on loss x S and AdamW gets grad_scale 1 / S.
std::vector<double> GpuCurve(CudaModel* m, const ModelSpec& spec, int first, int steps,
                             const AdamWHyper& base, float loss_scale = 1.0f) {
  std::vector<double> losses;
  float scale = 1.0f / (kBatch * kSeq);
  for (int s = first; s < first + steps; ++s) {
    Batch b = MakeBatch(spec.vocab, s % 2);
    AdamWHyper h = base;
    h.step = s + 1;
    h.grad_scale = 1.0f / loss_scale;
    EXPECT_TRUE(m->ZeroGradients().ok());
    auto loss = m->ForwardBackward(b.View(), scale * loss_scale);
    EXPECT_TRUE(loss.ok()) << loss.status().message();
    EXPECT_TRUE(m->OptimizerStep(h).ok());
    losses.push_back(loss.ok() ? *loss * scale : NAN);
  }
  return losses;
}

// ZeRO 2-3 with one micro-batch a step: layers' activations lie over the own gradient slices
// (each reduce-scattered whole after its unit's backward), and nothing changes but the plan: the
// losses and the weights are the bits of the same stage with every layer's activations apart,
// and the plan holds `over` layers' activations fewer (one layer's: what full recompute keeps
// fewer, over layers - 1) and no reduce-scatter scratch. Accumulating is refused as at zero 0.
TEST_P(CudaModelTest, ZeroTwoAndThreeLayActivationsOverTheGradientSlices) {
  ModelSpec spec = Tiny(GetParam());
  ParamLayout layout(spec);
  auto init = InitParams(layout, 5);
  AdamWHyper h;
  for (int zero : {2, 3}) {
    std::vector<double> curves[2];
    std::vector<float> finals[2];
    size_t plans[3] = {0, 0, 0};
    int over = 0;
    for (int i = 0; i < 3; ++i) {  // apart, over the gradients, full recompute
      Options o{.recompute = i == 2, .micro_batches_per_step = i == 1 ? 1 : 0, .zero = zero};
      auto m = MakeModel(spec, DType::kBF16, o);
      ASSERT_TRUE(m);
      plans[i] = m->memory().plan_bytes;
      if (i == 2) break;
      if (i == 1) over = m->memory().layers_over_gradients;
      ASSERT_TRUE(m->SetParameters(init).ok());
      curves[i] = GpuCurve(m.get(), spec, 0, 5, h);
      ASSERT_TRUE(m->GetParameters(&finals[i]).ok());
      if (i == 1) {
        Batch b = MakeBatch(spec.vocab, 0);
        ASSERT_TRUE(m->ZeroGradients().ok());
        auto first = m->ForwardBackward(b.View(), 1.0f, /*last=*/false);
        EXPECT_FALSE(first.ok()) << "zero " << zero << ": a micro-batch that would accumulate";
        ASSERT_TRUE(m->ZeroGradients().ok());
        ASSERT_TRUE(m->ForwardBackward(b.View(), 1.0f).ok());
        EXPECT_FALSE(m->ForwardBackward(b.View(), 1.0f).ok()) << "zero " << zero << ": a second";
      }
    }
    EXPECT_GE(over, 1) << "zero " << zero;
    EXPECT_EQ(curves[0], curves[1]) << "zero " << zero;
    EXPECT_EQ(finals[0], finals[1]) << "zero " << zero;
    // Each layer over the slices takes its activations and input stream (B·T·C bf16) along;
    // and no reduce-scatter scratch: the widest unit's slice (a world of one: the unit), fp32.
    size_t widest = 0;
    for (const Range& u : layout.units()) widest = std::max(widest, u.numel);
    const size_t stream = static_cast<size_t>(kBatch) * kSeq * spec.hidden * 2;
    EXPECT_EQ(plans[0] - plans[1],
              static_cast<size_t>(over) *
                      ((plans[0] - plans[2]) / static_cast<size_t>(spec.layers - 1) + stream) +
                  MemoryPlan::Aligned(widest * 4))
        << "zero " << zero;
  }
}

TEST_P(CudaModelTest, FiftyStepsTrackCpuLossCurve) {
  ModelSpec spec = Tiny(GetParam());
  ParamLayout layout(spec);
  auto init = InitParams(layout, 11);
  AdamWHyper h;
  h.lr = 3e-3f;
  auto cpu = CpuCurve(spec, init, 50, h);
  for (DType t : {DType::kBF16, DType::kF16}) {
    auto m = MakeModel(spec, t);
    ASSERT_TRUE(m);
    ASSERT_TRUE(m->SetParameters(init).ok());
    auto gpu = GpuCurve(m.get(), spec, 0, 50, h, LossScale(t));
    double sum = 0.0, worst = 0.0;
    for (int s = 0; s < 50; ++s) {
      double rel = std::abs(gpu[s] - cpu[s]) / cpu[s];
      if (s >= 20) sum += rel;
      worst = std::max(worst, rel);
      if (s % 10 == 0 || s == 49)
        std::printf("  %s step %2d cpu %.5f gpu %.5f\n", DTypeName(t), s, cpu[s], gpu[s]);
    }
    std::printf("  %s %s: mean rel diff (steps 21-50) %.4f, worst %.4f\n", GetParam().c_str(),
                DTypeName(t), sum / 30, worst);
    EXPECT_LT(sum / 30, 0.02) << DTypeName(t);
    EXPECT_LT(worst, 0.05) << DTypeName(t);
    EXPECT_LT(gpu.back(), 0.5 * gpu.front()) << "the model should learn the repetitive data";
  }
}

// The whole step with cuDNN's fused attention, bf16 and fp16: gradients against the CPU twin
// (16-bit tolerance), and two runs of five steps bit-identical (its deterministic backward).
// With deterministic_attention off (dQ accumulated in fp32), the same tolerance; its reruns
// need not agree bit for bit, only within it.
TEST_P(CudaModelTest, CudnnAttentionStepMatchesCpuAndReruns) {
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  ModelSpec spec = Tiny(GetParam());
  CpuModel cpu(spec, kBatch, kSeq);
  auto params = InitParams(cpu.layout(), 7);
  Batch b = MakeBatch(spec.vocab, 0);
  float scale = 1.0f / (kBatch * kSeq);
  std::vector<float> want(cpu.layout().total(), 0.0f);
  double want_loss = cpu.ForwardBackward(params, b.tokens, b.targets, scale, &want);
  for (bool det : {true, false})
    for (DType t : {DType::kBF16, DType::kF16}) {
      const Options o{.attention = AttentionImpl::kCudnn, .deterministic_attention = det};
      double loss = 0;
      std::vector<float> got;
      ASSERT_NO_FATAL_FAILURE(GpuGradients(spec, t, o, params, b, scale, &loss, &got));
      EXPECT_NEAR(loss, want_loss, 1e-2 * want_loss);
      const std::string what = std::string(det ? "cudnn " : "cudnn dQ accumulated ") + DTypeName(t);
      EXPECT_LT(WorstTensorError(cpu.layout(), got, want, what), 5e-2) << GetParam() << " " << what;
      AdamWHyper h;
      std::vector<std::vector<double>> curves;
      for (int run = 0; run < 2; ++run) {
        auto r = MakeModel(spec, t, o);
        ASSERT_TRUE(r);
        ASSERT_TRUE(r->SetParameters(params).ok());
        curves.push_back(GpuCurve(r.get(), spec, 0, 5, h, LossScale(t)));
      }
      if (det) {
        EXPECT_EQ(curves[0], curves[1]) << "cuDNN attention must be deterministic";
      } else {
        for (size_t s = 0; s < curves[0].size(); ++s)
          EXPECT_NEAR(curves[0][s], curves[1][s], 1e-2 * curves[0][s]) << what << " step " << s;
      }
    }
}

// Recomputing (all, or the norms) and splitting the masters (the default with bf16) change no
// bit.
TEST_P(CudaModelTest, RerunsAreBitIdenticalAndRecomputeChangesNothing) {
  ModelSpec spec = Tiny(GetParam());
  ParamLayout layout(spec);
  auto init = InitParams(layout, 5);
  AdamWHyper h;
  std::vector<std::vector<float>> finals;
  std::vector<std::vector<double>> curves;
  std::vector<size_t> plans;
  std::vector<int> overs;
  // rerun, recompute, the norms recomputed (alone and with recompute), whole masters (all with
  // every layer's activations apart), then the top layer's over the gradients, then recompute
  // with the layers' input streams over the gradients
  for (Options o : std::vector<Options>{
           {.micro_batches_per_step = 0},
           {.micro_batches_per_step = 0},
           {.recompute = true, .micro_batches_per_step = 0},
           {.recompute_norms = true, .micro_batches_per_step = 0},
           {.recompute = true, .recompute_norms = true, .micro_batches_per_step = 0},
           {.split_masters = false, .micro_batches_per_step = 0},
           {},
           {.recompute = true}}) {
    auto m = MakeModel(spec, DType::kBF16, o);
    ASSERT_TRUE(m);
    plans.push_back(m->memory().plan_bytes);
    overs.push_back(m->memory().layers_over_gradients);
    ASSERT_TRUE(m->SetParameters(init).ok());
    curves.push_back(GpuCurve(m.get(), spec, 0, 5, h));
    finals.emplace_back();
    ASSERT_TRUE(m->GetParameters(&finals.back()).ok());
  }
  // Without the norms' outputs kept: 2 x layers - 1 activations of [B*T, C] fewer.
  EXPECT_EQ(plans[0] - plans[3],
            (2 * static_cast<size_t>(spec.layers) - 1) * kBatch * kSeq * spec.hidden * 2);
  // Over the gradients (tiny models: layer 1's fits below the end of layer 0's gradients, layer
  // 0's not in the embeddings' alone): one layer's activations (what full recompute keeps fewer,
  // over layers - 1) and its input stream (B·T·C bf16) fewer in the plan.
  const size_t stream = static_cast<size_t>(kBatch) * kSeq * spec.hidden * 2;
  EXPECT_EQ(overs[6], 1);
  EXPECT_EQ(plans[0] - plans[6],
            static_cast<size_t>(overs[6]) *
                ((plans[0] - plans[2]) / static_cast<size_t>(spec.layers - 1) + stream));
  // With full recompute the streams alone (gpt: layer 1's, below layer 0's gradients, the tied
  // embeddings' being written first; llama: layer 0's too, in the untied embeddings' 256 KiB).
  EXPECT_EQ(overs[7], spec.tied ? 1 : 2);
  EXPECT_EQ(plans[2] - plans[7], static_cast<size_t>(overs[7]) * stream);
  // Split masters: the fp32 masters' 4 bytes a parameter become a 2-byte low half.
  EXPECT_NEAR(static_cast<double>(plans[5] - plans[0]), 2.0 * static_cast<double>(layout.total()),
              256.0);
  // Where they do not apply (fp16, fp32) asking for them changes nothing; bf16 at ZeRO 1-2 holds
  // 2 bytes a parameter fewer, at ZeRO 3 the same bytes (both halves where the masters were;
  // within the plan's 256-byte alignment of one entry).
  for (auto [dtype, zero] : {std::pair{DType::kF16, 0},
                             {DType::kF32, 0},
                             {DType::kF16, 3},
                             {DType::kBF16, 1},
                             {DType::kBF16, 2},
                             {DType::kBF16, 3}}) {
    size_t plan[2];
    for (bool split : {false, true}) {
      RunSpec run;
      run.micro_batch = kBatch, run.seq = kSeq, run.dtype = dtype, run.zero = zero;
      run.split_masters = split;
      auto m = CudaModel::Create(spec, run);
      ASSERT_TRUE(m.ok()) << m.status().message();
      EXPECT_EQ((*m)->memory().split_masters, split && dtype == DType::kBF16);
      plan[split] = (*m)->memory().plan_bytes;
    }
    const double saved = dtype == DType::kBF16 && zero <= 2 ? 2.0 * layout.total() : 0.0;
    EXPECT_NEAR(static_cast<double>(plan[0]) - static_cast<double>(plan[1]), saved, 256.0)
        << DTypeName(dtype) << " zero " << zero;
  }
  auto by_default = CudaModel::Create(spec, RunSpec{.micro_batch = kBatch, .seq = kSeq});
  ASSERT_TRUE(by_default.ok()) << by_default.status().message();
  EXPECT_TRUE((*by_default)->memory().split_masters) << "bf16 at zero 0 splits by default";
  EXPECT_EQ(curves[0], curves[1]);
  EXPECT_EQ(0, std::memcmp(finals[0].data(), finals[1].data(), finals[0].size() * 4));
  for (size_t i = 2; i < curves.size(); ++i) {
    EXPECT_EQ(curves[0], curves[i])
        << "recomputing or splitting must not change the numbers (run " << i << ")";
    EXPECT_EQ(0, std::memcmp(finals[0].data(), finals[i].data(), finals[0].size() * 4)) << i;
  }
}

// Split masters at ZeRO 1-3 (a world of one): the bits of the same stage with whole masters —
// losses, weights gathered back, and this rank's AdamW state (the masters joined again).
TEST_P(CudaModelTest, SplitMastersAtEveryZeroStageChangeNoBits) {
  ModelSpec spec = Tiny(GetParam());
  ParamLayout layout(spec);
  auto init = InitParams(layout, 7);
  AdamWHyper h;
  for (int zero : {1, 2, 3}) {
    std::vector<double> curves[2];
    std::vector<float> finals[2], masters[2], ms[2], vs[2];
    for (bool split : {false, true}) {
      auto m = MakeModel(spec, DType::kBF16, {.split_masters = split, .zero = zero});
      ASSERT_TRUE(m);
      EXPECT_EQ(m->memory().split_masters, split);
      ASSERT_TRUE(m->SetParameters(init).ok());
      curves[split] = GpuCurve(m.get(), spec, 0, 5, h);
      ASSERT_TRUE(m->GetParameters(&finals[split]).ok());
      Status st = m->GetLocalState(&masters[split], &ms[split], &vs[split]);
      ASSERT_TRUE(st.ok()) << st.message();
    }
    EXPECT_EQ(curves[0], curves[1]) << "zero " << zero;
    EXPECT_EQ(0, std::memcmp(finals[0].data(), finals[1].data(), finals[0].size() * 4)) << zero;
    ASSERT_EQ(masters[0].size(), masters[1].size());
    EXPECT_EQ(0, std::memcmp(masters[0].data(), masters[1].data(), masters[0].size() * 4)) << zero;
    EXPECT_EQ(ms[0], ms[1]) << zero;
    EXPECT_EQ(vs[0], vs[1]) << zero;
    EXPECT_NE(finals[1], init) << "the weights moved";
    // The local state into a fresh model: its weights are the trained ones.
    auto fresh = MakeModel(spec, DType::kBF16, {.zero = zero});
    ASSERT_TRUE(fresh);
    ASSERT_TRUE(fresh->SetParameters(init).ok());
    Status st = fresh->SetLocalState(masters[1], ms[1], vs[1]);
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<float> back;
    ASSERT_TRUE(fresh->GetParameters(&back).ok());
    EXPECT_EQ(0, std::memcmp(back.data(), finals[1].data(), back.size() * 4)) << zero;
  }
}

// Interrupted after 3 steps and resumed from the parameters and AdamW state: the uninterrupted
// run's bits, with the masters whole and split.
TEST_P(CudaModelTest, ResumeEqualsUninterrupted) {
  ModelSpec spec = Tiny(GetParam());
  ParamLayout layout(spec);
  auto init = InitParams(layout, 3);
  AdamWHyper h;
  for (bool split : {false, true}) {
    SCOPED_TRACE(split ? "split masters" : "fp32 masters");
    auto make = [&] { return MakeModel(spec, DType::kBF16, {.split_masters = split}); };
    auto through = make();
    ASSERT_TRUE(through);
    ASSERT_TRUE(through->SetParameters(init).ok());
    auto full = GpuCurve(through.get(), spec, 0, 6, h);
    std::vector<float> want;
    ASSERT_TRUE(through->GetParameters(&want).ok());

    std::vector<float> p, m1, v1;
    std::vector<double> first;
    {
      auto a = make();
      ASSERT_TRUE(a->SetParameters(init).ok());
      first = GpuCurve(a.get(), spec, 0, 3, h);
      ASSERT_TRUE(a->GetParameters(&p).ok());
      ASSERT_TRUE(a->GetOptimizerState(&m1, &v1).ok());
    }  // "killed"
    auto b = make();
    ASSERT_TRUE(b->SetParameters(p).ok());
    ASSERT_TRUE(b->SetOptimizerState(m1, v1).ok());
    auto second = GpuCurve(b.get(), spec, 3, 3, h);
    first.insert(first.end(), second.begin(), second.end());
    EXPECT_EQ(first, full);
    std::vector<float> got;
    ASSERT_TRUE(b->GetParameters(&got).ok());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4));
  }
}

// The cuDNN backward's keys per call by default (kCudnnKeyChunkAuto): all of them in one call
// when that call's scratch fits in the room the shared region gives the MLP or the head anyway
// (a large vocabulary: the logits chunk), so the plan is exactly the blocked one's; blocks of
// kCudnnKeyChunk keys (here half the sequence) when it does not (a small vocabulary), again the
// blocked plan, smaller than one call's. Forcing either still works.
TEST_P(CudaModelTest, CudnnKeyBlocksByDefaultCostNoMemory) {
  if (!CudnnAttentionBuilt()) GTEST_SKIP() << "built without cuDNN (BENCHMAKE_HAVE_CUDNN off)";
  constexpr int kLongSeq = 512;
  for (int vocab : {8192, 64}) {
    ModelSpec spec = Tiny(GetParam());
    spec.vocab = vocab;
    spec.heads = 8;  // head_dim 16: one call's scores (B·H·T·T) well above the MLP's part
    spec.max_positions = std::max(spec.max_positions, kLongSeq);
    auto plan = [&](int chunk, int* keys) -> size_t {
      RunSpec run;
      run.micro_batch = kBatch, run.seq = kLongSeq, run.dtype = DType::kBF16;
      run.micro_batches_per_step = 1;
      run.attention = AttentionImpl::kCudnn;
      run.attention_chunk = chunk;
      auto m = CudaModel::Create(spec, run);
      EXPECT_TRUE(m.ok()) << m.status().message();
      if (!m.ok()) return 0;
      *keys = (*m)->memory().attention_key_block;
      return (*m)->memory().plan_bytes;
    };
    int auto_keys = 0, one_keys = 0, block_keys = 0;
    size_t by_default = plan(kCudnnKeyChunkAuto, &auto_keys);
    size_t one = plan(0, &one_keys);
    size_t blocked = plan(kLongSeq / 2, &block_keys);
    EXPECT_EQ(one_keys, kLongSeq);
    EXPECT_EQ(block_keys, kLongSeq / 2);
    EXPECT_EQ(by_default, blocked) << "vocab " << vocab << ": the default must cost no memory";
    if (vocab == 8192) {
      EXPECT_EQ(auto_keys, kLongSeq) << "one call fits beside the logits chunk";
      EXPECT_EQ(one, blocked);
    } else {
      EXPECT_EQ(auto_keys, kLongSeq / 2) << "one call would grow the plan";
      EXPECT_GT(one, blocked);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, CudaModelTest, ::testing::Values("tiny-gpt", "tiny-llama"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// ZeRO with model parallelism, checked before any device is touched (so this runs without a GPU):
// pipeline stages (the first and the last, which hold the tied embedding's copies) and tensor
// parallelism take every stage: they pass the argument checks (without a GPU creation then fails
// for want of one, with a GPU the model is created). A stage with a bad layer range is refused
// there, so the checks do run before the device is asked.
TEST(CudaModelChecks, PipelineStagesAndTensorParallelismTakeEveryZeroStage) {
  testing::PlanOnlyGroup pp(2, 0), pp_last(2, 1), tp(2, 0);
  RunSpec run;
  run.micro_batch = kBatch, run.seq = kSeq, run.dtype = DType::kF32;
  run.pipeline_slots = 2;
  for (int rank : {0, 1}) {
    ModelSpec stage = Tiny("tiny-gpt");
    stage.pp = 2, stage.pp_rank = rank, stage.layer_begin = rank, stage.layer_end = 1 - 2 * rank;
    stage.embeddings = rank == 0, stage.head = rank == 1;  // layers [0, 1) and [1, end)
    run.pp = rank == 0 ? &pp : &pp_last;
    for (int zero : {2, 3}) {
      run.zero = zero;
      Result<std::unique_ptr<CudaModel>> m = CudaModel::Create(stage, run);
      if (!m.ok()) {
        EXPECT_NE(m.status().code(), ErrorCode::kInvalidArgument)
            << "stage " << rank << " zero " << zero << ": " << m.status().message();
      }
    }
    stage.layer_end = stage.layers + 1;  // past the model's layers
    run.zero = 2;
    Result<std::unique_ptr<CudaModel>> bad = CudaModel::Create(stage, run);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument) << bad.status().message();
  }
  ModelSpec shard = Tiny("tiny-gpt");
  shard.tp = 2, shard.tp_rank = 0;
  run.pp = nullptr, run.tp = &tp, run.zero = 3, run.pipeline_slots = 1;
  Result<std::unique_ptr<CudaModel>> m = CudaModel::Create(shard, run);
  if (!m.ok()) {
    EXPECT_NE(m.status().code(), ErrorCode::kInvalidArgument) << m.status().message();
  }
}

}  // namespace
}  // namespace bm::train::cuda
