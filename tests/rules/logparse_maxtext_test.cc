// MaxText's step lines (rules/logparse/maxtext.cc) on real logs (tests/data/logs/SOURCES.md: its
// own guide's run, a GPU run of 2024, a Ray multi-host run, the newest format, a Tunix DPO run),
// through the parser and BuildExternalMetrics, against values read off each log by hand; and bad
// input, which names the file and line.
#include <gtest/gtest.h>

#include <cmath>

#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"
#include "tests/support/test_data.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;
using nlohmann::json;
using testing_logs::Read;
using testing_logs::ReadLog;

TEST(Maxtext, TheGuidesRunWithItsStartUp) {
  // MaxText's "Understand logs and metrics" guide: deepseek2-16b on a TPU v5p-8 (4 devices),
  // per_device_batch_size 24 (line 10), max_target_length 2048 (line 11), `Num_devices: 4`
  // (line 20), `number parameters: 15.933 billion` (line 23), steps 0-9 (lines 33-42).
  Result<Read> r = ReadLog("maxtext_docs_tpu_v5p_deepseek2_16b_startup.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "maxtext");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(log.iterations[0].line, 33);
  EXPECT_EQ(log.iterations[0].ms, 44923.0);  // step 0: the compilation
  EXPECT_EQ(log.iterations[1].ms, 319.0);    // step 1: its dispatch alone
  EXPECT_EQ(log.iterations[2].ms, 5658.0);
  EXPECT_EQ(log.iterations[9].tokens_per_device_per_s, 8672.758);
  EXPECT_EQ(log.iterations[9].flops_per_device_per_s, 134.924e12);
  EXPECT_EQ(r->Loss(1), 12.038);
  EXPECT_EQ(r->Loss(10), 10.374);
  EXPECT_EQ(log.facts.at("devices").value, 4);
  EXPECT_EQ(log.facts.at("devices").line, 20);
  EXPECT_EQ(log.facts.at("mpe").value, 2048);
  EXPECT_EQ(log.facts.at("lbs").value, 24);
  EXPECT_EQ(log.facts.at("parameters").value, 15.933e9);
  EXPECT_FALSE(log.peak_memory_bytes);  // Memstats (line 25) are bytes in use, no peak
  const json& m = r->m();
  // Printed steps 3-9 (39.411 s), 24 x 2048 tokens a device each.
  EXPECT_EQ(m["throughput"]["measured_steps"], 7);
  EXPECT_EQ(m["throughput"]["excluded_warmup_steps"], 3);
  EXPECT_NEAR(r->PerDevice(), 7 * 24 * 2048 / 39.411, 1e-9);
  // The records' TFLOP/s/device over the same steps, each step weighted by its time
  // (records_mfu.h): 7 / the sum of 1 / TFLOP/s.
  EXPECT_NEAR(m["mfu"]["stated_flops_per_device"].get<double>(), 135.813908e12, 1e6);
  EXPECT_EQ(m["model"]["parameters"], 15.933e9);
  EXPECT_TRUE(
      r->Note("log_format auto: read as maxtext "
              "(maxtext_docs_tpu_v5p_deepseek2_16b_startup.log:33 is a MaxText "
              "'completed step: N, seconds: S, ...' line)"));
  EXPECT_TRUE(r->Note("`completed step: N` is step N + 1"));
  EXPECT_TRUE(r->Note("maxtext_docs_tpu_v5p_deepseek2_16b_startup.log:25: MaxText's Memstats"));
}

TEST(Maxtext, AGpuRunOf2024WithoutTokenRates) {
  // 8 H100 (line 178 `# Num_devices: 8`), March 2024: `completed step: N, seconds: S,
  // TFLOP/s/device: T, loss: L` (no Tokens/s/device yet), every line behind `# `,
  // per_device_batch_size 12.0 (line 131), max_target_length 2048 (line 114), dtype bfloat16 (line
  // 74). The file ends without a newline: the last line's last field (`loss: 1.857`) may be cut,
  // and is not read.
  Result<Read> r = ReadLog("maxtext_gpu_h100x8_llama2_7b_2024_pgo.log", "maxtext");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  ASSERT_EQ(log.iterations.size(), 30u);
  EXPECT_EQ(log.iterations.back().step, 30);
  EXPECT_EQ(log.iterations.back().ms, 4301.0);
  EXPECT_FALSE(log.iterations.back().loss);
  EXPECT_EQ(r->Loss(29), 1.937);
  EXPECT_FALSE(log.iterations[5].tokens_per_device_per_s);
  EXPECT_EQ(log.facts.at("devices").value, 8);
  EXPECT_EQ(log.facts.at("lbs").value, 12);
  EXPECT_EQ(log.facts.at("mpe").value, 2048);
  EXPECT_EQ(log.precision, "bf16");
  EXPECT_EQ(log.facts.at("parameters").value, 6.738e9);
  // Printed steps 3-29 (133.760 s; step 1 took 176.734 s, step 2 3.053 s of ~4.5), 12 x 2048
  // tokens a device each: the global batch 12 x 8.
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 27);
  EXPECT_NEAR(r->PerDevice(), 27 * 12 * 2048 / 133.760, 1e-9);
  EXPECT_NEAR(r->m()["mfu"]["stated_flops_per_device"].get<double>(), 208.552145e12, 1e6);
}

