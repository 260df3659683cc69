// torchtune's metric lines (rules/logparse/torchtune.cc) on real logs pasted upstream
// (tests/data/logs/SOURCES.md), through the parser and BuildExternalMetrics, against values read
// off each log by hand; and bad input, which names the file and line.
#include <gtest/gtest.h>

#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;
using nlohmann::json;
using testing_logs::Read;
using testing_logs::ReadLog;

TEST(Torchtune, CodeLlamaRunOfAugust2024) {
  // meta-pytorch/torchtune PR #1358 (2024-08-16): `Step 1 | loss:2.085338592529297 lr:2e-05
  // tokens_per_second_per_gpu:57.828881833956174` (line 4) to step 12 (line 15); line 3 `Model is
  // initialized with precision torch.bfloat16.`
  Result<Read> r = ReadLog("torchtune_codellama7b_pr1358.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "torchtune");
  ASSERT_EQ(log.iterations.size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(log.iterations[i].step, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(log.iterations[i].span, 1);  // each line is its own step's, whatever the gaps
    EXPECT_EQ(log.iterations[i].line, static_cast<int64_t>(i) + 4);
    EXPECT_EQ(log.iterations[i].lr, 2e-05);
    EXPECT_FALSE(log.iterations[i].ms);  // the step's tokens are not printed
  }
  EXPECT_EQ(log.iterations[0].loss, 2.085338592529297);
  EXPECT_EQ(log.iterations[0].tokens_per_device_per_s, 57.828881833956174);
  EXPECT_EQ(log.iterations[11].loss, 1.1174635887145996);
  EXPECT_EQ(log.iterations[11].tokens_per_device_per_s, 542.9797193194343);
  EXPECT_EQ(log.precision, "bf16");
  EXPECT_EQ(log.precision_line, 3);
  EXPECT_FALSE(log.peak_memory_bytes);  // log_peak_memory_stats off: no memory fields
  // Step 1 (its time runs from before the loop: 57.8 tokens/s against ~400 after) left out; steps
  // 2-12 (lines 5-15) have no time of their own: the harmonic mean of their rates.
  const json& m = r->ext.metrics;
  EXPECT_EQ(m["throughput"]["measured_steps"], 11);
  EXPECT_NEAR(m["throughput"]["tokens_per_device_per_s"].get<double>(),
              11 / (1 / 405.044978758513 + 1 / 655.9372371931469 + 1 / 417.49818620797487 +
                    1 / 414.73347397639026 + 1 / 345.44944748351764 + 1 / 408.6546853024294 +
                    1 / 402.3016704011016 + 1 / 698.9489335304891 + 1 / 962.2259327743811 +
                    1 / 477.88804137904646 + 1 / 542.9797193194343),
              1e-9);
  EXPECT_TRUE(
      r->Note("log_format auto: read as torchtune (torchtune_codellama7b_pr1358.log:4 is "
              "a torchtune 'Step N | loss:X lr:Y ...' metric line)"));
  EXPECT_TRUE(r->Note("only the tokens whose label counts in the loss"));
}

TEST(Torchtune, StepsCountedFromZeroInApril2024) {
  // meta-pytorch/torchtune PR #640 (April 2024, the single-device full recipe): `Step 0 |
  // loss:1.7535516023635864 lr:2e-05 gpu_resources:13708965376 ` (line 1) to `Step 17 | ...`
  // (line 18): the recipe logged total_training_steps before counting the step, so `Step 0` is
  // optimizer step 1. `gpu_resources` is torch.cuda.memory_allocated() at the line, no peak.
  Result<Read> r = ReadLog("torchtune_pr640_step0_gpu_resources.log", "torchtune");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  ASSERT_EQ(log.iterations.size(), 18u);
  EXPECT_EQ(log.iterations.front().step, 1);
  EXPECT_EQ(log.iterations.front().loss, 1.7535516023635864);
  EXPECT_EQ(log.iterations.back().step, 18);
  EXPECT_EQ(log.iterations.back().loss, 0.9709498286247253);
  EXPECT_FALSE(log.peak_memory_bytes);
  EXPECT_TRUE(r->Note("count steps from 0"));
  // No rate and no time: no throughput.
  EXPECT_TRUE(r->ext.metrics["throughput"]["tokens_per_device_per_s"].is_null());
}

TEST(Torchtune, TrainingBarWithoutMetricLines) {
  // meta-pytorch/torchtune PR #2620 (LoRA on two nodes, TorchX's `[trainer0|0]:` prefix; the
  // metric lines went to the DiskLogger's file): the bar's drawings from `1|25|Loss:
  // 1.2621808052062988:  26%|... | 26/101 [06:45<...]` (line 1) to `1|31|Loss: ...: 32/101
  // [08:27<...]` (line 13). After each step the update drawing shows the new count with the
  // previous description, then set_description the step's: count n is step n here. The steps'
  // times are the differences of {elapsed} between counts: 27 07:00 - 06:45 = 15 s, 28 20 s,
  // 29 18 s, 30 13 s, 31 22 s, 32 08:27 - 08:13 = 14 s; 26 has no count 25 before it.
  Result<Read> r = ReadLog("torchtune_multinode_bars_pr2620.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "torchtune");
  ASSERT_EQ(log.iterations.size(), 8u);
  EXPECT_EQ(log.iterations[0].step, 25);
  EXPECT_EQ(log.iterations[0].loss, 1.2621808052062988);
  EXPECT_EQ(log.iterations[0].line, 1);
  EXPECT_FALSE(log.iterations[0].ms);
  EXPECT_EQ(log.iterations[1].step, 26);
  EXPECT_EQ(log.iterations[1].loss, 1.2436443567276);
  EXPECT_FALSE(log.iterations[1].ms);
  const double ms[] = {15000, 20000, 18000, 13000, 22000, 14000};
  for (size_t i = 2; i < 8; ++i) {
    EXPECT_EQ(log.iterations[i].step, 25 + static_cast<int64_t>(i));
    EXPECT_EQ(log.iterations[i].ms, ms[i - 2]) << log.iterations[i].step;
    EXPECT_EQ(log.iterations[i].span, 1);
  }
  EXPECT_EQ(log.iterations[6].loss, 1.1992870569229126);  // step 31, line 12
  EXPECT_FALSE(log.iterations[7].loss);  // step 32: its count drawn (line 13), not its description
  EXPECT_EQ(log.iterations[7].line, 13);
  // The median of 13, 14, 15, 18, 20, 22 s.
  EXPECT_EQ(r->ext.metrics["throughput"]["step_ms_median"].get<double>(), 16500.0);
  EXPECT_TRUE(r->Note("no metric lines: the steps and losses of torchtune's training bar"));
}

TEST(Torchtune, MemoryValidationAndTensorGradNorm) {
  // The fields a recipe adds (recipes/full_finetune_distributed.py at bd2a0fc):
  // get_memory_stats' peak_memory_* (GiB) with log_peak_memory_stats, grad_norm as the tensor's
  // repr with clip_grad_norm, and the validation loop's `val_loss` dict at its step. Line 1 is
  // PR #1358's step 1 with those fields appended as the recipe prints them. No pasted log with
  // these fields was found: their values here are invented, and what is checked is that their
  // names, units (GiB) and forms (a tensor's repr) are read as the recipe prints them.
  const std::string text =
      "Step 1 | loss:2.085338592529297 lr:2e-05 tokens_per_second_per_gpu:57.828881833956174 "
      "peak_memory_active:14.5 peak_memory_alloc:14.5 peak_memory_reserved:16.25 "
      "grad_norm:tensor(1.0625, device='cuda:0') \n"
      "Step 2 | loss:1.8718312978744507 lr:2e-05 tokens_per_second_per_gpu:405.044978758513 "
      "peak_memory_active:14.75 peak_memory_alloc:14.75 peak_memory_reserved:17.5 \n"
      "Step 2 | val_loss:1.5 \n";
  Result<ParsedLog> log = logparse::FindLogParser("torchtune")->parse(text, "x.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->iterations.size(), 2u);
  EXPECT_EQ(log->iterations[0].grad_norm, 1.0625);
  EXPECT_EQ(log->peak_memory_bytes, 17.5 * 1024 * 1024 * 1024);
  ASSERT_EQ(log->evals.size(), 1u);
  EXPECT_EQ(log->evals[0].step, 2);
  EXPECT_EQ(log->evals[0].value, 1.5);
  EXPECT_EQ(log->evals[0].line, 3);
}

TEST(Torchtune, BadInputNamesTheLine) {
  constexpr std::string_view kOk =
      "Step 1 | loss:2.085338592529297 lr:2e-05 tokens_per_second_per_gpu:57.828881833956174\n";
  Result<ParsedLog> loss = logparse::FindLogParser("torchtune")
                               ->parse(std::string(kOk) +
                                           "Step 2 | loss:abc lr:2e-05 "
                                           "tokens_per_second_per_gpu:405.044978758513\n",
                                       "x.log");
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.status().message(), "x.log:2: torchtune's 'loss' is 'abc', not a number");
  // A last line cut off mid-way (no newline): its last field is left out, not an error.
  Result<ParsedLog> cut =
      logparse::FindLogParser("torchtune")
          ->parse(std::string(kOk) + "Step 2 | loss:1.87 lr:2e-05 tokens_per", "x.log");
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  ASSERT_EQ(cut->iterations.size(), 2u);
  EXPECT_EQ(cut->iterations[1].loss, 1.87);
  EXPECT_FALSE(cut->iterations[1].tokens_per_device_per_s);
  // No metric line: the error says what was looked for.
  Result<ParsedLog> none =
      logparse::FindLogParser("torchtune")->parse("INFO:torchtune.utils.logging:hello\n", "x.log");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(),
            "x.log: no torchtune metric lines ('Step N | loss:X lr:Y "
            "tokens_per_second_per_gpu:T ...') in 1 lines");
  // auto names every format it looks for, torchtune's, Nanotron's and LitGPT's among them.
  Result<ParsedLog> unknown =
      logparse::FindLogParser("auto")->parse("epoch 1 done\nall good\n", "y.log");
  ASSERT_FALSE(unknown.ok());
  for (const char* kind : {"torchtune 'Step N | loss:X lr:Y ...' metric lines",
                           "Nanotron 'iteration: N / M | ... | lm_loss: X | ...' lines",
                           "LitGPT 'iter I step S | loss train: X, ... | iter time: T ms' lines"})
    EXPECT_NE(unknown.status().message().find(kind), std::string::npos)
        << unknown.status().message();
  EXPECT_EQ(unknown.status().message().rfind("y.log: log_format = \"auto\" found none", 0), 0u);
}

}  // namespace
}  // namespace bm::rules
