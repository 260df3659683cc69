// The pretrain / finetune / evaluate rules: load-time checks and how they
// launch benchmake-train (with a fake runner and an in-memory filesystem).
#include "rules/train_rules.h"

#include <gtest/gtest.h>

#include "engine/rule.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"

namespace bm::rules {
namespace {

using nlohmann::json;

// Parameters with every default filled, as the engine hands them to a rule.
json WithDefaults(const engine::Rule& rule, json params) {
  for (const engine::ParamSpec& s : rule.params())
    if (!params.contains(s.name) && s.default_value) params[s.name] = *s.default_value;
  return params;
}

std::vector<std::string> Errors(const engine::Rule& rule, json params) {
  std::vector<std::string> out;
  for (const engine::ParamError& e : rule.Check(WithDefaults(rule, std::move(params))))
    out.push_back(e.param + ": " + e.message);
  return out;
}

TEST(TrainRulesTest, DeclareThemselves) {
  auto pre = MakePretrainRule();
  EXPECT_EQ(pre->name(), "pretrain");
  EXPECT_TRUE(pre->platform_dependent());
  EXPECT_TRUE(MakeFinetuneRule()->platform_dependent());
  EXPECT_TRUE(MakeEvaluateRule()->platform_dependent());
  EXPECT_EQ(pre->gpus(WithDefaults(*pre, {{"data", "d"}})), 0);
  EXPECT_EQ(pre->gpus(WithDefaults(*pre, {{"data", "d"}, {"device", "cuda"}})), 1);
  bool lr_in_key = false, ckpt_in_key = true;
  for (const auto& s : pre->params()) {
    if (s.name == "lr") lr_in_key = s.in_key;
    if (s.name == "checkpoint_every") ckpt_in_key = s.in_key;
  }
  EXPECT_TRUE(lr_in_key);
  EXPECT_FALSE(ckpt_in_key);
}

TEST(TrainRulesTest, ValidParamsPass) {
  auto pre = MakePretrainRule();
  EXPECT_TRUE(Errors(*pre, {{"data", "d"}}).empty());
  EXPECT_TRUE(Errors(*MakeFinetuneRule(), {{"data", "d"}, {"init", "p"}}).empty());
  EXPECT_TRUE(Errors(*MakeEvaluateRule(), {{"data", "d"}, {"checkpoint", "p"}}).empty());
}

TEST(TrainRulesTest, RefusesBadParamsNamingThem) {
  auto pre = MakePretrainRule();
  auto expect = [&](json params, const std::string& want) {
    std::vector<std::string> e = Errors(*pre, params);
    ASSERT_EQ(e.size(), 1u) << params.dump();
    EXPECT_NE(e[0].find(want), std::string::npos) << e[0];
  };
  expect({{"data", "d"}, {"overrides", {{"hidden", 100}, {"heads", 12}}}},
         "overrides: heads (12) must divide hidden (100)");
  expect({{"data", "d"}, {"gas", 0}}, "gas: gas must be >= 1");
  expect({{"data", "d"}, {"lbs", -1}}, "lbs: lbs must be >= 1");
  expect({{"data", "d"}, {"layout", "TP2PP1DP1"}}, "layout: layout TP2PP1DP1: tensor and pipeline");
  expect({{"data", "d"}, {"layout", "DP4"}}, "data parallelism is not implemented");
  expect({{"data", "d"}, {"layout", "TP1xPP1"}}, "not of the form TPxPPyDPz");
  expect({{"data", "d"}, {"precision", "bf16"}}, "the cpu backend is fp32 only");
  expect({{"data", "d"}, {"model", "gpt5"}}, "model: unknown model preset 'gpt5'");
  expect({{"data", "d"}, {"mpe", 4096}}, "mpe: mpe (4096) exceeds the model's max_seq (256)");
  expect({{"data", "d"}, {"overrides", {{"depth", 3}}}}, "overrides: unknown model field 'depth'");
  expect({{"data", "d"}, {"warmup_steps", 1000}}, "warmup_steps: warmup_steps must lie in");
  expect({{"data", "d"}, {"device", "tpu"}}, "device: device 'tpu'");
  expect({{"data", "d"}, {"precision", "fp16"}}, "precision 'fp16' on device cpu");
  expect({{"data", "d"}, {"device", "cuda"}, {"precision", "fp16"}, {"growth_interval", 0}},
         "growth_interval: growth_interval must be >= 1");
  expect({{"data", "d"}, {"device", "cuda"}, {"precision", "fp16"}, {"backoff_factor", 2.0}},
         "backoff_factor: backoff_factor must be in (0, 1)");
  // bf16, fp16 and amp are accepted for cuda
  for (const char* p : {"bf16", "fp16", "amp"})
    EXPECT_TRUE(Errors(*pre, {{"data", "d"}, {"device", "cuda"}, {"precision", p}}).empty()) << p;
}

TEST(TrainRulesTest, RunWritesTheConfigAndReturnsMetrics) {
  testing::MemoryFilesystem fs;
  testing::FakeCommandRunner runner(&fs);
  json seen;
  runner.SetHandler([&](const Command& c) -> Result<CommandResult> {
    EXPECT_EQ(c.argv[0], "/tools/benchmake-train");
    EXPECT_EQ(c.argv[1], "--config");
    EXPECT_EQ(c.env.at("OMP_WAIT_POLICY"), "passive");
    seen = json::parse(*fs.ReadFile(c.argv[2]));
    EXPECT_TRUE(
        fs.WriteFileAtomic("/ws/out/p/metrics.json", R"({"format":"benchmake-metrics"})").ok());
    return CommandResult{};
  });
  EXPECT_TRUE(fs.MakeDirs("/ws/scratch").ok());
  EXPECT_TRUE(fs.MakeDirs("/ws/out/p").ok());
  auto pre = MakePretrainRule();
  engine::StepContext ctx;
  ctx.target = "p";
  ctx.params = WithDefaults(*pre, {{"data", "tok"}, {"lr", 0.01}, {"overrides", {{"layers", 2}}}});
  ctx.inputs = {{"tok", "/ws/out/tok"}};
  ctx.scratch_dir = "/ws/scratch";
  ctx.out_dir = "/ws/out/p";
  ctx.resume_dir = "/ws/resume/p";
  ctx.tools_dir = "/tools";
  ctx.runner = &runner;
  ctx.fs = &fs;
  Result<engine::StepResult> r = pre->Run(ctx);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["format"], "benchmake-metrics");
  EXPECT_EQ(seen["mode"], "pretrain");
  EXPECT_EQ(seen["data"], "/ws/out/tok");
  EXPECT_EQ(seen["resume_dir"], "/ws/resume/p");
  EXPECT_EQ(seen["lr"], 0.01);
  EXPECT_EQ(seen["model"]["overrides"]["layers"], 2);
  EXPECT_EQ(seen["init_scale"], 65536.0);  // the fp16 loss scaler's settings travel too
  EXPECT_EQ(seen["growth_interval"], 2000);
  // a failing trainer fails the step
  runner.SetHandler([](const Command&) -> Result<CommandResult> {
    CommandResult c;
    c.exit_code = 1;
    return c;
  });
  Result<engine::StepResult> failed = pre->Run(ctx);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kFailed);
}

}  // namespace
}  // namespace bm::rules