TEST(Maxtext, RayMultiHostCopiesAndRepeats) {
  // A TPU v4-16 under Ray: two hosts' lines behind `(run_maxtext_train pid=..., ip=...)`, most
  // ending ` [repeated 10x across cluster]`; steps 0, 4, 9, 14, 89, 94, 99 (lines 8-27), step 99
  // twice (lines 24 and 27: both hosts, the same loss, seconds 1.116 and 1.191).
  Result<Read> r = ReadLog("maxtext_tpu_v4_16_ray_multihost.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 5, 10, 15, 90, 95, 100}));
  EXPECT_EQ(log.restarts, 0);
  EXPECT_EQ(log.iterations.back().ms, 1116.0);  // the first copy
  EXPECT_EQ(log.iterations.back().line, 24);
  EXPECT_EQ(r->Loss(5), 0.0);  // `loss: 0.000 [repeated 9x across cluster]`
  EXPECT_TRUE(r->Note("maxtext_tpu_v4_16_ray_multihost.log:27: 1 step line(s) repeat a step"));
  // No batch or length printed: the printed per-device rates over printed steps 4-99, each
  // weighted by its time.
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 6);
  EXPECT_NEAR(r->PerDevice(), 14842.431979, 1e-6);
}

TEST(Maxtext, TheNewestFieldsAfterTheLoss) {
  // MaxText PR #4847 (2026): `..., loss: 12.979, lm_loss: 12.979, perplexity: 433358.281` behind
  // absl's `metric_logger.py:226]`, printed steps 1-3 among profiler lines.
  Result<Read> r = ReadLog("maxtext_tpu_gemma4_e2b_lm_loss_pr4847.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(r->Loss(4), 12.979);
  // Printed step 3 alone (10.344 s): steps 0-2 are the warm-up (1, 0.631 s, is a dispatch alone).
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 1);
  EXPECT_NEAR(r->PerDevice(), 19006.461, 1e-6);
}

TEST(Maxtext, AnExcerptWithElisionsAsItIs) {
  // maxtest's guide: steps 0-4 with the author's `...` lines between; step 2 printed at 0.002 s
  // (19,907,654.921 tokens/s/device) after step 1's 12.444 s, inside the warm-up: printed steps
  // 3 and 4 are timed.
  Result<Read> r = ReadLog("maxtext_tpu_maxtest_v5p_getting_started.log", "maxtext");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r->Loss(5), 9.610);
  EXPECT_EQ(r->At(3)->ms, 2.0);
  EXPECT_NEAR(r->PerDevice(), (4195.595 * 11.715 + 4221.032 * 11.645) / (11.715 + 11.645), 1e-6);
}

