// The pretrain / finetune / evaluate rules: load-time checks and how they
// launch benchmake-train (with a fake runner and an in-memory filesystem).
#include "rules/train_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "engine/rule.h"
#include "engine/spec_builder.h"
#include "rules/train_common.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"
#include "tests/support/rule_params.h"

namespace bm::rules {
namespace {

using nlohmann::json;

using testing::WithDefaults;

// A pretrain step "p" on /ws as the engine hands it to the rule, its commands
// run by `runner` on `fs`.
engine::StepContext PretrainContext(const engine::Rule& rule, json params,
                                    testing::MemoryFilesystem& fs,
                                    testing::FakeCommandRunner& runner) {
  EXPECT_TRUE(fs.MakeDirs("/ws/scratch").ok());
  EXPECT_TRUE(fs.MakeDirs("/ws/out/p").ok());
  engine::StepContext ctx;
  ctx.target = "p";
  ctx.params = WithDefaults(rule, std::move(params));
  ctx.inputs = {{"tok", "/ws/out/tok"}};
  ctx.scratch_dir = "/ws/scratch";
  ctx.out_dir = "/ws/out/p";
  ctx.resume_dir = "/ws/resume/p";
  ctx.tools_dir = "/tools";
  ctx.runner = &runner;
  ctx.fs = &fs;
  return ctx;
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
  bool window_in_key = true, keep_in_key = true;  // the same bits either way
  for (const auto& s : pre->params()) {
    if (s.name == "lr") lr_in_key = s.in_key;
    if (s.name == "checkpoint_every") ckpt_in_key = s.in_key;
    if (s.name == "nccl_window") window_in_key = s.in_key;
    if (s.name == "zero3_keep_params") keep_in_key = s.in_key;
  }
  EXPECT_TRUE(lr_in_key);
  EXPECT_FALSE(ckpt_in_key);
  EXPECT_FALSE(window_in_key);
  EXPECT_FALSE(keep_in_key);
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
  expect({{"data", "d"}, {"zero", 4}}, "zero: zero = 4: the ZeRO stage is 0, 1, 2 or 3");
  EXPECT_TRUE(Errors(*pre, {{"data", "d"}, {"layout", "DP4"}, {"zero", 3}}).empty());
  // Tensor and pipeline parallelism load when the model splits that way.
  EXPECT_TRUE(Errors(*pre, {{"data", "d"}, {"layout", "TP2PP2DP2"}, {"zero", 1}}).empty());
  expect({{"data", "d"}, {"layout", "TP4"}, {"model", "llama-tiny"}, {"mpe", 32}},
         "layout: layout TP4PP1DP1: tensor parallelism TP4 splits the key/value heads across "
         "ranks, but the model's kv_heads (2) is not divisible by 4");
  expect({{"data", "d"}, {"layout", "DP2"}, {"sequence_parallel", true}},
         "sequence_parallel: sequence_parallel = true with layout TP1PP1DP2: sequence "
         "parallelism splits the tokens over the tensor-parallel group, so it needs TP > 1");
  expect({{"data", "d"}, {"layout", "TP4"}, {"lbs", 1}, {"mpe", 30}, {"sequence_parallel", true}},
         "sequence_parallel: sequence_parallel = true: TP4 must divide a micro-batch's lbs x mpe "
         "= 1 x 30 tokens");
  EXPECT_TRUE(
      Errors(*pre, {{"data", "d"}, {"layout", "TP2PP2"}, {"sequence_parallel", true}}).empty());
  expect({{"data", "d"}, {"layout", "PP8"}},
         "layout: layout TP1PP8DP1: pipeline parallelism PP8 needs at least as many layers");
  expect({{"data", "d"}, {"layout", "TP1xPP1"}}, "not of the form TPxPPyDPz");
  expect({{"data", "d"}, {"model", "gpt5"}}, "model: unknown model preset 'gpt5'");
  expect({{"data", "d"}, {"mpe", 4096}}, "mpe: mpe (4096) exceeds the model's max_seq (256)");
  expect({{"data", "d"}, {"overrides", {{"depth", 3}}}}, "overrides: unknown model field 'depth'");
  expect({{"data", "d"}, {"warmup_steps", 1000}}, "warmup_steps: warmup_steps must lie in");
  expect({{"data", "d"}, {"device", "tpu"}}, "device: device 'tpu'");
  expect({{"data", "d"}, {"device", "cuda"}, {"precision", "fp16"}, {"growth_interval", 0}},
         "growth_interval: growth_interval must be >= 1");
  expect({{"data", "d"}, {"device", "cuda"}, {"precision", "fp16"}, {"backoff_factor", 2.0}},
         "backoff_factor: backoff_factor must be in (0, 1)");
  expect({{"data", "d"}, {"device", "cuda"}, {"grad_reduce", "fp8"}},
         "grad_reduce: grad_reduce 'fp8': the gradients' type on the wire is fp32 or bf16");
  EXPECT_TRUE(Errors(*pre, {{"data", "d"}, {"device", "cuda"}, {"grad_reduce", "bf16"}}).empty());
  // The NCCL window is device memory of NCCL's: cuda, and not over Gloo.
  expect({{"data", "d"}, {"nccl_window", true}},
         "nccl_window: nccl_window = true with device 'cpu' and communicator 'auto': the window "
         "is NCCL device memory (device cuda, communicator auto or nccl)");
  EXPECT_TRUE(
      Errors(*pre, {{"data", "d"}, {"device", "cuda"}, {"layout", "DP2"}, {"nccl_window", true}})
          .empty());
  // ZeRO-3's kept units: a count, at zero 3 only.
  EXPECT_TRUE(
      Errors(*pre, {{"data", "d"}, {"layout", "DP2"}, {"zero", 3}, {"zero3_keep_params", 1000000}})
          .empty());
  // cuDNN's attention backward: blocks, one call or the plan's choice; cuda in 16 bits only.
  EXPECT_TRUE(Errors(*pre, {{"data", "d"},
                            {"device", "cuda"},
                            {"precision", "bf16"},
                            {"attention_backward", "one_call"}})
                  .empty());
  expect({{"data", "d"}, {"device", "cuda"}, {"precision", "bf16"}, {"attention_backward", "all"}},
         "attention_backward: attention_backward 'all': cuDNN's attention backward runs over "
         "\"blocks\" of keys, in \"one_call\", or as the memory plan chooses (\"auto\")");
  expect({{"data", "d"}, {"attention_backward", "blocks"}},
         "attention_backward: attention_backward 'blocks' with device 'cpu', precision 'fp32' and "
         "attention 'auto': it chooses how cuDNN's attention runs, which needs device cuda, "
         "precision bf16 or fp16 and attention auto or cudnn");
  expect({{"data", "d"}, {"device", "cuda"}, {"attention_backward", "one_call"}},
         "precision 'fp32'");
  expect({{"data", "d"}, {"layout", "DP2"}, {"zero", 3}, {"zero3_keep_params", -1}},
         "zero3_keep_params: zero3_keep_params = -1: a count of parameters, 0 or more");
  expect({{"data", "d"}, {"layout", "DP2"}, {"zero", 2}, {"zero3_keep_params", 1000}},
         "zero3_keep_params: zero3_keep_params = 1000 with zero = 2: it keeps ZeRO-3's gathered "
         "units to their backward (set zero = 3, or leave it out)");
  // bf16, fp16 and amp are accepted for cuda
  for (const char* p : {"bf16", "fp16", "amp"})
    EXPECT_TRUE(Errors(*pre, {{"data", "d"}, {"device", "cuda"}, {"precision", p}}).empty()) << p;
}

// Valid values this trainer or machine cannot run load fine and are refused
// when a build is planned (engine/plan.h), each message naming the value.
TEST(TrainRulesTest, UnsupportedHereIsAPlanTimeRefusal) {
  auto unsupported = [&](const engine::Rule& rule, json params) {
    params = WithDefaults(rule, std::move(params));
    EXPECT_TRUE(rule.Check(params).empty()) << params.dump();
    std::string all;
    for (const std::string& m : rule.Unsupported(params)) all += m + "\n";
    return all;
  };
  auto pre = MakePretrainRule();
  // TP/PP: both backends run ZeRO-2 and 3 with TP, PP or both.
  EXPECT_EQ(unsupported(*pre, {{"data", "d"}, {"layout", "TP2PP1DP4"}}), "");
  for (const char* layout : {"TP2PP1DP2", "TP1PP2DP2", "TP2PP2DP2"})
    for (int zero : {2, 3})
      EXPECT_EQ(unsupported(*pre, {{"data", "d"}, {"layout", layout}, {"zero", zero}}), "")
          << layout << " zero " << zero;
  for (int zero : {2, 3})
    EXPECT_EQ(unsupported(*pre, {{"data", "d"},
                                 {"layout", "TP2PP1DP2"},
                                 {"zero", zero},
                                 {"device", "cuda"},
                                 {"sequence_parallel", true}}),
              "")
        << "cuda zero " << zero;
  for (const char* layout : {"TP1PP2DP2", "TP2PP2DP2"})
    for (int zero : {2, 3})
      EXPECT_EQ(unsupported(
                    *pre, {{"data", "d"}, {"layout", layout}, {"zero", zero}, {"device", "cuda"}}),
                "")
          << layout << " cuda zero " << zero;
  // cuda: tensor, pipeline and sequence parallelism.
  EXPECT_EQ(unsupported(*pre, {{"data", "d"}, {"layout", "TP2PP1DP4"}, {"device", "cuda"}}), "");
  EXPECT_EQ(unsupported(*pre, {{"data", "d"},
                               {"layout", "TP2PP2DP2"},
                               {"device", "cuda"},
                               {"sequence_parallel", true}}),
            "");
  EXPECT_NE(unsupported(*pre, {{"data", "d"}, {"precision", "bf16"}}).find("fp32 only"),
            std::string::npos);
  EXPECT_NE(unsupported(*pre, {{"data", "d"}, {"precision", "fp16"}})
                .find("precision 'fp16' on device cpu"),
            std::string::npos);
  // Gradients summed in bf16: both backends.
  EXPECT_EQ(unsupported(*pre, {{"data", "d"}, {"layout", "DP2"}, {"grad_reduce", "bf16"}}), "");
  EXPECT_EQ(unsupported(*pre, {{"data", "d"},
                               {"layout", "TP2PP2DP2"},
                               {"zero", 3},
                               {"device", "cuda"},
                               {"grad_reduce", "bf16"}}),
            "");
  EXPECT_NE(
      unsupported(*MakeEvaluateRule(), {{"data", "d"}, {"checkpoint", "c"}, {"layout", "DP2"}})
          .find("layout TP1PP1DP2: evaluation runs on one rank"),
      std::string::npos);
  // GPUs are the engine's check (engine/plan.h), not the rule's.
  EXPECT_EQ(unsupported(*pre, {{"data", "d"}, {"device", "cuda"}, {"layout", "DP8"}}), "");
  EXPECT_EQ(unsupported(*pre, {{"data", "d"}}), "");
  // The model is still checked at load time alongside an unsupported layout.
  EXPECT_EQ(
      Errors(*pre, {{"data", "d"}, {"layout", "TP2PP1DP4"}, {"device", "cuda"}, {"model", "gpt5"}})
          .size(),
      1u);
}

// A LLaVA preset as pretrain's model: its language model checked at load time (overrides, mpe),
// what the LLaVA loop lacks refused at plan time naming it, and the facts its readers see.
TEST(TrainRulesTest, LlavaPresetChecksAndRefusals) {
  auto pre = MakePretrainRule();
  const json ok = {{"data", "d"}, {"model", "llava-tiny"}, {"mpe", 64}, {"checkpoint_every", 0}};
  EXPECT_TRUE(Errors(*pre, ok).empty());
  EXPECT_TRUE(pre->Unsupported(WithDefaults(*pre, ok)).empty());
  json p = ok;
  p["mpe"] = 65;  // llama-tiny's max_seq is 64
  EXPECT_EQ(Errors(*pre, p),
            std::vector<std::string>{"mpe: mpe (65) exceeds the model's max_seq (64); raise "
                                     "overrides.max_seq or lower mpe"});
  p = ok;
  p["overrides"] = {{"hidden", 66}};  // 4 heads do not divide 66
  ASSERT_EQ(Errors(*pre, p).size(), 1u);
  EXPECT_EQ(Errors(*pre, p)[0].rfind("overrides: ", 0), 0u) << Errors(*pre, p)[0];
  p = ok;
  p["overrides"] = {{"max_seq", 128}};
  p["mpe"] = 128;
  EXPECT_TRUE(Errors(*pre, p).empty());

  // trainable: the parts of a LLaVA model AdamW updates, into model.trainable of the run config.
  p = ok;
  p["trainable"] = {"projector"};
  EXPECT_TRUE(Errors(*pre, p).empty());
  EXPECT_EQ(
      RunConfigJson(TrainKind::kPretrain, WithDefaults(*pre, p), nullptr)["model"],
      json(
          {{"preset", "llava-tiny"}, {"overrides", json::object()}, {"trainable", {"projector"}}}));
  EXPECT_FALSE(
      RunConfigJson(TrainKind::kPretrain, WithDefaults(*pre, ok), nullptr)["model"].contains(
          "trainable"));
  p["trainable"] = {"projector", "tower"};
  EXPECT_EQ(Errors(*pre, p),
            std::vector<std::string>{"trainable: model.trainable: 'tower' is not a part "
                                     "(vision_tower, projector, language_model)"});
  EXPECT_EQ(Errors(*pre, {{"data", "d"}, {"trainable", {"projector"}}}),
            std::vector<std::string>{"trainable: trainable is for LLaVA models; model "
                                     "'llama-small' is a text model (every part trains)"});
  {
    auto ft = MakeFinetuneRule();
    const json f = WithDefaults(
        *ft, {{"data", "d"}, {"init", "p"}, {"trainable", {"projector", "language_model"}}});
    EXPECT_EQ(RunConfigJson(TrainKind::kFinetune, f, nullptr)["model"],
              json({{"trainable", {"projector", "language_model"}}}));
    const std::vector<engine::ParamError> e = ft->CheckInputs(
        f,
        {{"init", "p", "pretrain", {{"llava", false}}}, {"data", "t", "tokenize", json::object()}});
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].param, "trainable");
    EXPECT_EQ(e[0].message,
              "trainable is for LLaVA models; init 'p' is a text model (every part trains)");
  }

