// The training loop on the CUDA backend (device = "cuda", bf16 and fp16): the loss falls, reruns
// are bit-identical, and a run killed after a checkpoint and resumed from the trainer's resume
// file ends with the same losses and the same checkpoint bytes as an uninterrupted one (fp16: the
// loss scaler's state included). fp16 with dynamic loss scaling tracks bf16 by the suites' rule
// (mean relative loss difference from step 21 below 2%), and overflows (a huge initial scale)
// are skipped and counted. Skips, saying so, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/run/train_loop.h"

namespace bm::train {
namespace {

using testing::kEot;
using testing::kVocab;

class CudaTrainLoopTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    BM_SKIP_WITHOUT_GPU();
    data_ = testing::TempDir(std::string("cuda_loop_") + std::to_string(counter_++));
    testing::WriteSplit(data_ + "/data", "train", testing::PatternDocs(40, 30, kVocab, kEot, 1));
    testing::WriteSplit(data_ + "/data", "valid", testing::PatternDocs(8, 30, kVocab, kEot, 2));
    testing::WriteStats(data_ + "/data", kVocab, kEot);
  }
  void TearDown() override {
    if (!data_.empty()) std::filesystem::remove_all(data_);
  }

  RunConfig Config(const std::string& out, const std::string& precision = "bf16",
                   nlohmann::json overrides = {{"max_seq", 32}}) {
    nlohmann::json j =
        testing::TinyPretrainConfig(data_ + "/data", data_ + "/" + out, GetParam(), overrides);
    j["device"] = "cuda";
    j["precision"] = precision;
    Result<RunConfig> c = ParseRunConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }

  static std::vector<double> Losses(const std::string& dir) {
    std::vector<double> losses;
    for (const nlohmann::json& j : testing::ReadLog(dir)) losses.push_back(j["loss"]);
    return losses;
  }

  static inline int counter_ = 0;
  std::string data_;
};

TEST_P(CudaTrainLoopTest, LossFallsAndRerunsAreBitIdentical) {
  RunConfig a = Config("a"), b = Config("b");
  a.steps = b.steps = 30;
  Result<nlohmann::json> m = RunTraining(a, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_TRUE(RunTraining(b, nullptr).ok());
  std::vector<double> la = Losses(a.out_dir), lb = Losses(b.out_dir);
  ASSERT_EQ(la.size(), 30u);
  EXPECT_LT((*m)["loss"]["final"].get<double>(), la[0] - 1.0);
  EXPECT_EQ(la, lb);
  // What the GPU drew over the measured steps (NVML): one device, those steps' tokens.
  const nlohmann::json& energy = (*m)["energy"];
  ASSERT_TRUE(energy.is_object()) << (*m).dump(2);
  EXPECT_EQ(energy["devices"], 1);
  EXPECT_EQ(
      energy["tokens"].get<int64_t>(),
      (*m)["tokens"].get<int64_t>() / 30 * (*m)["throughput"]["measured_steps"].get<int64_t>());
  EXPECT_GE(energy["joules"].get<double>(), 0.0);
  EXPECT_GT(energy["seconds"].get<double>(), 0.0);
  EXPECT_EQ(*ReadFileBytes(a.out_dir + "/model.safetensors"),
            *ReadFileBytes(b.out_dir + "/model.safetensors"));
}

// fp16 with growth_interval 3, so that the scale grows across the checkpoint.
TEST_P(CudaTrainLoopTest, KillAndResumeEqualsUninterrupted) {
  for (const char* precision : {"bf16", "fp16"}) {
    const std::string p = precision;
    RunConfig full = Config("full_" + p, p);
    full.loss_scaler.growth_interval = 3;
    ASSERT_TRUE(RunTraining(full, nullptr).ok());
    RunConfig part = Config("part_" + p, p);
    part.loss_scaler.growth_interval = 3;
    part.resume_dir = data_ + "/resume_" + p;
    part.checkpoint_every = 5;
    TrainHooks kill;
    kill.after_step = [](int64_t step) { return step < 8; };  // dies after step 8, checkpoint at 5
    EXPECT_FALSE(RunTraining(part, nullptr, kill).ok());
    Result<nlohmann::json> resumed = RunTraining(part, nullptr);
    ASSERT_TRUE(resumed.ok()) << resumed.status().message();
    EXPECT_EQ((*resumed)["provenance"]["resumed_from_step"], 5) << p;
    std::vector<nlohmann::json> a = testing::ReadLog(full.out_dir),
                                b = testing::ReadLog(part.out_dir);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      for (const char* key : {"loss", "grad_norm", "loss_scale", "skipped"})
        EXPECT_EQ(a[i][key], b[i][key]) << p << " " << key << " at step " << i + 1;
    }
    EXPECT_EQ(*ReadFileBytes(full.out_dir + "/model.safetensors"),
              *ReadFileBytes(part.out_dir + "/model.safetensors"))
        << p;
  }
}

