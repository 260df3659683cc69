// The training loop on the CUDA backend (device = "cuda", bf16): the loss falls, reruns are
// bit-identical, and a run killed after a checkpoint and resumed from the trainer's resume file
// ends with the same losses and the same checkpoint bytes as an uninterrupted one. Skips, saying
// so, without a GPU.
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

constexpr int32_t kVocab = 64, kEot = 63;

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

  RunConfig Config(const std::string& out) {
    nlohmann::json j = {{"mode", "pretrain"},
                        {"data", data_ + "/data"},
                        {"out_dir", data_ + "/" + out},
                        {"model", {{"preset", GetParam()}, {"overrides", {{"max_seq", 32}}}}},
                        {"lbs", 4},
                        {"mpe", 16},
                        {"gas", 1},
                        {"steps", 12},
                        {"warmup_steps", 2},
                        {"lr", 3e-3},
                        {"min_lr", 3e-4},
                        {"seed", 5},
                        {"device", "cuda"},
                        {"precision", "bf16"}};
    Result<RunConfig> c = ParseRunConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }

  static std::vector<double> Losses(const std::string& dir) {
    std::vector<double> losses;
    std::ifstream in(dir + "/log.jsonl");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) losses.push_back(nlohmann::json::parse(line)["loss"]);
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
  EXPECT_EQ(*ReadFileBytes(a.out_dir + "/model.safetensors"),
            *ReadFileBytes(b.out_dir + "/model.safetensors"));
}

TEST_P(CudaTrainLoopTest, KillAndResumeEqualsUninterrupted) {
  RunConfig full = Config("full");
  ASSERT_TRUE(RunTraining(full, nullptr).ok());
  RunConfig part = Config("part");
  part.resume_dir = data_ + "/resume";
  part.checkpoint_every = 5;
  TrainHooks kill;
  kill.after_step = [](int64_t step) { return step < 8; };  // dies after step 8, checkpoint at 5
  EXPECT_FALSE(RunTraining(part, nullptr, kill).ok());
  Result<nlohmann::json> resumed = RunTraining(part, nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_EQ((*resumed)["provenance"]["resumed_from_step"], 5);
  EXPECT_EQ(Losses(full.out_dir), Losses(part.out_dir));
  EXPECT_EQ(*ReadFileBytes(full.out_dir + "/model.safetensors"),
            *ReadFileBytes(part.out_dir + "/model.safetensors"));
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
