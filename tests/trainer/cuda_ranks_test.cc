// The CUDA backend's data parallelism with several ranks, on a machine of one
// GPU: benchmake-train processes that all drive GPU 0, their collectives over
// Gloo staged through host memory (communicator = "gloo"; NCCL refuses two
// ranks on one device). DP2 at every ZeRO stage trains a tiny GPT and a tiny
// GQA LLaMA with GAS 2 and a loss mask for 20 steps in fp32 against one rank
// over the same global batch, within the bounds the CPU's proof derives from
// the order of the sums (data_parallel_test.cc: 1e-4 relative on each step's
// loss, 1e-4 absolute on weights; another seed moves them by > 1e-2). The
// multi-GPU machine then only has to confirm it over NCCL. Skips without a GPU.
#include <gtest/gtest.h>

#include "tests/trainer/cuda_test_util.h"
#include "tests/trainer/train_ranks.h"

namespace bm::train {
namespace {

using nlohmann::json;

constexpr double kLossTol = 1e-4, kWeightTol = 1e-4;
constexpr int kRows = 4, kGas = 2;  // rows per micro-batch of the global batch

class CudaRanksTest : public testing::TrainRanksTest {
 protected:
  void SetUp() override {
    TrainRanksTest::SetUp();
    BM_SKIP_WITHOUT_GPU();
    share_one_gpu_ = true;
  }
  json Config(const std::string& name, const std::string& preset, int dp, int zero) const {
    json c =
        TrainRanksTest::Config(name, preset, "DP" + std::to_string(dp), kRows / dp, kGas, zero);
    c["device"] = "cuda";
    c["precision"] = "fp32";
    c["communicator"] = "gloo";
    return c;
  }
  void CheckEveryZeroStage(const std::string& preset) {
    RunOk(Config("single", preset, 1, 0));
    for (int zero : {0, 1, 2, 3}) {
      const std::string name = "dp2_zero" + std::to_string(zero);
      RunOk(Config(name, preset, 2, zero));
      auto [loss, weight] = Distance(name, "single");
      std::printf("%s %s: loss rel %.2e, weight abs %.2e\n", preset.c_str(), name.c_str(), loss,
                  weight);
      EXPECT_LT(loss, kLossTol) << name;
      EXPECT_LT(weight, kWeightTol) << name;
      json m = Metrics(name);
      EXPECT_EQ(m["parallel"]["world_size"], 2) << name;
      EXPECT_EQ(m["parallel"]["zero"], zero) << name;
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

TEST_F(CudaRanksTest, GptDataParallelOnOneGpuMatchesOneRank) { CheckEveryZeroStage("gpt-tiny"); }

TEST_F(CudaRanksTest, GqaLlamaDataParallelOnOneGpuMatchesOneRank) {
  CheckEveryZeroStage("llama-tiny");
}

}  // namespace
}  // namespace bm::train