// A small model with 64-wide heads (the tensor-core attention paths; GQA for the LLaMA): fp16
// under PyTorch
// GradScaler's defaults (scale 2^16) against bf16, 40 steps, from the same initialization
// and data. The suites' loss-alignment rule: mean relative difference from step 21 below 2%.
TEST_P(CudaTrainLoopTest, Fp16TracksBf16) {
  const bool llama = std::string(GetParam()).rfind("llama", 0) == 0;
  const nlohmann::json wide = {{"hidden", 256},
                               {"heads", 4},
                               {"kv_heads", llama ? 2 : 4},
                               {"ffn_hidden", llama ? 512 : 1024},
                               {"max_seq", 64}};
  RunConfig bf16 = Config("align_bf16", "bf16", wide), fp16 = Config("align_fp16", "fp16", wide);
  for (RunConfig* c : {&bf16, &fp16}) {
    c->steps = 40, c->mpe = 64, c->lr = 1e-3, c->min_lr = 1e-4, c->warmup_steps = 4;
  }
  ASSERT_TRUE(RunTraining(bf16, nullptr).ok());
  Result<nlohmann::json> m = RunTraining(fp16, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<double> a = Losses(bf16.out_dir), b = Losses(fp16.out_dir);
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);
  double sum = 0, worst = 0;
  for (size_t s = 20; s < 40; ++s) {
    double rel = std::abs(b[s] - a[s]) / a[s];
    sum += rel;
    worst = std::max(worst, rel);
  }
  std::printf(
      "note: %s fp16 vs bf16, 40 steps: loss %.4f -> %.4f (bf16 %.4f -> %.4f); mean rel diff "
      "steps 21-40 %.5f, worst %.5f; skipped %d, final loss scale %g\n",
      GetParam(), b[0], b[39], a[0], a[39], sum / 20, worst, (*m)["skipped_steps"].get<int>(),
      (*m)["loss_scale"].get<double>());
  EXPECT_LT(sum / 20, 0.02);
  EXPECT_LT(b[39], b[0] - 0.5) << "fp16 must learn";
  EXPECT_EQ((*m)["config"]["precision"], "fp16");
}

// An initial scale of 2^40 overflows fp16 for sure: the first steps are skipped, the scale
// halves on each, and training then goes on with finite losses and norms.
TEST_P(CudaTrainLoopTest, Fp16InjectedOverflowIsSkippedAndCounted) {
  RunConfig c = Config("overflow", "fp16");
  c.steps = 40;
  c.loss_scaler.init_scale = std::ldexp(1.0, 40);
  Result<nlohmann::json> m = RunTraining(c, nullptr);
  ASSERT_TRUE(m.ok()) << m.status().message();
  std::vector<nlohmann::json> log = testing::ReadLog(c.out_dir);
  ASSERT_EQ(log.size(), 40u);
  int skipped = 0;
  double scale = c.loss_scaler.init_scale;
  for (size_t i = 0; i < log.size(); ++i) {
    const nlohmann::json& r = log[i];
    EXPECT_EQ(r["loss_scale"].get<double>(), scale) << "step " << i + 1;
    if (r["skipped"].get<bool>()) {
      ++skipped;
      EXPECT_TRUE(r["grad_norm"].is_null());
      scale /= 2;
    } else {
      EXPECT_TRUE(std::isfinite(r["grad_norm"].get<double>())) << "step " << i + 1;
    }
  }
  std::printf("note: %s fp16 from scale 2^40: %d of 40 steps skipped, scale then %g\n", GetParam(),
              skipped, scale);
  EXPECT_TRUE(log[0]["skipped"].get<bool>());
  EXPECT_GE(skipped, 10);
  EXPECT_LT(skipped, 35);
  EXPECT_EQ((*m)["skipped_steps"], skipped);
  EXPECT_EQ((*m)["loss_scale"], scale);
  EXPECT_LT((*m)["loss"]["final"].get<double>(), log[0]["loss"].get<double>());
}

// The data-parallel code paths with a world of one rank: every ZeRO stage trains the same
// bits as stage 0 with one micro-batch (with several, stages 2-3 add the micro-batches' reduced
// gradients after the fact, not inside the product: a rounding apart); a one-rank NCCL
// communicator equals none, bit for bit; a stage-3 run killed after a checkpoint resumes to
// the uninterrupted bits.
TEST_P(CudaTrainLoopTest, ZeroStagesOfOneRankEqualStageZero) {
  RunConfig base = Config("z0");
  ASSERT_TRUE(RunTraining(base, nullptr).ok());
  for (int zero : {1, 2, 3}) {
    RunConfig z = Config("z" + std::to_string(zero));
    z.zero = zero;
    Result<nlohmann::json> m = RunTraining(z, nullptr);
    ASSERT_TRUE(m.ok()) << "zero " << zero << ": " << m.status().message();
    EXPECT_EQ(Losses(base.out_dir), Losses(z.out_dir)) << "zero " << zero;
    EXPECT_EQ(*ReadFileBytes(base.out_dir + "/model.safetensors"),
              *ReadFileBytes(z.out_dir + "/model.safetensors"))
        << "zero " << zero;
    EXPECT_EQ((*m)["parallel"]["zero"], zero);
  }
  RunConfig acc0 = Config("acc0"), acc3 = Config("acc3");
  acc0.gas = acc3.gas = 2;
  acc3.zero = 3;
  ASSERT_TRUE(RunTraining(acc0, nullptr).ok());
  ASSERT_TRUE(RunTraining(acc3, nullptr).ok());
  std::vector<double> l0 = Losses(acc0.out_dir), l3 = Losses(acc3.out_dir);
  ASSERT_EQ(l0.size(), l3.size());
  for (size_t i = 0; i < l0.size(); ++i) EXPECT_NEAR(l0[i], l3[i], 1e-3 * std::abs(l0[i])) << i;
}