  auto refusals = [&](json change) {
    json q = ok;
    q.update(change);
    std::string all;
    for (const std::string& m : pre->Unsupported(WithDefaults(*pre, q))) all += m + "\n";
    return all;
  };
  EXPECT_NE(refusals({{"checkpoint_every", 50}})
                .find("model 'llava-tiny' (LLaVA) trains on the cpu in fp32 or on cuda in fp32 "
                      "or bf16, on one rank or data parallel: checkpoint_every = 50 (set "
                      "checkpoint_every = 0) is not supported yet"),
            std::string::npos);
  EXPECT_EQ(refusals({{"device", "cuda"}, {"precision", "bf16"}}), "");
  EXPECT_NE(refusals({{"device", "cuda"}, {"grad_reduce", "bf16"}})
                .find("grad_reduce 'bf16' is not supported yet"),
            std::string::npos);
  EXPECT_NE(refusals({{"device", "cuda"}, {"nccl_window", true}})
                .find("nccl_window is not supported yet"),
            std::string::npos);
  EXPECT_NE(refusals({{"layout", "DP2"}, {"zero", 3}, {"zero3_keep_params", 1000}})
                .find("zero3_keep_params is not supported yet"),
            std::string::npos);
  EXPECT_NE(refusals({{"device", "cuda"}, {"precision", "fp16"}}).find("fp16 is not supported yet"),
            std::string::npos);
  EXPECT_NE(refusals({{"layout", "TP2PP1DP1"}}).find("layout TP2PP1DP1 (tensor or pipeline"),
            std::string::npos);
  EXPECT_NE(refusals({{"save_init", true}}).find("save_init"), std::string::npos);
  EXPECT_EQ(refusals({{"layout", "DP2"}, {"zero", 3}}), "");

