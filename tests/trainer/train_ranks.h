// Tests that run benchmake-train as several processes (Gloo between them), the
// way a launcher does, over a small corpus with a loss mask: the fixture of
// data_parallel_test.cc and model_parallel_test.cc. Each rank's stderr goes to
// a log file named after the run; a failed rank's log is in the failure.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/model/config.h"
#include "trainer/run/run_config.h"

namespace bm::train::testing {

// One layout of the model-parallel proofs (model_parallel_test.cc, cuda_ranks_test.cc): the
// layout, the ZeRO stage and sequence parallelism; Name() is its run's name, the stage in it
// when above 1 ("TP2PP1DP2_zero3_sp").
struct LayoutCase {
  std::string layout;
  int zero = 0;
  bool sequence_parallel = false;
  std::string Name() const {
    return layout + (zero > 1 ? "_zero" + std::to_string(zero) : "") +
           (sequence_parallel ? "_sp" : "");
  }
};

// The layouts both model-parallel proofs run (each adds its sequence-parallel cases): TP and PP
// alone and together, with DP2 at ZeRO-1, and TP2 / PP2 / TP2PP2 with ZeRO-2 and ZeRO-3 over DP2.
inline std::vector<LayoutCase> ModelParallelLayouts() {
  return {{"TP2PP1DP1", 0, false}, {"TP1PP2DP1", 0, false}, {"TP2PP2DP1", 0, false},
          {"TP2PP1DP2", 1, false}, {"TP1PP2DP2", 1, false}, {"TP2PP1DP2", 2, false},
          {"TP2PP1DP2", 3, false}, {"TP1PP2DP2", 2, false}, {"TP1PP2DP2", 3, false},
          {"TP2PP2DP2", 2, false}, {"TP2PP2DP2", 3, false}};
}

// $BENCHMAKE_TRAIN, else the build's: the GPU machine runs the test binaries
// from where the device call unpacked them (bench/gpu_check.sh).
inline std::string TrainerPath() {
  if (const char* path = std::getenv("BENCHMAKE_TRAIN"); path && *path) return path;
  return std::string(BENCHMAKE_TEST_BINARY_DIR) + "/benchmake-train";
}

// One rank as a child process; returns its pid. local_rank: the GPU it
// drives (its rank unless several share one).
inline pid_t StartRank(const std::string& config, int rank, int world, const std::string& rdv,
                       const std::string& log, int local_rank) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
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

class TrainRanksTest : public ::testing::Test {
 protected:
  static constexpr int32_t kVocab = 64, kEot = 63;

