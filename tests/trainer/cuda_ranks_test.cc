// The CUDA backend's data, tensor and pipeline parallelism with several ranks,
// benchmake-train processes, for each communicator:
//   - gloo: on a machine of one GPU, every rank drives GPU 0, the collectives
//     over Gloo staged through host memory (NCCL refuses two ranks on one
//     device);
//   - nccl: a rank per GPU, over NCCL (skips on fewer than 4 GPUs, and leaves
//     TP2PP2DP2 out on fewer than 8: the multi-GPU machine's confirmation of
//     what the one GPU proves).
// DP2 at every ZeRO stage, and the layouts of the CPU's proof — TP2, PP2,
// TP2PP2, TP2PP1DP2 and TP1PP2DP2 (ZeRO-1), TP2PP1DP2 at ZeRO-2 and ZeRO-3
// (sequence parallel too at 3), TP1PP2DP2 and TP2PP2DP2 at ZeRO-2 and ZeRO-3
// (the tied embedding's units reduced after the stages' exchange; ZeRO-3's
// units gathered again for backwards that come after later forwards) — train
// a tiny GPT (tied embeddings)
// and a tiny GQA LLaMA (heads 4, kv_heads 2) with a loss mask for 20 steps in
// fp32 (GAS 2; the pipelines GAS 4) against one rank over the same global
// batch, within the bounds the CPU's proofs derive from the order of the sums
// (data_parallel_test.cc, model_parallel_test.cc: 1e-4 relative on each step's
// loss and gradient norm, 1e-4 absolute on weights; another seed moves them by
// > 1e-2); a TP2PP2 run killed after its first checkpoint resumes bit for bit,
// and TP2PP2 and one-rank checkpoints initialize each other's finetunes;
// ZeRO-3 under TP holds the hand-counted bytes fewer than ZeRO-1.
// Skips without a GPU.
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/train_ranks.h"

namespace bm::train {
namespace {

using nlohmann::json;

constexpr double kLossTol = 1e-4, kWeightTol = 1e-4;
constexpr int kRows = 4, kGas = 2;  // rows per micro-batch of the global batch

// A rank per GPU over NCCL: every test needs 4 (TP2PP2, TP2PP1DP2); TP2PP2DP2 needs 8 and is
// left out below that (Gloo shares one GPU among any number of ranks).
constexpr int kMostRanks = 4;

class CudaRanksTest : public testing::TrainRanksTest,
                      public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    TrainRanksTest::SetUp();
    BM_SKIP_WITHOUT_GPU();
    share_one_gpu_ = GetParam() == "gloo";
    cudaGetDeviceCount(&gpus_);
    if (!share_one_gpu_ && gpus_ < kMostRanks)
      GTEST_SKIP() << "GPU test skipped: " << gpus_ << " GPU(s), a rank per GPU needs "
                   << kMostRanks;
  }
  int gpus_ = 0;
  json Config(const std::string& name, const std::string& preset, const std::string& layout,
              int zero, int gas = kGas) const {
    Result<ParallelLayout> l = ParseLayout(layout);
    EXPECT_TRUE(l.ok()) << layout;
    json c = TrainRanksTest::Config(name, preset, layout, kRows / l->dp, gas, zero);
    c["device"] = "cuda";
    c["precision"] = "fp32";
    c["communicator"] = GetParam();
    return c;
  }
  json Config(const std::string& name, const std::string& preset, int dp, int zero) const {
    return Config(name, preset, "DP" + std::to_string(dp), zero);
  }
  // Every layout of the CPU's proof, GAS 4 (pipelines need micro-batches to overlap), and
  // tensor and pipeline parallelism with ZeRO-2 and ZeRO-3 over each TP rank's / stage's DP
  // group (sequence parallel too at ZeRO-3 with TP alone): the gradient norm counts a
  // TP-replicated tensor once, in its owner's own slices; with stages, 1F1B runs a unit's
  // backward after later micro-batches' forwards (ZeRO-3 gathers it again) and, for the GPT's
  // tied embedding, the first and last stages sum their copies' gradients before ZeRO 2-3
  // reduce them.
  void CheckModelParallel(const std::string& preset) {
    constexpr int kPipelineGas = 4;
    RunOk(Config("single", preset, "TP1PP1DP1", 0, kPipelineGas));
    std::vector<testing::LayoutCase> cases = testing::ModelParallelLayouts();
    cases.push_back({"TP2PP1DP2", 3, true});
    for (const testing::LayoutCase& c : cases) {
      const std::string name = c.Name();
      ParallelLayout l = *ParseLayout(c.layout);
      if (!share_one_gpu_ && l.tp * l.pp * l.dp > gpus_) {
        std::cout << "[  SKIPPED ] " << name << ": a rank per GPU needs " << l.tp * l.pp * l.dp
                  << ", " << gpus_ << " GPU(s)\n";
        continue;
      }
      json config = Config(name, preset, c.layout, c.zero, kPipelineGas);
      config["sequence_parallel"] = c.sequence_parallel;
      RunOk(config);
      ExpectMatches(preset, name, "single", kLossTol, kWeightTol);
      json m = Metrics(name);
      EXPECT_EQ(m["parallel"]["tp"], l.tp) << name;
      EXPECT_EQ(m["parallel"]["pp"], l.pp) << name;
      EXPECT_EQ(m["parallel"]["zero"], c.zero) << name;
      EXPECT_EQ(m["config"]["gbs"], kRows * kPipelineGas) << name;
      EXPECT_EQ(m["parallel"]["pipeline_wait_s"].get<double>() > 0, l.pp > 1) << name;
    }
  }
  void CheckEveryZeroStage(const std::string& preset) {
    RunOk(Config("single", preset, 1, 0));
    for (int zero : {0, 1, 2, 3}) {
      const std::string name = "dp2_zero" + std::to_string(zero);
      RunOk(Config(name, preset, 2, zero));
      ExpectClose(preset, name, "single", kLossTol, kWeightTol);
      json m = Metrics(name);
      EXPECT_EQ(m["parallel"]["world_size"], 2) << name;
      EXPECT_EQ(m["parallel"]["zero"], zero) << name;
      // Ranks sharing the one GPU (Gloo) count its energy once; over NCCL each has its own.
      EXPECT_EQ(m["energy"]["devices"], share_one_gpu_ ? 1 : 2) << name;
    }
    // The check can fail: another seed moves far beyond it.
    json other = Config("other", preset, 2, 0);
    other["seed"] = 8;
    RunOk(other);
    auto [loss, weight] = Distance("other", "single");
    EXPECT_GT(loss, 100 * kLossTol);
    EXPECT_GT(weight, 10 * kWeightTol);
  }
};