TEST(Maxtext, ATunixRunCountsFromOne) {
  // MaxText's DPO demo (Qwen3 0.6B, TPU v5p, 4 devices) under Tunix, whose PeftTrainer prints
  // `Train step N training loss: ...` (line 128 first) beside MaxText's `completed step: N` (from
  // 1, line 135) and evaluates before step 1 (`Completed eval after train step 0, loss=0.693`,
  // line 72).
  Result<Read> r = ReadLog("maxtext_tunix_dpo_qwen3_start.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  ASSERT_EQ(log.iterations.size(), 30u);
  EXPECT_EQ(log.iterations.front().step, 1);
  EXPECT_EQ(log.iterations.front().line, 135);
  EXPECT_EQ(log.iterations.back().step, 30);
  EXPECT_EQ(r->Loss(30), 0.642);
  ASSERT_EQ(log.evals.size(), 1u);
  EXPECT_EQ(log.evals[0].step, 0);
  EXPECT_EQ(log.evals[0].value, 0.693);
  EXPECT_EQ(log.evals[0].line, 72);
  EXPECT_EQ(log.eval_what, "MaxText eval loss");
  EXPECT_EQ(log.facts.at("devices").value, 4);
  EXPECT_EQ(log.facts.at("devices").line, 1);
  EXPECT_EQ(log.facts.at("parameters").value, 0.596e9);
  EXPECT_TRUE(r->Note("maxtext_tunix_dpo_qwen3_start.log:128: a post-training run under Tunix"));
  // Printed steps 4-30 (6.748 s; step 2 took 0.570 s, the others 0.25).
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 27);
  EXPECT_NEAR(r->PerDevice(), 16388.303072, 1e-6);

  // Its end: steps 495-500 and the evaluation after step 500 (line 19, loss=0.516; Tunix's own
  // line 18 says 0.604500 and is not read).
  r = ReadLog("maxtext_tunix_dpo_qwen3_end.log", "maxtext");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{495, 496, 497, 498, 499, 500}));
  EXPECT_EQ(r->Loss(500), 0.624);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 500);
  EXPECT_EQ(r->log.evals[0].value, 0.516);
  EXPECT_EQ(r->m()["eval"]["val_loss"], 0.516);
}

TEST(Maxtext, EvaluationsAloneAreNoTrainingLog) {
  // A guide's excerpt of evaluations in the 2025 shape (`eval metrics after step: 4, loss=9.855`,
  // line 4) without a training step.
  Result<Read> r = ReadLog("maxtext_docs_eval_only_hf_pretraining.log", "maxtext");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(
                "maxtext_docs_eval_only_hf_pretraining.log: no MaxText step lines ('completed "
                "step: N, seconds: S, "),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(
      r.status().message().find(
          "in 8 lines (its 2 evaluation line(s), the first at line 4, are no training steps)"),
      std::string::npos)
      << r.status().message();
}

