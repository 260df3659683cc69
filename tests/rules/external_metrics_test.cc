// External trainers' logs as metrics.json and log.jsonl (rules/external_metrics.h):
// every number checked against a hand computation from tests/data/logs/, the
// BENCHFILE's facts against the log's, what is missing, and the exec rule
// running a command whose log it parses (fake runner, in-memory files).
#include "rules/external_metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "engine/report/loss_log.h"
#include "engine/spec_builder.h"
#include "rules/exec.h"
#include "tests/support/fake_command_runner.h"
#include "tests/support/memory_filesystem.h"
#include "tests/support/rule_params.h"
#include "tests/support/test_data.h"

namespace bm::rules {
namespace {

using nlohmann::json;

std::string ReadLog(const std::string& name) { return testing::ReadTestData("logs/" + name); }

// exec's parameters with their defaults, then `overrides`.
json Params(json overrides) {
  if (!overrides.contains("command")) overrides["command"] = json::array({"true"});
  return testing::WithDefaults(*MakeExecRule(), std::move(overrides));
}

// A log's metrics as the exec rule builds them: the log's text, its name in messages.
Result<ExternalMetrics> FromText(const std::string& text, const std::string& name,
                                 const std::string& format, const json& overrides,
                                 const json& platform = json::object()) {
  const logparse::LogParser* parser = logparse::FindLogParser(format);
  BM_ASSIGN_OR_RETURN(logparse::ParsedLog log, parser->parse(text, name));
  return BuildExternalMetrics(*parser, log, name, Params(overrides), platform);
}

Result<ExternalMetrics> FromFile(const std::string& file, const std::string& format,
                                 const json& overrides, const json& platform = json::object()) {
  return FromText(ReadLog(file), file, format, overrides, platform);
}

// The key fields of an exec target with these parameters (no inputs).
std::vector<engine::KeyField> KeyFieldsOf(json overrides) {
  testing::MemoryFilesystem fs;
  StatCache stat_cache(fs, "/stat_cache");
  engine::SourceHasher sources(fs, stat_cache);
  engine::TargetGraph graph;
  auto rule = MakeExecRule();
  engine::Target target;
  target.name = "t";
  target.rule = rule.get();
  target.params = Params(std::move(overrides));
  Result<engine::KeyMaterial> m = engine::BuildSpec(graph, target, sources, json::object());
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? m->fields : std::vector<engine::KeyField>{};
}

TEST(ExternalMetrics, HowTheLogIsReadEntersTheKeyOfATargetThatReadsOne) {
  // A cached step parsed by an earlier release must not be served as this one's: the version of
  // the log reading is an `impl` field of the key, with a log_format only.
  const engine::KeyField reading{"impl", "log_reading", std::to_string(kLogReadingVersion)};
  auto has = [&](const std::vector<engine::KeyField>& f) {
    return std::count(f.begin(), f.end(), reading);
  };
  EXPECT_EQ(has(KeyFieldsOf({{"log_format", "megatron"}})), 1);
  EXPECT_EQ(has(KeyFieldsOf({{"log_format", "auto"}})), 1);
  EXPECT_EQ(has(KeyFieldsOf({})), 0) << "log_format none: the command's outputs only";
  for (const engine::KeyField& f : KeyFieldsOf({})) EXPECT_NE(f.tag, "impl");
}

TEST(ExternalMetrics, MegatronByHand) {
  Result<ExternalMetrics> r =
      FromFile("megatron_tp2dp4.log", "megatron", {{"log_format", "megatron"}, {"device", "A100"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json& m = r->metrics;
  EXPECT_EQ(m["format"], "benchmake-metrics");
  // Steps 2-8 timed (1 is warm-up, 9 was cut off): 7 x 16 x 1024 tokens in 7000 ms, 8 devices.
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_s"].get<double>(), 7 * 16 * 1024 / 7.0);
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_device_per_s"].get<double>(), 2048.0);
  EXPECT_EQ(m["throughput"]["step_ms_median"], 1000.0);
  EXPECT_EQ(m["throughput"]["measured_steps"], 7);
  EXPECT_EQ(m["throughput"]["excluded_warmup_steps"], 1);
  // N = 2 x 5,000,000 (TP ranks); L = 4, hidden = 256, T = 1024; A100 fp16 312 TFLOP/s.
  const double six_n = 6 * 10e6, palm = six_n + 12.0 * 4 * 256 * 1024;
  EXPECT_DOUBLE_EQ(m["flops_per_token"]["6N"].get<double>(), six_n);
  EXPECT_DOUBLE_EQ(m["flops_per_token"]["palm"].get<double>(), palm);
  EXPECT_DOUBLE_EQ(m["mfu"]["6N"].get<double>(), six_n * 2048 / 312e12);
  EXPECT_DOUBLE_EQ(m["mfu"]["palm"].get<double>(), palm * 2048 / 312e12);
  EXPECT_EQ(m["mfu"]["peak_source"], "table: A100 bf16 dense");
  EXPECT_EQ(m["memory"]["peak_bytes"], 22528.0 * 1048576);
  EXPECT_TRUE(m["memory"]["device_total_bytes"].is_null());
  const json& c = m["config"];
  EXPECT_EQ(c["layout"], "TP2PP1DP4");
  EXPECT_EQ(c["devices"], 8);
  EXPECT_EQ(c["mpe"], 1024);
  EXPECT_EQ(c["lbs"], 2);
  EXPECT_EQ(c["gas"], 2) << "16 / (2 x 4)";
  EXPECT_EQ(c["gbs"], 16);
  EXPECT_EQ(c["precision"], "fp16");
  EXPECT_EQ(c["steps"], 9);
  // Losses of steps 1, 2, 4, 5, 7, 8 (3 and 6 were skipped): final = their mean.
  EXPECT_EQ(m["loss"]["first"], 10.5);
  EXPECT_DOUBLE_EQ(m["loss"]["final"].get<double>(), 51.0 / 6);
  EXPECT_EQ(m["loss"]["final_window"], 6);
  EXPECT_EQ(m["loss"]["min"], 7.0);
  EXPECT_EQ(m["tokens"], 9 * 16 * 1024);
  EXPECT_EQ(m["provenance"]["trainer"], "megatron");
  EXPECT_EQ(m["provenance"]["skipped_iterations"], 2);
  EXPECT_EQ(m["provenance"]["nan_iterations"], 1);
  EXPECT_EQ(m["platform"]["gpus"][0]["name"], "A100");

  // log.jsonl: the header and one line per record; report reads the steps with a loss.
  std::istringstream lines(r->log_jsonl);
  std::string header, step3;
  std::getline(lines, header);
  EXPECT_EQ(json::parse(header), json({{"format", "benchmake-log"}, {"version", 1}}));
  for (int i = 0; i < 3; ++i) std::getline(lines, step3);
  json s3 = json::parse(step3);
  EXPECT_EQ(s3["step"], 3);
  EXPECT_TRUE(s3["loss"].is_null());
  EXPECT_EQ(s3["skipped"], 1);
  EXPECT_EQ(s3["loss_scale"], 32768.0);
  EXPECT_EQ(s3["tokens"], 16 * 1024);
  EXPECT_DOUBLE_EQ(s3["tokens_per_s"].get<double>(), 16 * 1024 / 1.0);
  Result<std::vector<report::LossPoint>> curve = report::ParseLossLog(r->log_jsonl, "log.jsonl");
  ASSERT_TRUE(curve.ok()) << curve.status().message();
  ASSERT_EQ(curve->size(), 6u);
  EXPECT_EQ((*curve)[2].step, 4);
}

TEST(ExternalMetrics, ACountBeyondInt64IsWrittenAsANumber) {
  // A mangled log's seq_length of 1e+20: config.mpe was static_cast<int64_t> of it (undefined;
  // INT64_MIN on x86); a count beyond 2^53 is written as the double it is.
  const std::string log =
      "  seq_length ...................................... 99999999999999999999\n"
      "  num_layers ...................................... 2\n"
      "  hidden_size ..................................... 64\n"
      " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1000000\n"
      " iteration        1/      10 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.5 |\n"
      " iteration        2/      10 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.4 |\n";
  const logparse::LogParser* parser = logparse::FindLogParser("megatron");
  Result<logparse::ParsedLog> parsed = parser->parse(log, "big.log");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  Result<ExternalMetrics> r =
      BuildExternalMetrics(*parser, *parsed, "big.log", Params({{"log_format", "megatron"}}), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->metrics["config"]["mpe"].is_number_float());
  EXPECT_EQ(r->metrics["config"]["mpe"].get<double>(), 1e20);
  // Nor is it a dimension of the FLOPs: 6N stands (6 x 1,000,000), PaLM's term has no T.
  EXPECT_EQ(r->metrics["flops_per_token"]["6N"], 6e6);
  EXPECT_TRUE(r->metrics["flops_per_token"]["palm"].is_null());
}

TEST(ExternalMetrics, TheBatchEveryIterationLineStatesIsTheGlobalBatch) {
  // Iteration lines without the argument block (epfLLM/Megatron-LLM issue #11, a user's paste of
  // a 70B run): each says `global batch size:  1024`, so config.gbs is 1024, and with the
  // BENCHFILE's micro-batch and layout the accumulation 1024 / (1 x 8) = 128.
  const std::string lines =
      " iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration "
      "(ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 "
      "| loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 | number of nan "
      "iterations:   0 |\n"
      " iteration      123/  250000 | consumed samples:       125952 | elapsed time per iteration "
      "(ms): 87871.6 | learning rate: 9.225E-06 | global batch size:  1024 | lm loss: 2.493043E+00 "
      "| loss scale: 1.0 | grad norm: 0.236 | number of skipped iterations:   0 | number of nan "
      "iterations:   0 |\n";
  Result<ExternalMetrics> r =
      FromText(lines, "70b.log", "megatron",
               {{"log_format", "megatron"}, {"lbs", 1}, {"layout", "TP8PP4DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["config"]["gbs"], 1024);
  EXPECT_EQ(r->metrics["config"]["gas"], 128);
  // A batch ramp-up (Megatron's --rampup-batch-size): the lines disagree, no one global batch.
  std::string ramp = lines;
  ramp.replace(ramp.rfind("size:  1024"), 11, "size:   512");
  r = FromText(ramp, "ramp.log", "megatron", {{"log_format", "megatron"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->metrics["config"]["gbs"].is_null());
}

TEST(ExternalMetrics, PrintedPerDeviceRatesWithoutAStepTimeAreTheirHarmonicMean) {
  // torchtitan lines without the start-up lines that give a step's tokens and the world size
  // (pytorch/torchtitan PR #3393, a user's paste, steps 14-17): no step's time, but each line's
  // tps is the per-device token rate; with a fixed batch a step takes tokens / rate, so the rate
  // over the steps is the harmonic mean (step 14 included: the warm-up is step 1).
  const std::string lines =
      "[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: 14  loss:  3.24405  "
      "grad_norm:  0.8319  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%\n"
      "[rank0]:[titan] 2026-05-18 16:04:47,456 - root - INFO - step: 15  loss:  3.10680  "
      "grad_norm:  0.8587  memory:  9.46GiB(64.99%)  tps: 7,334  tflops: 0.53  mfu: 0.17%\n"
      "[rank0]:[titan] 2026-05-18 16:04:48,577 - root - INFO - step: 16  loss:  3.05047  "
      "grad_norm:  0.5443  memory:  9.46GiB(64.99%)  tps: 7,313  tflops: 0.52  mfu: 0.17%\n"
      "[rank0]:[titan] 2026-05-18 16:04:49,702 - root - INFO - step: 17  loss:  3.14459  "
      "grad_norm:  0.5303  memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%\n";
  Result<ExternalMetrics> r = FromText(lines, "titan.log", "torchtitan",
                                       {{"log_format", "torchtitan"}, {"layout", "TP1PP1DP2"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json& th = r->metrics["throughput"];
  const double harmonic = 4 / (2 / 7282.0 + 1 / 7334.0 + 1 / 7313.0);
  EXPECT_DOUBLE_EQ(th["tokens_per_device_per_s"].get<double>(), harmonic);
  EXPECT_DOUBLE_EQ(th["tokens_per_s"].get<double>(), 2 * harmonic) << "2 devices";
  EXPECT_EQ(th["measured_steps"], 4);
  EXPECT_TRUE(th["step_ms_median"].is_null());
}

TEST(ExternalMetrics, ALoggedParallelSizeThatIsNoneIsAnError) {
  // A mangled log's tensor_model_parallel_size of 0: the layout divided world_size by tp x pp
  // (an integer division by zero); 1e+20 was cast to int64_t (undefined). Both name the line.
  const std::string iterations =
      " iteration        1/      10 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.5 |\n"
      " iteration        2/      10 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.4 |\n";
  const logparse::LogParser* parser = logparse::FindLogParser("megatron");
  for (const char* tp : {"0", "99999999999999999999"}) {
    const std::string log = fmt::format(
        "  tensor_model_parallel_size ...................... {}\n"
        "  world_size ...................................... 8\n{}",
        tp, iterations);
    Result<logparse::ParsedLog> parsed = parser->parse(log, "tp.log");
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    Result<ExternalMetrics> r =
        BuildExternalMetrics(*parser, *parsed, "tp.log", Params({{"log_format", "megatron"}}), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), fmt::format("tp.log:1: tp {} is not a number of ranks",
                                                tp[0] == '0' ? "0" : "1e+20"));
  }
}

TEST(ExternalMetrics, DeepSpeedRunningAverageAndExplicitWarmup) {
  json params = {{"log_format", "deepspeed"},
                 {"mpe", 2048},
                 {"parameters", 1e9},
                 {"layers", 16},
                 {"hidden", 2048},
                 {"device", "H100"}};
  Result<ExternalMetrics> r = FromFile("deepspeed_zero3.log", "deepspeed", params);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json& m = r->metrics;
  // RunningAvgSamplesPerSec 64 at step 8 (steps 3-8) x 2048 tokens, over 8 devices.
  EXPECT_EQ(m["throughput"]["tokens_per_s"], 64.0 * 2048);
  EXPECT_EQ(m["throughput"]["tokens_per_device_per_s"], 64.0 * 2048 / 8);
  EXPECT_EQ(m["throughput"]["measured_steps"], 6);
  EXPECT_EQ(m["throughput"]["excluded_warmup_steps"], 2);
  // Median of 32 samples / CurrSamplesPerSec at steps 4, 6, 8 (60, 64, 66).
  EXPECT_DOUBLE_EQ(m["throughput"]["step_ms_median"].get<double>(), 500.0);
  const double six_n = 6e9, palm = six_n + 12.0 * 16 * 2048 * 2048;
  EXPECT_DOUBLE_EQ(m["mfu"]["6N"].get<double>(), six_n * 16384 / 989.4e12);
  EXPECT_DOUBLE_EQ(m["mfu"]["palm"].get<double>(), palm * 16384 / 989.4e12);
  EXPECT_EQ(m["mfu"]["peak_source"], "table: H100 SXM bf16 dense");
  EXPECT_EQ(m["memory"]["peak_bytes"], 31.25 * 1073741824);
  EXPECT_EQ(m["config"]["layout"], "TP1PP1DP8");
  EXPECT_EQ(m["config"]["gbs"], 32);
  EXPECT_EQ(m["config"]["precision"], "bf16");
  EXPECT_DOUBLE_EQ(m["loss"]["final"].get<double>(), 9.0);
  EXPECT_EQ(m["tokens"], 8 * 32 * 2048);
  EXPECT_EQ(m["provenance"]["skipped_iterations"], 2);

  // An explicit window times the logged steps themselves: 4, 6 and 8 carry a rate.
  params["excluded_warmup_steps"] = 2;
  r = FromFile("deepspeed_zero3.log", "deepspeed", params);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double seconds = 32 / 60.0 + 32 / 64.0 + 32 / 66.0;
  EXPECT_DOUBLE_EQ(r->metrics["throughput"]["tokens_per_s"].get<double>(), 3 * 32 * 2048 / seconds);
  EXPECT_EQ(r->metrics["throughput"]["measured_steps"], 3);
}

TEST(ExternalMetrics, MllogWithPresetAndPlatform) {
  json platform = {{"gpus", json::array({{{"name", "NVIDIA H100 80GB HBM3"},
                                          {"memory_bytes", 85520809984.0}}})}};
  Result<ExternalMetrics> r = FromFile("mllog_lora.log", "mllog",
                                       {{"log_format", "mllog"},
                                        {"layout", "TP1PP1DP2"},
                                        {"model", "llama2-7b"},
                                        {"precision", "bf16"}},
                                       platform);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json& m = r->metrics;
  // Steps 2-6: 5 x 8 x 512 tokens in 1000 + 1000 + 900 + 1200 + 1000 ms, 2 devices.
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_s"].get<double>(), 5 * 8 * 512 / 5.1);
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_device_per_s"].get<double>(), 5 * 8 * 512 / 5.1 / 2);
  EXPECT_EQ(m["throughput"]["step_ms_median"], 1000.0);
  EXPECT_EQ(m["model"]["parameters"], 6738415616);  // Llama 2 7B
  const double palm = 6.0 * 6738415616 + 12.0 * 32 * 4096 * 512;
  EXPECT_DOUBLE_EQ(m["mfu"]["palm"].get<double>(), palm * (5 * 8 * 512 / 5.1 / 2) / 989.4e12);
  EXPECT_EQ(m["memory"]["device_total_bytes"], 85520809984.0) << "the platform's GPU";
  EXPECT_TRUE(m["memory"]["peak_bytes"].is_null());
  EXPECT_EQ(m["wall_s"], 7.0);
  EXPECT_DOUBLE_EQ(m["loss"]["final"].get<double>(), 5.0);
  EXPECT_EQ(r->notes, std::vector<std::string>{"mem: the log reports no memory"});
}

TEST(ExternalMetrics, WhatTheLogLacksIsNamed) {
  // No precision anywhere: MFU is null and the note says what to set.
  Result<ExternalMetrics> r =
      FromFile("mllog_lora.log", "mllog", {{"log_format", "mllog"}, {"layout", "TP1PP1DP2"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->metrics["mfu"]["6N"].is_null());
  EXPECT_EQ(r->metrics["mfu"]["peak_source"],
            "the log does not say the precision: set precision or peak_tflops");
  EXPECT_NE(std::find(r->notes.begin(), r->notes.end(),
                      "MFU needs the parameter count: set model (a preset) or parameters"),
            r->notes.end());

  // Without the device count the rate over all devices stays; per device is null.
  auto has = [](const ExternalMetrics& e, const std::string& note) {
    return std::find(e.notes.begin(), e.notes.end(), note) != e.notes.end();
  };
  r = FromFile("mllog_lora.log", "mllog", {{"log_format", "mllog"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->metrics["throughput"]["tokens_per_s"].get<double>(), 5 * 8 * 512 / 5.1);
  EXPECT_TRUE(r->metrics["throughput"]["tokens_per_device_per_s"].is_null());
  EXPECT_TRUE(r->metrics["config"]["devices"].is_null());
  EXPECT_TRUE(has(*r,
                  "token/p/s per device: mllog_lora.log does not say how many devices ran "
                  "it: set layout (TPxPPyDPz)"));
  // Without the sequence length DeepSpeed's samples/s gives no tokens: null, the loss stays.
  r = FromFile("deepspeed_zero3.log", "deepspeed", {{"log_format", "deepspeed"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->metrics["throughput"]["tokens_per_s"].is_null());
  EXPECT_DOUBLE_EQ(r->metrics["loss"]["final"].get<double>(), 9.0);
  EXPECT_TRUE(has(*r,
                  "token/p/s: DeepSpeed's RunningAvgSamplesPerSec (ThroughputTimer, steps after "
                  "the first 2) (deepspeed_zero3.log:33) counts samples and the log does not say "
                  "the sequence length: set mpe (tokens = samples x mpe)"));
  // A warm-up past every timed record: the note names the largest one that works.
  r = FromFile("megatron_tp2dp4.log", "megatron",
               {{"log_format", "megatron"}, {"excluded_warmup_steps", 8}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->metrics["throughput"]["tokens_per_device_per_s"].is_null());
  EXPECT_TRUE(has(*r,
                  "token/p/s: no timed step after the first 8 warm-up steps (9 records up to "
                  "step 9): set excluded_warmup_steps to 7 or less"));
}

TEST(ExternalMetrics, BenchfileFactsMustAgreeWithTheLog) {
  Result<ExternalMetrics> r =
      FromFile("megatron_tp2dp4.log", "megatron", {{"log_format", "megatron"}, {"mpe", 2048}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "mpe = 2048, but megatron_tp2dp4.log:15 says 1024: the log is what ran; leave mpe "
            "unset (or set it to 1024)");
  r = FromFile("megatron_tp2dp4.log", "megatron",
               {{"log_format", "megatron"}, {"layout", "TP1PP1DP8"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "layout = TP1PP1DP8, but megatron_tp2dp4.log:16 says tp 2: leave layout unset (the "
            "log's is used) or set what ran");
  r = FromFile("megatron_tp2dp4.log", "megatron",
               {{"log_format", "megatron"}, {"model", "llama-small"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "model = llama-small has hidden 128, but megatron_tp2dp4.log:8 says hidden 256: set "
            "the preset (or overrides) the run used, or parameters, layers and hidden instead of "
            "model");
  // Agreeing values are fine.
  EXPECT_TRUE(FromFile("megatron_tp2dp4.log", "megatron",
                       {{"log_format", "megatron"}, {"mpe", 1024}, {"layout", "TP2PP1DP4"}})
                  .ok());
}

class ExecWithLog : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.target = "ext";
    ctx_.workspace_dir = "/ws";
    ctx_.scratch_dir = "/tmp/s/work";
    ctx_.out_dir = "/tmp/s/out";
    ctx_.log_path = "/ws/.benchmake/log/ext.log";
    ctx_.fs = &fs_;
    ctx_.runner = &runner_;
    ctx_.log = &step_log_;
    ASSERT_TRUE(fs_.MakeDirs(ctx_.scratch_dir).ok());
    ASSERT_TRUE(fs_.MakeDirs(ctx_.out_dir).ok());
    fs_.Write("/ws/megatron.log", ReadLog("megatron_tp2dp4.log"));
  }
  testing::MemoryFilesystem fs_;
  testing::FakeCommandRunner runner_{&fs_};
  engine::StepContext ctx_;
  std::ostringstream step_log_;
  std::unique_ptr<engine::Rule> rule_ = MakeExecRule();
};

TEST_F(ExecWithLog, ParsesALogFileTheCommandWrites) {
  ctx_.params = Params({{"command", {"copy", "/ws/megatron.log", "train.log"}},
                        {"log_format", "megatron"},
                        {"log", "train.log"},
                        {"device", "A100"}});
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["provenance"]["trainer"], "megatron");
  EXPECT_EQ(r->metrics["provenance"]["log"], "train.log");
  json written = json::parse(fs_.Read("/tmp/s/out/metrics.json"));
  EXPECT_EQ(written, r->metrics);
  EXPECT_NE(fs_.Read("/tmp/s/out/log.jsonl").find("\"step\":8"), std::string::npos);
  EXPECT_NE(step_log_.str().find("megatron log train.log: 9 records up to step 9; token/p/s "
                                 "2048.0 (tokens / time of the 7 timed steps after step 1)"),
            std::string::npos)
      << step_log_.str();
}

TEST_F(ExecWithLog, ParsesTheCommandsOwnOutput) {
  runner_.SetHandler([&](const Command& c) -> Result<CommandResult> {
    fs_.Write(c.log_path, fs_.Read("/ws/megatron.log"));
    return CommandResult{};
  });
  ctx_.params = Params({{"log_format", "flagscale"}, {"device", "A100"}});
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["provenance"]["trainer"], "flagscale");
  EXPECT_EQ(r->metrics["provenance"]["log"], ctx_.log_path);
}

// The issue-34 case: a Trainer on DeepSpeed >= 0.17 prints only its dicts,
// values as strings; log_format = "auto" recognises them.
TEST_F(ExecWithLog, AutoReadsATrainerLogThroughTheExecRule) {
  fs_.Write("/ws/trainer.log", ReadLog("deepspeed_0.17_trainer_dicts_only.log"));
  ctx_.params = Params({{"command", {"copy", "/ws/trainer.log", "train.log"}},
                        {"log_format", "auto"},
                        {"log", "train.log"},
                        {"mpe", 512},
                        {"layout", "TP1PP1DP1"}});
  ASSERT_TRUE(rule_->Check(ctx_.params).empty());
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["provenance"]["trainer"], "trainer");
  // Line 23: train_samples_per_second '16.2' x 512 tokens, one device.
  EXPECT_DOUBLE_EQ(r->metrics["throughput"]["tokens_per_device_per_s"].get<double>(), 16.2 * 512);
  EXPECT_EQ(r->metrics["loss"]["first"], 10.46);
  EXPECT_NE(step_log_.str().find("trainer log train.log: 20 records up to step 20; token/p/s "
                                 "8294.4"),
            std::string::npos)
      << step_log_.str();
  EXPECT_NE(step_log_.str().find("note: log_format auto: read as trainer (train.log:3 is a "
                                 "transformers Trainer log dict)"),
            std::string::npos)
      << step_log_.str();
}

TEST_F(ExecWithLog, FailuresSayWhat) {
  ctx_.params = Params({{"log_format", "megatron"}, {"log", "train.log"}});
  runner_.SetHandler([](const Command&) -> Result<CommandResult> { return CommandResult{}; });
  Result<engine::StepResult> r = rule_->Run(ctx_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "log 'train.log' was not produced ({out} and the working directory have none): set "
            "log to the file the command writes (\"\": its own output)");

  runner_.SetHandler([&](const Command&) -> Result<CommandResult> {
    fs_.Write("/tmp/s/work/train.log", "W0601 warning only\n");
    return CommandResult{};
  });
  r = rule_->Run(ctx_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "train.log: no Megatron iteration lines (' iteration N/M | ... |') in 1 lines");

  runner_.SetHandler([&](const Command&) -> Result<CommandResult> {
    fs_.Write("/tmp/s/work/train.log", fs_.Read("/ws/megatron.log"));
    fs_.Write("/tmp/s/out/metrics.json", "{}");
    return CommandResult{};
  });
  r = rule_->Run(ctx_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "the command wrote {out}/metrics.json itself, which log_format writes: drop one");
}

TEST(ExecCheck, LogParametersAreChecked) {
  std::unique_ptr<engine::Rule> rule = MakeExecRule();
  auto errors = [&](json overrides) {
    std::vector<std::string> out;
    for (const engine::ParamError& e : rule->Check(Params(overrides)))
      out.push_back(e.param + ": " + e.message);
    return out;
  };
  EXPECT_TRUE(errors({}).empty());
  EXPECT_TRUE(errors({{"log_format", "deepspeed"}, {"mpe", 4096}, {"model", "llama2-7b"}}).empty());
  EXPECT_EQ(
      errors({{"log_format", "levanter"}}),
      std::vector<std::string>{
          "log_format: unknown log_format 'levanter': one of none, auto, deepspeed, flagperf, "
          "flagscale, litgpt, maxtext, megatron, mllog, nanotron, nemo, paddle, torchtitan, "
          "torchtune, trainer"});
  EXPECT_EQ(
      errors({{"log_format", "megatorn"}}),
      std::vector<std::string>{
          "log_format: unknown log_format 'megatorn' (did you mean 'megatron'?): one of none, "
          "auto, deepspeed, flagperf, flagscale, litgpt, maxtext, megatron, mllog, nanotron, nemo, "
          "paddle, torchtitan, torchtune, trainer"});
  EXPECT_EQ(errors({{"mpe", 4096}}),
            std::vector<std::string>{
                "mpe: mpe describes a parsed log: set log_format too (one of auto, deepspeed, "
                "flagperf, flagscale, litgpt, maxtext, megatron, mllog, nanotron, nemo, paddle, "
                "torchtitan, torchtune, trainer)"});
  EXPECT_EQ(errors({{"log_format", "megatron"},
                    {"log", "../x.log"},
                    {"metrics", "m.json"},
                    {"outputs", {"log.jsonl"}}}),
            (std::vector<std::string>{
                "log: log must be a relative path inside {out} or the working directory",
                "metrics: metrics and log_format both make the step's metrics: use one",
                "outputs: log.jsonl is what log_format writes: do not declare it as an output"}));
  EXPECT_EQ(errors({{"log_format", "megatron"}, {"model", "llama2-7b"}, {"parameters", 7e9}}),
            std::vector<std::string>{
                "parameters: parameters comes from model 'llama2-7b': set one of them"});
  // A geometry no model has is refused as pretrain refuses it (its FLOPs would be wrong).
  EXPECT_EQ(errors({{"log_format", "trainer"},
                    {"model", "llama-small"},
                    {"overrides", {{"heads", 4}, {"kv_heads", 3}}}}),
            std::vector<std::string>{"overrides: kv_heads (3) must divide heads (4)"});
  EXPECT_EQ(errors({{"log_format", "megatron"}, {"layout", "TP2XX"}}).size(), 1u);
  EXPECT_EQ(errors({{"log_format", "megatron"}, {"model", "llama-9"}})[0].rfind("model: ", 0), 0u);
}

}  // namespace
}  // namespace bm::rules