  // Facts: the pretrain's model kind; a finetune passes on its init's, unknown from a file.
  EXPECT_EQ(pre->OutputFacts(WithDefaults(*pre, ok), {}), json({{"llava", true}}));
  EXPECT_EQ(pre->OutputFacts(WithDefaults(*pre, {{"data", "d"}}), {}), json({{"llava", false}}));
  auto ft = MakeFinetuneRule();
  const json fp = WithDefaults(*ft, {{"data", "d"}, {"init", "p"}});
  EXPECT_EQ(ft->OutputFacts(fp, {{"init", "p", "pretrain", {{"llava", true}}},
                                 {"data", "d", "llava_data", json::object()}}),
            json({{"llava", true}}));
  EXPECT_EQ(ft->OutputFacts(fp, {{"init", "m.safetensors", "", nullptr}}), json::object());
  // A finetune from a file on llava_data: unknown model, no error.
  EXPECT_TRUE(ft->CheckInputs(fp, {{"init", "m.safetensors", "", nullptr},
                                   {"data", "d", "llava_data", json::object()}})
                  .empty());
}

// The OpenBLAS kernels the probe chose (trainer/cpu/blas_core.h) reach the
// trainer in its environment; kernels OpenBLAS chose itself, or the user's, do
// not (the user's stay in the environment the trainer inherits).
TEST(TrainRulesTest, TheProbesBlasKernelsReachTheTrainer) {
  ::unsetenv("OPENBLAS_CORETYPE");
  testing::MemoryFilesystem fs;
  testing::FakeCommandRunner runner(&fs);
  std::map<std::string, std::string> env;
  runner.SetHandler([&](const Command& c) -> Result<CommandResult> {
    env = c.env;
    EXPECT_TRUE(
        fs.WriteFileAtomic("/ws/out/p/metrics.json", R"({"format":"benchmake-metrics"})").ok());
    return CommandResult{};
  });
  auto pre = MakePretrainRule();
  engine::StepContext ctx = PretrainContext(*pre, {{"data", "tok"}}, fs, runner);
  ctx.platform = {{"blas",
                   {{"library", "OpenBLAS"},
                    {"core", "SkylakeX"},
                    {"chosen_by", "benchmake"},
                    {"detected_core", "Prescott"}}}};
  ASSERT_TRUE(pre->Run(ctx).ok());
  EXPECT_EQ(env["OPENBLAS_CORETYPE"], "SkylakeX");
  EXPECT_EQ(env["BENCHMAKE_OPENBLAS_DETECTED"], "Prescott");
  ctx.platform["blas"]["chosen_by"] = "openblas";
  ASSERT_TRUE(pre->Run(ctx).ok());
  EXPECT_EQ(env.count("OPENBLAS_CORETYPE"), 0u);
  ctx.platform["blas"]["chosen_by"] = "benchmake";
  ::setenv("OPENBLAS_CORETYPE", "Haswell", 1);  // the user's choice stands
  ASSERT_TRUE(pre->Run(ctx).ok());
  ::unsetenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(env.count("OPENBLAS_CORETYPE"), 0u);
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
  auto pre = MakePretrainRule();
  engine::StepContext ctx = PretrainContext(
      *pre, {{"data", "tok"}, {"lr", 0.01}, {"overrides", {{"layers", 2}}}}, fs, runner);
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

// What the key of a pretrain target with these parameters (no inputs) hashes, and the key.
engine::KeyMaterial KeyMaterialOf(const engine::Rule& rule, json params) {
  testing::MemoryFilesystem fs;
  StatCache stat_cache(fs, "/stat_cache");
  engine::SourceHasher sources(fs, stat_cache);
  engine::TargetGraph graph;
  engine::Target target;
  target.name = "p";
  target.rule = &rule;
  target.params = WithDefaults(rule, std::move(params));
  Result<engine::KeyMaterial> m = engine::BuildSpec(graph, target, sources, json::object());
  EXPECT_TRUE(m.ok());
  return m.ok() ? *m : engine::KeyMaterial();
}
Digest KeyOf(const engine::Rule& rule, json params) {
  return KeyMaterialOf(rule, std::move(params)).Key();
}

TEST(TrainRulesTest, TheLayoutEntersTheKeyAndSetsTheGpusTheCollectiveTimeoutDoesNot) {
  auto pre = MakePretrainRule();
  const json base = {{"data", "d"}, {"device", "cuda"}};
  auto with = [&](const char* name, json value) {
    json p = base;
    p[name] = std::move(value);
    return p;
  };
  const Digest dp1 = KeyOf(*pre, with("layout", "TP1PP1DP1"));
  const Digest dp2 = KeyOf(*pre, with("layout", "TP1PP1DP2"));
  const Digest tp2dp2 = KeyOf(*pre, with("layout", "TP2PP1DP2"));
  EXPECT_NE(dp1, dp2);
  EXPECT_NE(dp2, tp2dp2);
  EXPECT_NE(dp1, tp2dp2);
  EXPECT_EQ(KeyOf(*pre, with("collective_timeout", 30.0)), dp1);
  EXPECT_EQ(pre->gpus(WithDefaults(*pre, with("layout", "TP1PP1DP2"))), 2);
  EXPECT_EQ(pre->gpus(WithDefaults(*pre, with("layout", "TP2PP2DP2"))), 8);
  EXPECT_EQ(pre->gpus(WithDefaults(*pre, {{"data", "d"}, {"layout", "TP1PP1DP4"}})), 0) << "cpu";
  EXPECT_EQ(Errors(*pre, {{"data", "d"}, {"collective_timeout", 0.0}}),
            std::vector<std::string>{"collective_timeout: collective_timeout must be > 0 seconds"});
}

// Several ranks through the fake runner's RunGroup: each rank's command gets
// its rank variables and the step's GPUs; a failing rank stops the ones after
// it and the step's error names it.
TEST(TrainRulesTest, AttentionBackwardEntersTheKeyOnlyWhenSet) {
  // "auto" does what the rule did before the parameter existed: the targets cached then keep
  // their keys. "one_call" and "blocks" add dQ in different orders: each its own key.
  auto pre = MakePretrainRule();
  const json base = {{"data", "d"}, {"device", "cuda"}, {"precision", "bf16"}};
  auto with = [&](const char* value) {
    json p = base;
    p["attention_backward"] = value;
    return p;
  };
  auto names_it = [](const engine::KeyMaterial& m) {
    return std::any_of(m.fields.begin(), m.fields.end(),
                       [](const engine::KeyField& f) { return f.name == "attention_backward"; });
  };
  EXPECT_FALSE(names_it(KeyMaterialOf(*pre, base)));
  EXPECT_TRUE(names_it(KeyMaterialOf(*pre, with("one_call"))));
  const Digest plain = KeyOf(*pre, base), one = KeyOf(*pre, with("one_call"));
  EXPECT_EQ(KeyOf(*pre, with("auto")), plain);
  EXPECT_NE(one, plain);
  EXPECT_NE(KeyOf(*pre, with("blocks")), plain);
  EXPECT_NE(KeyOf(*pre, with("blocks")), one);
  // The run config carries it to benchmake-train.
  EXPECT_EQ(RunConfigJson(TrainKind::kPretrain, WithDefaults(*pre, with("one_call")), nullptr)
                .value("attention_backward", ""),
            "one_call");
}

TEST(TrainRulesTest, RanksRunAsAGroupOnTheStepsGpus) {
  testing::MemoryFilesystem fs;
  testing::FakeCommandRunner runner(&fs);
  std::vector<Command> seen;
  int failing_rank = -1;
  runner.SetHandler([&](const Command& c) -> Result<CommandResult> {
    seen.push_back(c);
    CommandResult r;
    if (c.env.at("RANK") == std::to_string(failing_rank)) {
      r.exit_code = 3;
      fs.Write(c.log_path, "loading\nNCCL error: unhandled system error\n");
    }
    if (c.env.at("RANK") == "0") {
      EXPECT_TRUE(fs.WriteFileAtomic("/ws/out/p/metrics.json", R"({"rank": 0})").ok());
    }
    return r;
  });
  auto pre = MakePretrainRule();
  std::ostringstream rule_log;
  engine::StepContext ctx = PretrainContext(
      *pre, {{"data", "tok"}, {"device", "cuda"}, {"layout", "TP1PP1DP4"}}, fs, runner);
  ctx.log_path = "/ws/p.log";
  ctx.gpus = {4, 5, 6, 7};
  ctx.log = &rule_log;
  Result<engine::StepResult> ok = pre->Run(ctx);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->metrics["rank"], 0);
  ASSERT_EQ(seen.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    const Command& c = seen[static_cast<size_t>(rank)];
    EXPECT_EQ(c.argv, (std::vector<std::string>{"/tools/benchmake-train", "--config",
                                                "/ws/scratch/run.json"}));
    EXPECT_EQ(c.env.at("RANK"), std::to_string(rank));
    EXPECT_EQ(c.env.at("LOCAL_RANK"), std::to_string(rank));
    EXPECT_EQ(c.env.at("WORLD_SIZE"), "4");
    EXPECT_EQ(c.env.at("CUDA_VISIBLE_DEVICES"), "4,5,6,7");
    EXPECT_EQ(c.env.at("BENCHMAKE_RENDEZVOUS"), "/ws/scratch/rendezvous");
    EXPECT_EQ(c.env.at("BENCHMAKE_COLLECTIVE_TIMEOUT"), "300");
    EXPECT_EQ(c.log_path, rank == 0 ? "/ws/p.log" : fmt::format("/ws/p.rank-{}.log", rank));
  }
  EXPECT_TRUE(fs.Exists("/ws/scratch/rendezvous"));

  failing_rank = 1;
  fs.Write("/ws/p.rank-1.log", "the last run's lines\n");  // a fresh log each run
  Result<engine::StepResult> failed = pre->Run(ctx);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), ErrorCode::kFailed);
  EXPECT_EQ(failed.status().message(),
            "rank 1 of 4 exited with status 3; ranks 2, 3 were stopped\n"
            "last lines of rank 1's log (/ws/p.rank-1.log):\n"
            "loading\nNCCL error: unhandled system error");
  EXPECT_NE(rule_log.str().find("rank 0 succeeded\nrank 1 exited with status 3\n"
                                "rank 2 was stopped after rank 1 failed: killed by signal 15 "
                                "(SIGTERM)\n"),
            std::string::npos)
      << rule_log.str();
  // the step holds the wrong number of GPUs: a clear error, nothing started
  ctx.gpus = {0, 1};
  seen.clear();
  Result<engine::StepResult> wrong = pre->Run(ctx);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("need 4 GPUs"), std::string::npos);
  EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace bm::rules
