// The PyTorch peer (examples/tools/torch_align.py) takes its hyper-parameters from a
// benchmake-train run's metrics.json and its learning rate from its own copy of the schedule:
// both checked here against the trainer, where python3 exists (torch_align.py imports no torch
// at module level). The schedule's values at the steps below are worked out by hand from
// trainer/run/schedule.h's formula (lr 1e-3, min_lr 1e-4, 20 warmup steps of 520).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/trainer/test_data.h"
#include "trainer/run/schedule.h"
#include "trainer/run/train_loop.h"

namespace bm::train {
namespace {

std::string ToolsDir() {
  const char* dir = std::getenv("BENCHMAKE_SOURCE_DIR");
  return std::string(dir ? dir : BENCHMAKE_TEST_SOURCE_DIR) + "/examples/tools";
}

// stdout of a Python snippet run with examples/tools on the path; "" when it fails.
std::string Python(const std::string& code) {
  const std::string cmd = "cd '" + ToolsDir() + "' && python3 -c '" + code + "' 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << code << "\n" << out;
  return out;
}

class PeerSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("python3 -c pass > /dev/null 2>&1") != 0)
      GTEST_SKIP() << "no python3 on this machine: the peer's settings are checked where there "
                      "is one";
  }
};

TEST_F(PeerSettingsTest, TheScheduleIsTheTrainers) {
  // By hand: warmup 10/20 of 1e-3; the top; half-way through the cosine (250 of 500 steps):
  // 1e-4 + 9e-4 / 2; the last step: min_lr.
  const std::vector<std::pair<int64_t, double>> hand = {
      {1, 5e-5}, {10, 5e-4}, {20, 1e-3}, {270, 5.5e-4}, {520, 1e-4}};
  std::string code = "import torch_align as t\nfor s in (1, 10, 20, 21, 270, 400, 519, 520):";
  code += " print(repr(t.learning_rate(s, 520, 20, 1e-3, 1e-4)))";
  std::istringstream out(Python(code));
  for (int64_t s : {1, 10, 20, 21, 270, 400, 519, 520}) {
    double peer = 0;
    ASSERT_TRUE(out >> peer) << "step " << s;
    EXPECT_DOUBLE_EQ(peer, LearningRate(s, 520, 20, 1e-3, 1e-4)) << "step " << s;
    for (auto [step, value] : hand) {
      if (step == s) {
        EXPECT_NEAR(peer, value, 1e-15) << "step " << s;
      }
    }
  }
}

// A real run's metrics.json (DP2: GBS = LBS x GAS x DP) gives the peer every setting of the run.
TEST_F(PeerSettingsTest, SettingsComeFromTheRunsMetrics) {
  const std::string dir = testing::TempDir("peer_settings");
  testing::WriteSplit(dir + "/data", "train", testing::PatternDocs(20, 30, 64, 63, 1));
  testing::WriteStats(dir + "/data", 64, 63);
  nlohmann::json j = testing::TinyPretrainConfig(dir + "/data", dir + "/out", "llama-tiny");
  j["threads"] = 1;
  j["steps"] = 4;
  j["warmup_steps"] = 1;
  j["gas"] = 3;
  j["lr"] = 2e-3;
  j["min_lr"] = 5e-4;
  j["weight_decay"] = 0.05;
  j["beta1"] = 0.85;
  j["beta2"] = 0.99;
  j["eps"] = 1e-6;
  j["grad_clip"] = 0.5;
  j["seed"] = 77;
  Result<RunConfig> run = ParseRunConfig(j);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(RunTraining(*run, nullptr).ok());
  std::string code =
      "import json, torch_align as t\n"
      "class A: pass\n"
      "a = A(); a.like = \"" +
      dir +
      "/out\"\n"
      "for k in (\"lr\", \"min_lr\", \"warmup_steps\", \"steps\", \"weight_decay\", \"beta1\", "
      "\"beta2\", \"eps\", \"grad_clip\", \"seed\", \"gas\", \"mpe\", \"precision\"): setattr(a, "
      "k, None)\n"
      "print(json.dumps(t.settings(a), sort_keys=True))";
  nlohmann::json got = nlohmann::json::parse(Python(code), nullptr, false);
  ASSERT_FALSE(got.is_discarded());
  const nlohmann::json want = {{"lr", 2e-3},
                               {"min_lr", 5e-4},
                               {"warmup_steps", 1},
                               {"steps", 4},
                               {"weight_decay", 0.05},
                               {"beta1", 0.85},
                               {"beta2", 0.99},
                               {"eps", 1e-6},
                               {"grad_clip", 0.5},
                               {"seed", 77},
                               {"gas", 3},
                               {"mpe", 16},
                               {"gbs", 12},
                               {"precision", "fp32"}};
  for (const auto& [key, value] : want.items()) {
    ASSERT_TRUE(got.contains(key)) << key << " in " << got.dump();
    if (value.is_number_float()) {
      EXPECT_DOUBLE_EQ(got[key].get<double>(), value.get<double>()) << key;
    } else {
      EXPECT_EQ(got[key], value) << key;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bm::train