TEST_P(CudaRanksTest, GptDataParallelMatchesOneRank) { CheckEveryZeroStage("gpt-tiny"); }

TEST_P(CudaRanksTest, GqaLlamaDataParallelMatchesOneRank) { CheckEveryZeroStage("llama-tiny"); }

TEST_P(CudaRanksTest, GptModelParallelMatchesOneRank) { CheckModelParallel("gpt-tiny"); }

TEST_P(CudaRanksTest, GqaLlamaModelParallelMatchesOneRank) { CheckModelParallel("llama-tiny"); }

TEST_P(CudaRanksTest, KilledTp2Pp2RunResumesBitForBit) {
  json full = Config("full", "gpt-tiny", "TP2PP2", 0, 4);
  full["checkpoint_every"] = 5;
  ExpectKilledRunResumesBitForBit(full);
}

// The checkpoint is one whole model whatever the layout: a TP2PP2 pretrain initializes a
// one-rank finetune and a one-rank pretrain a TP2PP2 one, both to the one-rank finetune of the
// one-rank pretrain (the CPU's ModelParallelTest.CheckpointsInitializeAnyLayout on the GPU).
TEST_P(CudaRanksTest, CheckpointsInitializeAnyLayout) {
  ExpectCheckpointsInitializeAnyLayout(
      [&](const std::string& name, const std::string& layout) {
        return Config(name, "llama-tiny", layout, 0, 4);
      },
      kLossTol, kWeightTol);
}

TEST_P(CudaRanksTest, SequenceParallelismMatchesOneRankInLessMemory) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    RunOk(Config("single", preset, "TP1PP1DP1", 0, 4));
    for (const char* layout : {"TP2PP1DP1", "TP2PP2DP1"}) {
      const std::string name = std::string(layout) + "_sp";
      json sp = Config(name, preset, layout, 0, 4);
      sp["sequence_parallel"] = true;
      RunOk(sp);
      ExpectMatches(preset, name, "single", kLossTol, kWeightTol);
      RunOk(Config(layout, preset, layout, 0, 4));
      EXPECT_EQ(Metrics(name)["config"]["sequence_parallel"], true);
      EXPECT_LT(Metrics(name)["memory"]["peak_bytes"].get<double>(),
                Metrics(layout)["memory"]["peak_bytes"].get<double>())
          << preset << " " << name;
    }
  }
}

