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
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/model/config.h"

namespace bm::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int32_t kVocab = 64, kEot = 63;

std::string TrainerPath() { return std::string(BENCHMAKE_TEST_BINARY_DIR) + "/benchmake-train"; }

// One rank as a child process; returns its pid.
pid_t StartRank(const std::string& config, int rank, int world, const std::string& rdv,
                const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("LOCAL_WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("BENCHMAKE_RENDEZVOUS", rdv.c_str(), 1);
    setenv("BENCHMAKE_COLLECTIVE_TIMEOUT", "60", 1);
    setenv("OMP_WAIT_POLICY", "passive", 1);
    FILE* f = freopen(log.c_str(), "w", stderr);
    (void)f;
    execl(TrainerPath().c_str(), "benchmake-train", "--config", config.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

class DataParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // A loss mask: the first third of every document does not count.
    std::vector<std::vector<int32_t>> docs = testing::PatternDocs(40, 30, kVocab, kEot, 1), masks;
    for (const auto& d : docs) {
      std::vector<int32_t> m(d.size(), 1);
      for (size_t i = 0; i < d.size() / 3; ++i) m[i] = 0;
      masks.push_back(m);
    }
    testing::WriteSplit(dir_ + "/data", "train", docs, masks);
    testing::WriteSplit(dir_ + "/data", "valid", testing::PatternDocs(4, 30, kVocab, kEot, 2));
    testing::WriteStats(dir_ + "/data", kVocab, kEot);
  }
  void TearDown() override { fs::remove_all(dir_); }

  json Config(const std::string& name, const std::string& preset, int dp, int lbs, int gas,
              int zero) {
    return {{"mode", "pretrain"},
            {"data", dir_ + "/data"},
            {"out_dir", dir_ + "/" + name},
            {"resume_dir", dir_ + "/" + name + ".resume"},
            {"model", {{"preset", preset}, {"overrides", {{"max_seq", 32}}}}},
            {"layout", "DP" + std::to_string(dp)},
            {"zero", zero},
            {"lbs", lbs},
            {"mpe", 16},
            {"gas", gas},
            {"steps", 20},
            {"warmup_steps", 2},
            {"lr", 3e-3},
            {"min_lr", 3e-4},
            {"seed", 7},
            {"threads", 1},
            {"checkpoint_every", 0}};
  }

  // Runs every rank of `config` to the end; returns their exit statuses.
  std::vector<int> Run(const json& config) {
    const std::string name = fs::path(config["out_dir"].get<std::string>()).filename();
    const int world = std::stoi(config["layout"].get<std::string>().substr(2));  // "DPn"
    const std::string path = dir_ + "/" + name + ".json", rdv = dir_ + "/" + name + ".rdv";
    std::ofstream(path) << config.dump();
    fs::remove_all(rdv);
    fs::create_directories(rdv);
    std::vector<pid_t> pids;
    for (int r = 0; r < world; ++r)
      pids.push_back(StartRank(path, r, world, rdv, LogPath(name, r)));
    std::vector<int> status;
    for (pid_t p : pids) {
      int s = 0;
      waitpid(p, &s, 0);
      status.push_back(s);
    }
    return status;
  }
  std::string LogPath(const std::string& name, int rank) const {
    return dir_ + "/" + name + ".rank" + std::to_string(rank) + ".log";
  }
  void RunOk(const json& config) {
    const std::string name = fs::path(config["out_dir"].get<std::string>()).filename();
    std::vector<int> status = Run(config);
    for (size_t r = 0; r < status.size(); ++r) {
      std::ifstream in(LogPath(name, static_cast<int>(r)));
      std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ASSERT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
          << name << " rank " << r << " failed:\n"
          << log;
    }
  }

  std::vector<double> Losses(const std::string& name) const {
    std::vector<double> out;
    std::ifstream in(dir_ + "/" + name + "/log.jsonl");
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) out.push_back(json::parse(line)["loss"]);
    return out;
  }
  std::vector<float> Weights(const std::string& name) const {
    Result<ModelConfig> c = ReadCheckpointConfig(dir_ + "/" + name);
    EXPECT_TRUE(c.ok()) << c.status().message();
    Result<std::vector<float>> w = LoadParameters(dir_ + "/" + name + "/model.safetensors", *c);
    EXPECT_TRUE(w.ok()) << w.status().message();
    return w.ok() ? *w : std::vector<float>();
  }
  json Metrics(const std::string& name) const {
    return json::parse(std::ifstream(dir_ + "/" + name + "/metrics.json"));
  }

  // Largest relative loss difference and absolute weight difference.
  std::pair<double, double> Distance(const std::string& a, const std::string& b) const {
    std::vector<double> la = Losses(a), lb = Losses(b);
    EXPECT_EQ(la.size(), lb.size());
    double loss = 0, weight = 0;
    for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
      loss = std::max(loss, std::abs(la[i] - lb[i]) / std::abs(lb[i]));
    std::vector<float> wa = Weights(a), wb = Weights(b);
    EXPECT_EQ(wa.size(), wb.size());
    for (size_t i = 0; i < std::min(wa.size(), wb.size()); ++i)
      weight = std::max(weight, static_cast<double>(std::abs(wa[i] - wb[i])));
    return {loss, weight};
  }

  std::string dir_;
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
      auto [loss, weight] = Distance(name, "single");
      std::printf("gpt %s: loss rel %.2e, weight abs %.2e\n", name.c_str(), loss, weight);
      EXPECT_LT(loss, kLossTol) << name;
      EXPECT_LT(weight, kWeightTol) << name;
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
      auto [loss, weight] = Distance(name, "single");
      std::printf("llama %s: loss rel %.2e, weight abs %.2e\n", name.c_str(), loss, weight);
      EXPECT_LT(loss, kLossTol) << name;
      EXPECT_LT(weight, kWeightTol) << name;
    }
  }
}

// A sharded run killed after a checkpoint resumes to exactly the weights of an
// uninterrupted run.
TEST_F(DataParallelTest, KilledShardedRunResumesBitForBit) {
  json full = Config("full", "llama-tiny", 2, 2, 2, 3);
  full["steps"] = 40;
  full["checkpoint_every"] = 10;
  RunOk(full);
  json part = full;
  part["out_dir"] = dir_ + "/part";
  part["resume_dir"] = dir_ + "/part.resume";
  const std::string path = dir_ + "/part.json", rdv = dir_ + "/part.rdv";
  std::ofstream(path) << part.dump();
  fs::create_directories(rdv);
  std::vector<pid_t> pids = {StartRank(path, 0, 2, rdv, LogPath("part", 0)),
                             StartRank(path, 1, 2, rdv, LogPath("part", 1))};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(dir_ + "/part.resume/LATEST") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (pid_t p : pids) kill(p, SIGKILL);
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  ASSERT_TRUE(fs::exists(dir_ + "/part.resume/LATEST"));
  fs::remove_all(rdv);
  RunOk(part);
  json m = Metrics("part");
  ASSERT_TRUE(m["provenance"]["resumed_from_step"].is_number()) << m.dump();
  EXPECT_GE(m["provenance"]["resumed_from_step"].get<int>(), 10);
  EXPECT_EQ(Weights("part"), Weights("full"));
  EXPECT_EQ(Losses("part"), Losses("full"));
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
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(WEXITSTATUS(s), 2) << log;
  EXPECT_NE(log.find("layout TP1PP1DP2 needs 2 ranks"), std::string::npos) << log;
}

}  // namespace
}  // namespace bm::train
