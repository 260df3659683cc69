// Data parallel and ZeRO on the CPU backend, proven as the design asks: N
// benchmake-train processes (Gloo between them) over the same global batch as
// one process reach the same loss curve and the same weights, within a
// tolerance that the reduction order explains; a sharded run killed mid-way
// resumes bit for bit.
//
// The tolerance. One process sums a weight's gradient over all rows inside one
// GEMM; N ranks each sum their rows, then the communicator sums the N partial
// sums (ZeRO 2-3 also sum micro-batches after, not before, the cross-rank sum).
// Both are fp32 sums of the same terms in another order: each differs from the
// exact sum by at most ~k·2^-24 relative for k terms, i.e. ~1e-7..1e-6 here.
// AdamW divides by sqrt(v) (normalized steps of about lr), so after S steps a
// weight can differ by at most ~S·lr·(relative gradient difference), and the
// mixing of 20 steps amplifies a 1e-6 gradient difference to ~1e-5 in weights
// at lr 3e-3. We allow 1e-4 absolute on weights (initialized with std 0.02, so
// about 5e-3 of a weight) and 1e-4 relative on each step's loss; a wrong row
// assignment, a missed or doubled reduction, or a stale ZeRO-3 shard moves
// losses by >1e-2 and weights by >1e-3 within a few steps (the first test
// checks that a run on other rows does).
#include <gtest/gtest.h>

#include "tests/trainer/train_ranks.h"
#include "trainer/checkpoint/safetensors.h"

namespace bm::train {
namespace {

using nlohmann::json;
using testing::TrainerPath;

class DataParallelTest : public testing::TrainRanksTest {
 protected:
  json Config(const std::string& name, const std::string& preset, int dp, int lbs, int gas,
              int zero) const {
    return TrainRanksTest::Config(name, preset, "DP" + std::to_string(dp), lbs, gas, zero);
  }
};

constexpr double kLossTol = 1e-4, kWeightTol = 1e-4;

// Every stage on DP2 and DP4, against one process with the same global batch
// (DP·LBS rows per micro-batch, the same GAS > 1) and a loss mask.
TEST_F(DataParallelTest, GptMatchesOneProcessForEveryStage) {
  RunOk(Config("single", "gpt-tiny", 1, 4, 2, 0));
  for (int dp : {2, 4}) {
    for (int zero : {0, 1, 2, 3}) {
      const std::string name = "dp" + std::to_string(dp) + "z" + std::to_string(zero);
      RunOk(Config(name, "gpt-tiny", dp, 4 / dp, 2, zero));
      ExpectClose("gpt", name, "single", kLossTol, kWeightTol);
      json m = Metrics(name);
      EXPECT_EQ(m["config"]["gbs"], 8) << name;
      EXPECT_EQ(m["parallel"]["world_size"], dp) << name;
      EXPECT_EQ(m["parallel"]["zero"], zero) << name;
    }
  }
  // The check can fail: other rows (another seed) move far beyond it.
  json other = Config("other", "gpt-tiny", 2, 2, 2, 0);
  other["seed"] = 8;
  RunOk(other);
  auto [loss, weight] = Distance("other", "single");
  std::printf("gpt other rows: loss rel %.2e, weight abs %.2e\n", loss, weight);
  EXPECT_GT(loss, 100 * kLossTol);
  EXPECT_GT(weight, 10 * kWeightTol);
}

TEST_F(DataParallelTest, GqaLlamaMatchesOneProcessForEveryStage) {
  RunOk(Config("single", "llama-tiny", 1, 4, 2, 0));
  for (int dp : {2, 4}) {
    for (int zero : {0, 1, 2, 3}) {
      const std::string name = "dp" + std::to_string(dp) + "z" + std::to_string(zero);
      RunOk(Config(name, "llama-tiny", dp, 4 / dp, 2, zero));
      ExpectClose("llama", name, "single", kLossTol, kWeightTol);
    }
  }
}

// The checkpoint is one whole model whatever the layout: a DP4 ZeRO-3 finetune
// starts from a one-process pretrain, and a one-process finetune from a DP4
// ZeRO-3 pretrain, each matching the finetune on the other layout.
TEST_F(DataParallelTest, CheckpointsInitializeEveryDataParallelLayout) {
  json one = Config("pre1", "llama-tiny", 1, 4, 1, 0),
       four = Config("pre4", "llama-tiny", 4, 1, 1, 3);
  one["steps"] = four["steps"] = 8;
  RunOk(one);
  RunOk(four);
  auto finetune = [&](const std::string& name, const std::string& init, int dp, int zero) {
    RunOk(Finetune(Config(name, "llama-tiny", dp, 4 / dp, 1, zero), init));
  };
  finetune("ft_1_from_1", "pre1", 1, 0);
  finetune("ft_4_from_1", "pre1", 4, 3);
  finetune("ft_1_from_4", "pre4", 1, 0);
  for (const char* run : {"ft_4_from_1", "ft_1_from_4"})
    ExpectClose("finetune", run, "ft_1_from_1", kLossTol, kWeightTol);
}

// save_init gathers the starting model from the ranks' slices: a DP4 ZeRO-3 run writes the bytes
// one process writes (the same seed's values, whatever the layout).
TEST_F(DataParallelTest, ShardedRunsSaveTheOneProcessStartingModel) {
  json one = Config("one", "gpt-tiny", 1, 4, 1, 0), four = Config("four", "gpt-tiny", 4, 1, 1, 3);
  for (json* c : {&one, &four}) {
    (*c)["steps"] = 2;
    (*c)["save_init"] = true;
  }
  RunOk(one);
  RunOk(four);
  const std::string a = dir_ + "/one/init/model.safetensors",
                    b = dir_ + "/four/init/model.safetensors";
  ASSERT_TRUE(std::filesystem::exists(a) && std::filesystem::exists(b));
  EXPECT_EQ(*ReadFileBytes(a), *ReadFileBytes(b));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/four/init/config.json"));
}

// A sharded run killed after a checkpoint resumes to exactly the weights of an
// uninterrupted run.
TEST_F(DataParallelTest, KilledShardedRunResumesBitForBit) {
  json full = Config("full", "llama-tiny", 2, 2, 2, 3);
  full["steps"] = 40;
  full["checkpoint_every"] = 10;
  ExpectKilledRunResumesBitForBit(full);
}

// Layout and world must agree: a DP2 run started as one process says how to start it.
TEST_F(DataParallelTest, RefusesAWorldThatIsNotTheLayouts) {
  const std::string path = dir_ + "/lonely.json";
  std::ofstream(path) << Config("lonely", "gpt-tiny", 2, 2, 1, 0).dump();
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen((dir_ + "/lonely.log").c_str(), "w", stderr);
    (void)f;
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    execl(TrainerPath().c_str(), "benchmake-train", "--config", path.c_str(), nullptr);
    _exit(127);
  }
  int s = 0;
  waitpid(pid, &s, 0);
  std::ifstream in(dir_ + "/lonely.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(WEXITSTATUS(s), 2) << log;
  EXPECT_NE(log.find("layout TP1PP1DP2 needs 2 ranks"), std::string::npos) << log;
}

}  // namespace
}  // namespace bm::train