// Gradients summed in bf16 (grad_reduce = "bf16") on one rank: each unit's fp32 gradients are
// rounded to bf16, the same at every ZeRO stage, so stages 1-3 train stage 0's bits; the rounding
// changes the run (not fp32's losses) and tracks the fp32 reduction by the suites' rule (mean
// relative loss difference from step 21 below 2%).
TEST_P(CudaTrainLoopTest, Bf16GradientReductionOfOneRank) {
  constexpr int kSteps = 40;
  RunConfig fp32 = Config("reduce32");
  fp32.steps = kSteps;
  ASSERT_TRUE(RunTraining(fp32, nullptr).ok());
  const std::vector<double> ref = Losses(fp32.out_dir);
  ASSERT_EQ(ref.size(), static_cast<size_t>(kSteps));
  RunConfig z0;
  for (int zero : {0, 1, 2, 3}) {
    RunConfig c = Config("reduce16_z" + std::to_string(zero));
    c.steps = kSteps;
    c.zero = zero;
    c.grad_reduce_bf16 = true;
    Result<nlohmann::json> m = RunTraining(c, nullptr);
    ASSERT_TRUE(m.ok()) << "zero " << zero << ": " << m.status().message();
    EXPECT_EQ((*m)["parallel"]["grad_reduce"], "bf16");
    if (zero == 0) {
      z0 = c;
      const std::vector<double> l = Losses(c.out_dir);
      EXPECT_NE(l, ref);
      double gap = 0;
      for (int s = 20; s < kSteps; ++s) gap += std::abs(l[s] - ref[s]) / std::abs(ref[s]);
      gap /= kSteps - 20;
      std::printf(
          "note: %s bf16 gradient reduction against fp32, mean relative loss gap from step "
          "21: %.3g%%\n",
          GetParam(), 100 * gap);
      EXPECT_LT(gap, 0.02);
      continue;
    }
    EXPECT_EQ(Losses(z0.out_dir), Losses(c.out_dir)) << "zero " << zero;
    EXPECT_EQ(*ReadFileBytes(z0.out_dir + "/model.safetensors"),
              *ReadFileBytes(c.out_dir + "/model.safetensors"))
        << "zero " << zero;
  }
}

TEST_P(CudaTrainLoopTest, OneRankNcclEqualsNoCommunicator) {
  RunConfig plain = Config("plain");
  ASSERT_TRUE(RunTraining(plain, nullptr).ok());
  for (int zero : {0, 3}) {
    RunConfig nccl = Config("nccl" + std::to_string(zero));
    nccl.communicator = "nccl";
    nccl.zero = zero;
    Result<nlohmann::json> m = RunTraining(nccl, nullptr);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(Losses(plain.out_dir), Losses(nccl.out_dir)) << "zero " << zero;
    EXPECT_EQ(*ReadFileBytes(plain.out_dir + "/model.safetensors"),
              *ReadFileBytes(nccl.out_dir + "/model.safetensors"))
        << "zero " << zero;
  }
}

TEST_P(CudaTrainLoopTest, ZeroThreeKillAndResumeEqualsUninterrupted) {
  RunConfig full = Config("full3");
  full.zero = 3;
  ASSERT_TRUE(RunTraining(full, nullptr).ok());
  RunConfig part = Config("part3");
  part.zero = 3;
  part.resume_dir = data_ + "/resume3";
  part.checkpoint_every = 5;
  TrainHooks kill;
  kill.after_step = [](int64_t step) { return step < 8; };
  EXPECT_FALSE(RunTraining(part, nullptr, kill).ok());
  Result<nlohmann::json> resumed = RunTraining(part, nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ((*resumed)["provenance"]["resumed_from_step"], 5);
  EXPECT_EQ(*ReadFileBytes(full.out_dir + "/model.safetensors"),
            *ReadFileBytes(part.out_dir + "/model.safetensors"));
}

INSTANTIATE_TEST_SUITE_P(Families, CudaTrainLoopTest, ::testing::Values("llama-tiny", "gpt-tiny"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace bm::train
