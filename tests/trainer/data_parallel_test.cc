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

// `benchmake compare A B` on two of these runs' output directories: its exit status and output.
std::pair<int, std::string> Compare(const std::string& a, const std::string& b) {
  const std::string cmd =
      std::string(BENCHMAKE_TEST_BINARY_DIR) + "/benchmake compare '" + a + "' '" + b + "' 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// Gradients summed in bf16 (grad_reduce = "bf16", the CUDA twin's) on DP2 at every ZeRO stage,
// against the fp32 sums of the same layout over 40 steps: another arithmetic (the curves
// differ), aligned by the suites' rule as `benchmake compare` applies it (from step 21, the mean
// relative loss difference below 2%): ALIGNED, exit 0. The check can fail: the same run at a
// tenth of the learning rate, which has learned far less by step 21, is NOT ALIGNED (exit 1).
TEST_F(DataParallelTest, Bf16GradientSumsAlignWithFp32) {
  for (int zero : {0, 1, 2, 3}) {
    const std::string tag = "z" + std::to_string(zero);
    json fp32 = Config("sum32_" + tag, "llama-tiny", 2, 2, 2, zero);
    json bf16 = Config("sum16_" + tag, "llama-tiny", 2, 2, 2, zero);
    fp32["steps"] = bf16["steps"] = 40;
    bf16["grad_reduce"] = "bf16";
    RunOk(fp32);
    RunOk(bf16);
    EXPECT_NE(Losses("sum32_" + tag), Losses("sum16_" + tag)) << tag;
    EXPECT_EQ(Metrics("sum16_" + tag)["parallel"]["grad_reduce"], "bf16") << tag;
    EXPECT_EQ(Metrics("sum32_" + tag)["parallel"]["grad_reduce"], "fp32") << tag;
    auto [status, out] = Compare(dir_ + "/sum32_" + tag, dir_ + "/sum16_" + tag);
    EXPECT_EQ(status, 0) << tag << "\n" << out;
    EXPECT_NE(out.find("ALIGNED: mean relative loss difference"), std::string::npos) << out;
    std::printf(
        "zero %d, bf16 against fp32 sums: %s\n", zero,
        out.substr(out.find("ALIGNED"), out.find('\n', out.find("ALIGNED")) - out.find("ALIGNED"))
            .c_str());
  }
  json slow = Config("sum32_slow", "llama-tiny", 2, 2, 2, 0);
  slow["steps"] = 40;
  slow["lr"] = 3e-4;
  slow["min_lr"] = 3e-5;
  RunOk(slow);
  auto [status, out] = Compare(dir_ + "/sum32_z0", dir_ + "/sum32_slow");
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("NOT ALIGNED"), std::string::npos) << out;
}

// ZeRO-3 keeping the forward's last units gathered (zero3_keep_params) changes no value: the same
// losses and weights, bit for bit, as gathering every unit again, over steps (a unit kept past
// the optimizer step would train on stale weights from the second step on) and micro-batches
// (GAS 2 reads the kept units again). llama-tiny's units: the embeddings, two layers and the
// final norm + head; 1 keeps none, 10^9 every unit but the embeddings.
TEST_F(DataParallelTest, ZeroThreeKeptUnitsGiveTheSameBits) {
  json plain = Config("z3", "llama-tiny", 2, 2, 2, 3);
  RunOk(plain);
  for (int64_t keep : {int64_t{1}, int64_t{1000000000}}) {
    const std::string name = "z3keep" + std::to_string(keep);
    json kept = Config(name, "llama-tiny", 2, 2, 2, 3);
    kept["zero3_keep_params"] = keep;
    RunOk(kept);
    EXPECT_EQ(Losses(name), Losses("z3")) << keep;
    EXPECT_EQ(Weights(name), Weights("z3")) << keep;
    EXPECT_EQ(Metrics(name)["parallel"]["zero3_keep_params"], keep);
  }
  EXPECT_EQ(Metrics("z3")["parallel"]["zero3_keep_params"], 0);
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
