// The default pipeline's staleness, through the real engine with the real
// pretrain / finetune / evaluate rules and a fake benchmake-train: editing
// pretrain's lr reruns pretrain and everything after it but not the data step;
// editing only evaluate's parameters reruns only evaluate.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "engine/build.h"
#include "rules/registry.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"

namespace bm::rules {
namespace {

using nlohmann::json;

constexpr char kPipeline[] = R"(
[target.tokens]
rule = "exec"
inputs = ["src/corpus.txt"]
command = ["copy", "{in.src/corpus.txt}", "{out}/train.bin"]
outputs = ["train.bin"]

[target.pretrain]
rule = "pretrain"
data = "tokens"
model = "llama-tiny"
mpe = 32
lr = 0.003

[target.finetune]
rule = "finetune"
init = "pretrain"
data = "tokens"
mpe = 32

[target.evaluate]
rule = "evaluate"
checkpoint = "finetune"
data = "tokens"
mpe = 32
eval_examples = 64
)";

class TrainPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("BENCHMAKE_CACHE_DIR", "/cache", 1);
    ::setenv("BENCHMAKE_PLATFORM", R"({"trainer_build": "test", "gpu_count": 0})", 1);
    RegisterBuiltinRules(rules_);
    ws_.fs = &fs_;
    ws_.runner = &runner_;
    ws_.rules = &rules_;
    ws_.root = "/ws";
    ws_.benchfile = "/ws/BENCHFILE.toml";
    ws_.tools_dir = "/tools";
    ws_.self_exe = "/tools/benchmake";
    fs_.Write("/ws/src/corpus.txt", "corpus");
    fs_.Write(ws_.benchfile, kPipeline);
    // A fake trainer: writes a checkpoint whose bytes depend on the run config.
    runner_.SetHandler([this](const Command& c) -> Result<CommandResult> {
      if (c.argv[0] == "copy") {  // the exec data step
        fs_.Write(c.argv[2], fs_.Read(c.argv[1]));
        return CommandResult{};
      }
      json run = json::parse(fs_.Read(c.argv[2]));
      runs_.push_back(run["mode"]);
      fs_.Write(run["out_dir"].get<std::string>() + "/model.safetensors", run.dump());
      fs_.Write(run["out_dir"].get<std::string>() + "/metrics.json", R"({"kind": "x"})");
      return CommandResult{};
    });
  }
  void TearDown() override { ::unsetenv("BENCHMAKE_PLATFORM"); }

  void Edit(const std::string& from, const std::string& to) {
    std::string text = fs_.Read(ws_.benchfile);
    size_t pos = text.find(from);
    ASSERT_NE(pos, std::string::npos) << from;
    text.replace(pos, from.size(), to);
    fs_.Write(ws_.benchfile, text);
  }
  engine::InProcessSummary Build() {
    runs_.clear();
    std::ostringstream console;
    engine::StepOptions options;
    options.console = &console;
    Result<engine::InProcessSummary> r = engine::BuildInProcess(ws_, options);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : engine::InProcessSummary{};
  }

  testing::MemoryFilesystem fs_;
  testing::FakeCommandRunner runner_{&fs_};
  engine::RuleRegistry rules_;
  engine::Workspace ws_;
  std::vector<std::string> runs_;
};

TEST_F(TrainPipelineTest, EditingLrRerunsPretrainAndAfterButNotTheData) {
  Build();
  EXPECT_EQ(runs_, (std::vector<std::string>{"pretrain", "finetune", "evaluate"}));
  Build();
  EXPECT_TRUE(runs_.empty());
  Edit("lr = 0.003", "lr = 0.001");
  engine::InProcessSummary s = Build();
  EXPECT_EQ(s.outcomes["tokens"], engine::StepOutcome::kUpToDate);
  EXPECT_EQ(runs_, (std::vector<std::string>{"pretrain", "finetune", "evaluate"}));
}

TEST_F(TrainPipelineTest, EditingOnlyEvaluateRerunsOnlyEvaluate) {
  Build();
  Edit("eval_examples = 64", "eval_examples = 32");
  engine::InProcessSummary s = Build();
  EXPECT_EQ(s.outcomes["tokens"], engine::StepOutcome::kUpToDate);
  EXPECT_EQ(s.outcomes["pretrain"], engine::StepOutcome::kUpToDate);
  EXPECT_EQ(s.outcomes["finetune"], engine::StepOutcome::kUpToDate);
  EXPECT_EQ(runs_, (std::vector<std::string>{"evaluate"}));
}

}  // namespace
}  // namespace bm::rules