TEST(Maxtext, ALossGoneNan) {
  // A Gemma3-like model on a TPU v6e (8 devices) whose loss turns `nan` at step 9 (line 16) and
  // stays so, between TensorBoard's `x2num.py:13] NaN or Inf found in input tensor.` warnings:
  // steps 9-12, four NaN steps; the time and rates of every step are read.
  Result<Read> r = ReadLog("maxtext_tpu_v6e_loss_nan.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  ASSERT_EQ(log.iterations.size(), 13u);
  EXPECT_EQ(r->Loss(9), 11.938);
  ASSERT_TRUE(r->Loss(10));
  EXPECT_TRUE(std::isnan(*r->Loss(10)));
  EXPECT_EQ(log.iterations[9].line, 16);
  EXPECT_EQ(log.iterations[9].nan, 1);
  EXPECT_EQ(log.iterations[12].nan, 1);
  EXPECT_EQ(log.iterations[8].nan, 0);
  EXPECT_EQ(r->m()["provenance"]["nan_iterations"], 4);
  // Printed steps 3-12 (4.355 s; steps 1 and 2, 0.277 s and 0.215 s, time their dispatch alone),
  // the printed rates each weighted by its time.
  EXPECT_EQ(r->m()["throughput"]["measured_steps"], 10);
  EXPECT_NEAR(r->PerDevice(),
              (9448.085 * 0.434 + 9433.680 * 0.434 + 9447.649 * 0.434 + 9245.716 * 0.443 +
               9254.155 * 0.443 + 9320.466 * 0.439 + 9317.922 * 0.440 + 9423.869 * 0.435 +
               9606.004 * 0.426 + 9603.144 * 0.427) /
                  4.355,
              1e-6);
}

TEST(Maxtext, RampUpStepsAreNotTimed) {
  // The guide's run as MaxText prints it under a batch-size ramp-up to step 4
  // (`rampup_end_step`): `[Rampup Batch Size Phase] ` before steps 0-4 and no rates on them
  // (metric_logger.py `_log_training_metrics`). Their batch is not the full 24 a device: only
  // printed steps 5-9 (28.340 s) are timed.
  std::string text = testing::ReadTestData("logs/maxtext_docs_tpu_v5p_deepseek2_16b_startup.log");
  for (int step = 0; step <= 4; ++step) {
    const std::string head = "completed step: " + std::to_string(step) + ", seconds: ";
    const size_t at = text.find(head);
    ASSERT_NE(at, std::string::npos);
    const size_t rates = text.find(", TFLOP/s/device: ", at);
    const size_t weights = text.find(", total_weights: ", at);
    text.erase(rates, weights - rates);
    text.insert(at, "[Rampup Batch Size Phase] ");
  }
  const logparse::LogParser* parser = logparse::FindLogParser("maxtext");
  Result<ParsedLog> log = parser->parse(text, "ramp.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_FALSE(log->iterations[4].ms);
  EXPECT_EQ(log->iterations[4].loss, 11.110);
  EXPECT_EQ(log->iterations[5].ms, 5668.0);
  Result<ExternalMetrics> ext = BuildExternalMetrics(
      *parser, *log, "ramp.log", testing_logs::Params({{"log_format", "maxtext"}}), {});
  ASSERT_TRUE(ext.ok()) << ext.status().message();
  EXPECT_EQ(ext->metrics["throughput"]["measured_steps"], 5);
  EXPECT_NEAR(ext->metrics["throughput"]["tokens_per_device_per_s"].get<double>(),
              5 * 24 * 2048 / (5.668 + 5.668 + 5.669 + 5.668 + 5.667), 1e-9);
  EXPECT_TRUE(testing_logs::HasNote(log->notes, "ramp.log:33: a batch-size ramp-up step"));
}

TEST(Maxtext, ALogCutInAnEvaluationLine) {
  // The Tunix run's end cut inside its evaluation line (line 19) at three places: before the
  // step's comma, inside the loss, after it; the lines before are read, the cut evaluation only
  // where its loss is whole (a comma after it).
  const std::string text = testing::ReadTestData("logs/maxtext_tunix_dpo_qwen3_end.log");
  const size_t eval = text.find("Completed eval after train step 500, loss=0.516, ");
  ASSERT_NE(eval, std::string::npos);
  const logparse::LogParser* parser = logparse::FindLogParser("maxtext");
  struct Cut {
    std::string_view through;
    size_t evals;
  };
  for (const Cut& c : {Cut{"Completed eval after train step 50", 0},
                       Cut{"Completed eval after train step 500, loss=0.5", 0},
                       Cut{"Completed eval after train step 500, loss=0.516, perp", 1}}) {
    Result<ParsedLog> log = parser->parse(text.substr(0, eval + c.through.size()), "cut.log");
    ASSERT_TRUE(log.ok()) << c.through << ": " << log.status().message();
    EXPECT_EQ(log->iterations.size(), 5u) << c.through;
    EXPECT_EQ(log->evals.size(), c.evals) << c.through;
  }
}

TEST(Maxtext, BadFieldsNameTheLine) {
  const std::string good =
      testing::ReadTestData("logs/maxtext_docs_tpu_v5p_deepseek2_16b_startup.log");
  const logparse::LogParser* parser = logparse::FindLogParser("maxtext");
  struct Case {
    std::string from, to, message;
  };
  const Case cases[] = {
      {"loss: 10.374", "loss: abc", "x.log:42: MaxText's 'loss' is 'abc', not a number"},
      {"seconds: 5.669,", "seconds: 5.6.69,",
       "x.log:37: MaxText's 'seconds' is '5.6.69', not a number"},
      {"completed step: 3,", "completed step: 3.5,",
       "x.log:36: MaxText's step is '3.5', not a whole number"},
  };
  for (const Case& c : cases) {
    std::string text = good;
    const size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    Result<ParsedLog> log = parser->parse(text, "x.log");
    ASSERT_FALSE(log.ok()) << c.to;
    EXPECT_EQ(log.status().message(), c.message);
  }
  Result<ParsedLog> none = parser->parse("step 1 loss 2.0\n", "x.log");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("x.log: no MaxText step lines"), std::string::npos);
}

TEST(Maxtext, OtherFormatsNameIt) {
  // A MaxText log read as another format says which format reads it; auto names MaxText's lines
  // among what it looked for.
  Result<Read> r = ReadLog("maxtext_docs_tpu_v5p_deepseek2_16b_startup.log", "megatron");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 33 is a MaxText 'completed step: N, seconds: S, ...' "
                                      "line: set log_format = \"maxtext\""),
            std::string::npos)
      << r.status().message();
  Result<ParsedLog> none = logparse::FindLogParser("auto")->parse("epoch 1 done\n", "y.log");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("MaxText 'completed step: N, seconds: S, ...' lines"),
            std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace bm::rules