// Gradients summed in bf16 (grad_reduce = "bf16") over DP2 at every ZeRO stage against the fp32
// sum of the same layout, 60 steps: they differ (the sum is another arithmetic) and align by the
// suites' rule, the mean relative loss difference from step 21 below 2%. Twice: fp32 work with
// GAS 2 (the fp32 gradients rounded for the sum), and bf16 work, where the products write the
// matrices' gradients in bf16 themselves: with one micro-batch a step at ZeRO 0-1, and GAS 2 at
// ZeRO 2-3 (fresh buckets every micro-batch, the sums added in the fp32 own slices).
TEST_P(CudaRanksTest, Bf16GradientReductionAlignsWithFp32) {
  constexpr int kSteps = 60;
  for (int zero : {0, 1, 2, 3})
    for (const char* work : {"fp32", "bf16"}) {
      const std::string tag = fmt::format("z{}_{}", zero, work);
      const int gas = std::string(work) == "bf16" && zero <= 1 ? 1 : kGas;
      json fp32 = Config("reduce32_" + tag, "llama-tiny", "DP2", zero, gas);
      fp32["steps"] = kSteps;
      fp32["precision"] = work;
      json bf16 = Config("reduce16_" + tag, "llama-tiny", "DP2", zero, gas);
      bf16["steps"] = kSteps;
      bf16["precision"] = work;
      bf16["grad_reduce"] = "bf16";
      RunOk(fp32);
      RunOk(bf16);
      const std::vector<double> a = Losses("reduce32_" + tag), b = Losses("reduce16_" + tag);
      ASSERT_EQ(a.size(), static_cast<size_t>(kSteps)) << tag;
      ASSERT_EQ(b.size(), a.size()) << tag;
      EXPECT_NE(a, b) << tag;
      double gap = 0;
      for (int s = 20; s < kSteps; ++s) gap += std::abs(b[s] - a[s]) / std::abs(a[s]);
      gap /= kSteps - 20;
      std::cout << "note: DP2 zero " << zero << ", " << work << " work, bf16 against fp32 "
                << "gradient sums, mean relative loss gap from step 21: " << 100 * gap << "%\n";
      EXPECT_LT(gap, 0.02) << tag;
      EXPECT_EQ(Metrics("reduce16_" + tag)["parallel"]["grad_reduce"], "bf16") << tag;
    }
}

