// The exec rule on its own: placeholders, environment, outputs, metrics.
#include <gtest/gtest.h>

#include "rules/exec.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"
#include "tests/support/rule_params.h"

namespace bm::rules {
namespace {

class ExecRuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.target = "t";
    ctx_.inputs = {{"owt.tokens", "/ws/out/owt.tokens"}, {"src/a.txt", "/ws/src/a.txt"}};
    ctx_.workspace_dir = "/ws";
    ctx_.scratch_dir = "/tmp/s/work";
    ctx_.out_dir = "/tmp/s/out";
    ctx_.resume_dir = "/ws/.benchmake/resume/t";
    ctx_.fs = &fs_;
    ctx_.runner = &runner_;
    ASSERT_TRUE(fs_.MakeDirs(ctx_.scratch_dir).ok());
    ASSERT_TRUE(fs_.MakeDirs(ctx_.out_dir).ok());
  }
  // The rule's defaults (as the engine fills them), then `overrides`.
  nlohmann::json Params(nlohmann::json overrides) {
    if (!overrides.contains("command")) overrides["command"] = nlohmann::json::array();
    return testing::WithDefaults(*rule_, std::move(overrides));
  }
  testing::MemoryFilesystem fs_;
  testing::FakeCommandRunner runner_{&fs_};
  engine::StepContext ctx_;
  std::unique_ptr<engine::Rule> rule_ = MakeExecRule();
};

TEST_F(ExecRuleTest, PlaceholdersAndEnvironment) {
  ctx_.params =
      Params({{"command", {"write", "{out}/x", "{in.owt.tokens}|{in.src/a.txt}|{workspace}"}},
              {"outputs", {"x"}},
              {"env", {{"DATA", "{in.owt.tokens}/data.bin"}}},
              {"timeout", 5.0}});
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(fs_.Read("/tmp/s/out/x"), "/ws/out/owt.tokens|/ws/src/a.txt|/ws");
  Command c = runner_.commands().at(0);
  EXPECT_EQ(c.cwd, "/tmp/s/work");
  EXPECT_EQ(c.env["BENCHMAKE_OUT"], "/tmp/s/out");
  EXPECT_EQ(c.env["BENCHMAKE_IN_OWT_TOKENS"], "/ws/out/owt.tokens");
  EXPECT_EQ(c.env["BENCHMAKE_IN_SRC_A_TXT"], "/ws/src/a.txt");
  EXPECT_EQ(c.env["DATA"], "/ws/out/owt.tokens/data.bin");
  ASSERT_TRUE(c.timeout_seconds.has_value());
  EXPECT_EQ(*c.timeout_seconds, 5.0);
}

TEST_F(ExecRuleTest, ShellJoinsTheCommand) {
  ctx_.params = Params({{"command", {"echo $HOME", "> {out}/h"}}, {"shell", true}});
  runner_.SetHandler([](const Command&) -> Result<CommandResult> { return CommandResult{}; });
  ASSERT_TRUE(rule_->Run(ctx_).ok());
  EXPECT_EQ(runner_.commands().at(0).argv,
            (std::vector<std::string>{"/bin/sh", "-c", "echo $HOME > /tmp/s/out/h"}));
}

TEST_F(ExecRuleTest, OutputLeftInWorkingDirectoryIsMovedAndMetricsRead) {
  ctx_.params = Params({{"command", {"write", "m.json", R"({"tokens_per_s": 1234.5})"}},
                        {"outputs", {"m.json"}},
                        {"metrics", "m.json"}});
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(fs_.Exists("/tmp/s/out/m.json"));
  EXPECT_FALSE(fs_.Exists("/tmp/s/work/m.json"));
  EXPECT_EQ(r->metrics["tokens_per_s"], 1234.5);
}

TEST_F(ExecRuleTest, FailuresSayWhat) {
  ctx_.params = Params({{"command", {"write", "{out}/x", "1"}}, {"outputs", {"y"}}});
  EXPECT_NE(rule_->Run(ctx_).status().message().find("declared output 'y' was not produced"),
            std::string::npos);
  ctx_.params = Params({{"command", {"fail", "7"}}});
  EXPECT_NE(rule_->Run(ctx_).status().message().find("exited with status 7"), std::string::npos);
  ctx_.params = Params({{"command", {"write", "{out}/x", "not json"}}, {"metrics", "x"}});
  EXPECT_NE(rule_->Run(ctx_).status().message().find("is not JSON"), std::string::npos);
}

// A command killed by a signal names it as `kill -l` does (a shell says
// "Segmentation fault", $? = 139 = 128 + 11); a bare number sent users to a table.
TEST_F(ExecRuleTest, ACommandKilledByASignalNamesIt) {
  ctx_.params = Params({{"command", {"crash"}}});
  runner_.SetHandler([](const Command&) -> Result<CommandResult> {
    CommandResult r;
    r.term_signal = 11;
    return r;
  });
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "command killed by signal 11 (SIGSEGV)");
}

// {in.NAME} must name an input: Check refuses it in `command` (at its element) and in `env`;
// a shell's braces are no placeholder, and are kept as written.
TEST_F(ExecRuleTest, CheckRejectsAPlaceholderNamingNoInput) {
  std::vector<engine::ParamError> errors =
      rule_->Check(Params({{"command", {"sh", "-c", "cat {in.a.txt} {in.nope} ${X} {in.}"}},
                           {"inputs", {"a.txt"}},
                           {"env", {{"K", "{in.a.txt}"}, {"L", "x{in.gone}"}}}}));
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].param, "command");
  EXPECT_EQ(errors[0].element, 2);
  EXPECT_EQ(errors[0].message, "{in.nope}: no input named 'nope' (inputs: [\"a.txt\"])");
  EXPECT_EQ(errors[1].message, "{in.}: no input named '' (inputs: [\"a.txt\"])");
  EXPECT_EQ(errors[2].param, "env");
  EXPECT_EQ(errors[2].message, "L: {in.gone}: no input named 'gone' (inputs: [\"a.txt\"])");

  ctx_.params = Params({{"command", {"write", "{out}/x", "${X}{y}"}}});
  ASSERT_TRUE(rule_->Run(ctx_).ok());
  EXPECT_EQ(runner_.commands().at(0).argv.back(), "${X}{y}");
}

TEST_F(ExecRuleTest, CheckRejectsEscapingOutputs) {
  std::vector<engine::ParamError> errors =
      rule_->Check(Params({{"command", {"x"}}, {"outputs", {"/abs", "a/../../b", "ok/fine"}}}));
  ASSERT_EQ(errors.size(), 2u);  // gpus' range: the engine's (benchfile_errors_test)
  EXPECT_EQ(errors[0].param, "outputs");
  EXPECT_EQ(errors[1].param, "outputs");
  EXPECT_EQ(rule_->gpus(Params({{"gpus", 2}})), 2);
  EXPECT_TRUE(rule_->streams_progress(Params({{"progress", true}})));
}

}  // namespace
}  // namespace bm::rules