  void SetUp() override {
    dir_ = TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // A loss mask: the first third of every document does not count.
    std::vector<std::vector<int32_t>> docs = PatternDocs(40, 30, kVocab, kEot, 1), masks;
    for (const auto& d : docs) {
      std::vector<int32_t> m(d.size(), 1);
      for (size_t i = 0; i < d.size() / 3; ++i) m[i] = 0;
      masks.push_back(m);
    }
    WriteSplit(dir_ + "/data", "train", docs, masks);
    WriteSplit(dir_ + "/data", "valid", PatternDocs(4, 30, kVocab, kEot, 2));
    WriteStats(dir_ + "/data", kVocab, kEot);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // 20 steps of a tiny preset on `layout`, one thread per rank.
  nlohmann::json Config(const std::string& name, const std::string& preset,
                        const std::string& layout, int lbs, int gas, int zero) const {
    return {{"mode", "pretrain"},
            {"data", dir_ + "/data"},
            {"out_dir", dir_ + "/" + name},
            {"resume_dir", dir_ + "/" + name + ".resume"},
            {"model", {{"preset", preset}, {"overrides", {{"max_seq", 32}}}}},
            {"layout", layout},
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

  static std::string NameOf(const nlohmann::json& config) {
    return std::filesystem::path(config["out_dir"].get<std::string>()).filename();
  }
  static int WorldOf(const nlohmann::json& config) {
    Result<ParallelLayout> l = ParseLayout(config["layout"].get<std::string>());
    return l.ok() ? l->tp * l->pp * l->dp : 1;
  }

  // Starts every rank of `config` (a fresh rendezvous); returns their pids.
  std::vector<pid_t> Start(const nlohmann::json& config) const {
    const std::string name = NameOf(config);
    const std::string path = dir_ + "/" + name + ".json", rdv = dir_ + "/" + name + ".rdv";
    std::ofstream(path) << config.dump();
    std::filesystem::remove_all(rdv);
    std::filesystem::create_directories(rdv);
    std::vector<pid_t> pids;
    const int world = WorldOf(config);
    for (int r = 0; r < world; ++r)
      pids.push_back(StartRank(path, r, world, rdv, LogPath(name, r), share_one_gpu_ ? 0 : r));
    return pids;
  }
  // Runs every rank of `config` to the end; returns their exit statuses.
  std::vector<int> Run(const nlohmann::json& config) const {
    std::vector<int> status;
    for (pid_t p : Start(config)) {
      int s = 0;
      waitpid(p, &s, 0);
      status.push_back(s);
    }
    return status;
  }
  // Runs `full` (which writes resume checkpoints) to the end; then the same
  // run again elsewhere, killed with SIGKILL as soon as its first checkpoint
  // is committed and rerun: it must resume and end with the same bits.
  void ExpectKilledRunResumesBitForBit(const nlohmann::json& full) const {
    RunOk(full);
    nlohmann::json part = full;
    part["out_dir"] = dir_ + "/part";
    part["resume_dir"] = dir_ + "/part.resume";
    const std::string latest = dir_ + "/part.resume/LATEST";
    std::vector<pid_t> pids = Start(part);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(latest) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (pid_t p : pids) kill(p, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
    ASSERT_TRUE(std::filesystem::exists(latest)) << "the run wrote no checkpoint";
    RunOk(part);
    nlohmann::json m = Metrics("part");
    ASSERT_TRUE(m["provenance"]["resumed_from_step"].is_number()) << m.dump();
    EXPECT_GE(m["provenance"]["resumed_from_step"].get<int>(), full["checkpoint_every"].get<int>());
    EXPECT_EQ(Weights("part"), Weights(NameOf(full)));
    EXPECT_EQ(Losses("part"), Losses(NameOf(full)));
  }

  std::string LogPath(const std::string& name, int rank) const {
    return dir_ + "/" + name + ".rank" + std::to_string(rank) + ".log";
  }
  std::string Log(const std::string& name, int rank) const {
    std::ifstream in(LogPath(name, rank));
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // Every rank must exit 0. When one does not, the failure shows how each rank
  // ended and every rank's log: the rank that failed first (a crash) is often
  // not the one that reports it (a peer timing out on it).
  void RunOk(const nlohmann::json& config) const {
    const std::string name = NameOf(config);
    std::vector<int> status = Run(config);
    auto ok = [](int s) { return WIFEXITED(s) && WEXITSTATUS(s) == 0; };
    if (std::all_of(status.begin(), status.end(), ok)) return;
    std::string report;
    for (size_t r = 0; r < status.size(); ++r) {
      const int s = status[r];
      report += name + " rank " + std::to_string(r) + ": " +
                (WIFSIGNALED(s) ? "killed by signal " + std::to_string(WTERMSIG(s))
                                : "exit " + std::to_string(WEXITSTATUS(s))) +
                "\n" + Log(name, static_cast<int>(r)) + "\n";
    }
    FAIL() << report;
  }

  // A field of every log.jsonl record: "loss", "grad_norm".
  std::vector<double> Logged(const std::string& name, const char* field = "loss") const {
    std::vector<double> out;
    for (const nlohmann::json& r : ReadLog(dir_ + "/" + name)) out.push_back(r[field]);
    return out;
  }
  std::vector<double> Losses(const std::string& name) const { return Logged(name); }
  std::vector<float> Weights(const std::string& name) const {
    Result<ModelConfig> c = ReadCheckpointConfig(dir_ + "/" + name);
    EXPECT_TRUE(c.ok()) << c.status().message();
    if (!c.ok()) return {};
    Result<std::vector<float>> w = LoadParameters(dir_ + "/" + name + "/model.safetensors", *c);
    EXPECT_TRUE(w.ok()) << w.status().message();
    return w.ok() ? *w : std::vector<float>();
  }
  nlohmann::json Metrics(const std::string& name) const {
    return nlohmann::json::parse(std::ifstream(dir_ + "/" + name + "/metrics.json"));
  }

  // Run `name` against `reference`: every step's loss and gradient norm within loss_tol
  // (relative), the final weights within weight_tol (absolute); prints the distances.
  void ExpectMatches(const std::string& preset, const std::string& name,
                     const std::string& reference, double loss_tol, double weight_tol) const {
    ExpectClose(preset, name, reference, loss_tol, weight_tol);
    const std::vector<double> norm = Logged(name, "grad_norm"),
                              want = Logged(reference, "grad_norm");
    ASSERT_EQ(norm.size(), want.size());
    for (size_t i = 0; i < norm.size(); ++i)
      EXPECT_NEAR(norm[i], want[i], loss_tol * want[i]) << name << " step " << i + 1;
  }

  // The same for the losses and the final weights only.
  void ExpectClose(const std::string& what, const std::string& name, const std::string& reference,
                   double loss_tol, double weight_tol) const {
    auto [loss, weight] = Distance(name, reference);
    std::printf("%s %s: loss rel %.2e, weight abs %.2e\n", what.c_str(), name.c_str(), loss,
                weight);
    EXPECT_LT(loss, loss_tol) << name;
    EXPECT_LT(weight, weight_tol) << name;
  }

  // `config` (a pretrain's) turned into an 8-step finetune from run `init`'s checkpoint.
  nlohmann::json Finetune(nlohmann::json config, const std::string& init) const {
    config["mode"] = "finetune";
    config["init"] = dir_ + "/" + init;
    config["steps"] = 8;
    config.erase("model");
    return config;
  }

  // The checkpoint is one whole model whatever the layout: an 8-step llama-tiny pretrain on
  // TP1PP1DP1 ("a") and one on TP2PP2 ("b") initialize finetunes on the other layout, each
  // within the bounds of the finetune of "a" on TP1PP1DP1. config(name, layout) makes a
  // fixture's llama-tiny run.
  template <typename MakeConfig>
  void ExpectCheckpointsInitializeAnyLayout(MakeConfig config, double loss_tol,
                                            double weight_tol) const {
    nlohmann::json a = config("a", "TP1PP1DP1"), b = config("b", "TP2PP2");
    a["steps"] = b["steps"] = 8;
    RunOk(a);
    RunOk(b);
    for (auto [name, init, layout] : {std::tuple{"a_tp1", "a", "TP1PP1DP1"},
                                      {"a_tp2pp2", "a", "TP2PP2"},
                                      {"b_tp1", "b", "TP1PP1DP1"}})
      RunOk(Finetune(config(name, layout), init));
    for (const char* run : {"a_tp2pp2", "b_tp1"})
      ExpectClose("finetune", run, "a_tp1", loss_tol, weight_tol);
  }

  // Largest relative loss difference and absolute weight difference.
  std::pair<double, double> Distance(const std::string& a, const std::string& b) const {
    return DistanceOf(a, b, [this](const std::string& name) { return Weights(name); });
  }
  // The same with the runs' weights read by `weights(name)` (a LLaVA checkpoint, say).
  template <typename ReadWeights>
  std::pair<double, double> DistanceOf(const std::string& a, const std::string& b,
                                       ReadWeights weights) const {
    std::vector<double> la = Losses(a), lb = Losses(b);
    EXPECT_EQ(la.size(), lb.size());
    double loss = 0, weight = 0;
    for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
      loss = std::max(loss, std::abs(la[i] - lb[i]) / std::abs(lb[i]));
    std::vector<float> wa = weights(a), wb = weights(b);
    EXPECT_EQ(wa.size(), wb.size());
    for (size_t i = 0; i < std::min(wa.size(), wb.size()); ++i)
      weight = std::max(weight, static_cast<double>(std::abs(wa[i] - wb[i])));
    return {loss, weight};
  }

  std::string dir_;
  bool share_one_gpu_ = false;  // every rank drives GPU 0 (LOCAL_RANK 0)
};

}  // namespace bm::train::testing