// ZeRO-3 keeping the forward's last units gathered (zero3_keep_params: slots of their own, kept
// to the optimizer step) changes no value: DP2 in bf16 (the 16-bit gathers) with two
// micro-batches a step, LLaMA (its first unit alone in the ring) and GPT (the tied embedding
// read by the head), keeping some units (50,000 parameters: llama-tiny's head and final norm at
// the tests' vocabulary of 64, 4,224 with padding, and its last layer, 43,136; not the first
// layer, which stays in the ring) or every unit but the embeddings; and TP1PP2DP2 (1F1B: later
// micro-batches' forwards before a unit's backward). The same losses, gradient norms and
// weights, bit for bit; on DP2 in more memory (a pipeline stage of two units holds less: its
// kept unit's own slot replaces a ring of two slots of the widest unit).
TEST_P(CudaRanksTest, ZeroThreeKeptUnitsChangeNoBit) {
  struct Case {
    const char* preset;
    const char* layout;
    int gas;
    int64_t keep;
  };
  for (const Case& c :
       {Case{"llama-tiny", "DP2", 2, 50'000}, Case{"llama-tiny", "DP2", 2, 1'000'000'000},
        Case{"gpt-tiny", "DP2", 2, 1'000'000'000},
        Case{"llama-tiny", "TP1PP2DP2", 4, 1'000'000'000}}) {
    const std::string tag = fmt::format("{}_{}_{}", c.preset, c.layout, c.keep);
    if (!share_one_gpu_ && std::string(c.layout) == "TP1PP2DP2" && gpus_ < 4) {
      std::cout << "[  SKIPPED ] " << tag << ": a rank per GPU needs 4, " << gpus_ << " GPU(s)\n";
      continue;
    }
    json plain = Config("plain_" + tag, c.preset, c.layout, 3, c.gas);
    plain["precision"] = "bf16";
    json kept = Config("kept_" + tag, c.preset, c.layout, 3, c.gas);
    kept["precision"] = "bf16";
    kept["zero3_keep_params"] = c.keep;
    RunOk(plain);
    RunOk(kept);
    const std::string k = "kept_" + tag, p = "plain_" + tag;
    EXPECT_EQ(Losses(k), Losses(p)) << tag;
    EXPECT_EQ(Logged(k, "grad_norm"), Logged(p, "grad_norm")) << tag;
    EXPECT_EQ(Weights(k), Weights(p)) << tag;
    if (std::string(c.layout) == "DP2") {
      EXPECT_GT(Metrics(k)["memory"]["peak_bytes"].get<double>(),
                Metrics(p)["memory"]["peak_bytes"].get<double>())
          << tag;
    }
    EXPECT_EQ(Metrics(k)["parallel"]["zero3_keep_params"], c.keep) << tag;
  }
}

// ZeRO-3 under tensor parallelism holds less per rank than ZeRO-1 once the model has a few
// layers (two layers do not: the gathered units and the buckets are as large as the shard):
// llama-tiny at 8 layers (vocabulary 512) on TP2PP1DP2 plans 846,336 bytes fewer at ZeRO-3, counted
// by hand in cuda_memory_plan_test.cc (TensorParallelZero3HoldsLessThanZero1CountedByHand); the
// rest of the arena is the same at both stages.
TEST_P(CudaRanksTest, TensorParallelZero3HoldsLessThanZero1) {
  for (int zero : {1, 3}) {
    json c = Config("zero" + std::to_string(zero), "llama-tiny", "TP2PP1DP2", zero, 4);
    c["model"]["overrides"]["layers"] = 8;
    c["model"]["overrides"]["vocab"] = 512;  // llama-tiny's, as counted (not the data's)
    c["steps"] = 2;
    RunOk(c);
  }
  const double z1 = Metrics("zero1")["memory"]["peak_bytes"].get<double>();
  const double z3 = Metrics("zero3")["memory"]["peak_bytes"].get<double>();
  EXPECT_LT(z3, z1);
  EXPECT_EQ(z1 - z3, 846'336.0) << "zero 1:\n"
                                << Metrics("zero1")["memory"]["plan"].get<std::string>()
                                << "zero 3:\n"
                                << Metrics("zero3")["memory"]["plan"].get<std::string>();
}

INSTANTIATE_TEST_SUITE_P(Communicators, CudaRanksTest, ::testing::Values("gloo", "nccl"),
                         [](const auto& info) { return info.param; });

// The device memory as the DP group's NCCL window (nccl_window = true) changes which kernels
// NCCL runs, not the arithmetic: DP2 over NCCL (a rank per GPU: two GPUs) at every ZeRO stage
// ends with the plain run's losses, gradient norms and weights bit for bit, at NCCL's default CTA
// policy and at the zero-CTA one (the all-gathers on the copy engines), in bf16 as the benchmarks
// run.
class NcclWindowRanksTest : public testing::TrainRanksTest {
 protected:
  void SetUp() override {
    TrainRanksTest::SetUp();
    BM_SKIP_WITHOUT_GPU();
    int gpus = 0;
    cudaGetDeviceCount(&gpus);
    if (gpus < 2) GTEST_SKIP() << "GPU test skipped: " << gpus << " GPU(s), DP2 over NCCL needs 2";
  }
};

TEST_F(NcclWindowRanksTest, AWindowArenaChangesNoBits) {
  for (const char* policy : {"0", "2"}) {
    setenv("NCCL_CTA_POLICY", policy, 1);  // the ranks inherit it
    for (int zero : {0, 1, 2, 3}) {
      const std::string tag = fmt::format("p{}_z{}", policy, zero);
      json plain = Config("plain_" + tag, "llama-tiny", "DP2", kRows / 2, kGas, zero);
      plain["device"] = "cuda";
      plain["precision"] = "bf16";
      plain["communicator"] = "nccl";
      json window = plain;
      window["out_dir"] = plain["out_dir"].get<std::string>() + "_window";
      window["resume_dir"] = plain["resume_dir"].get<std::string>() + "_window";
      window["nccl_window"] = true;
      RunOk(plain);
      RunOk(window);
      const std::string w = NameOf(window), p = NameOf(plain);
      EXPECT_EQ(Losses(w), Losses(p)) << tag;
      EXPECT_EQ(Logged(w, "grad_norm"), Logged(p, "grad_norm")) << tag;
      EXPECT_EQ(Weights(w), Weights(p)) << tag;
      EXPECT_EQ(Metrics(w)["parallel"]["nccl_window"], true) << tag;
      EXPECT_EQ(Metrics(p)["parallel"]["nccl_window"], false) << tag;
    }
  }
  unsetenv("NCCL_CTA_POLICY");
}

}  // namespace
}  // namespace bm::train
