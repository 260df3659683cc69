// LitGPT's training lines (rules/logparse/litgpt.cc) on real logs pasted upstream
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

TEST(Litgpt, FinetuneWithoutAccumulationTimesEachStep) {
  // Lightning-AI/litgpt issue #1110 (2024-03-13), LoRA fine-tuning of TinyLlama: `Epoch 4 | iter
  // 961 step 961 | loss train: 1.062, val: 1.057 | iter time: 529.46 ms (step)` (line 1) to step
  // 965 (line 5); iter = step, so one micro-batch a step and its iter time is the step's. Line 7
  // `Memory used: 14.49 GB` (max_memory_allocated / 1e9).
  Result<Read> r = ReadLog("litgpt_finetune_lora_issue1110.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "litgpt");
  ASSERT_EQ(log.iterations.size(), 5u);
  const double losses[] = {1.062, 0.937, 0.971, 0.902, 1.182};
  const double ms[] = {529.46, 503.53, 522.10, 115.27, 743.31};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(log.iterations[i].step, 961 + static_cast<int64_t>(i));
    EXPECT_EQ(log.iterations[i].span, 1);
    EXPECT_EQ(log.iterations[i].loss, losses[i]);
    EXPECT_EQ(log.iterations[i].ms, ms[i]);
  }
  EXPECT_EQ(log.peak_memory_bytes, 14.49e9);
  const json& m = r->ext.metrics;
  EXPECT_EQ(m["memory"]["peak_bytes"].get<double>(), 14.49e9);
  // No batch or sequence length in the lines: the steps' times only (median of lines 1-5).
  EXPECT_EQ(m["throughput"]["step_ms_median"].get<double>(), 522.10);
  EXPECT_TRUE(
      r->Note("log_format auto: read as litgpt (litgpt_finetune_lora_issue1110.log:1 is "
              "a LitGPT"));
}

TEST(Litgpt, PretrainWithAccumulationHasNoStepTime) {
  // Lightning-AI/litgpt issue #1607 (GPT-2 124M reproduction, last lines): `Epoch 34 | iter
  // 3050700 step 610140 | loss train: 2.846, val: 2.861 | iter time: 112.20 ms (step) remaining
  // time: 0:01:54` (line 1) to step 610200 (line 7): 3050700 / 610140 = 5 micro-batches a step,
  // so 112.20 ms is the last micro-batch's time, not the step's.
  Result<Read> r = ReadLog("litgpt_pretrain_gpt2_issue1607.log", "litgpt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  ASSERT_EQ(log.iterations.size(), 7u);
  EXPECT_EQ(log.iterations.front().step, 610140);
  EXPECT_EQ(log.iterations.front().loss, 2.846);
  EXPECT_EQ(log.iterations.back().step, 610200);
  EXPECT_EQ(log.iterations.back().loss, 2.857);
  for (const logparse::Iteration& it : log.iterations) {
    EXPECT_FALSE(it.ms);
    EXPECT_EQ(it.span, 1);  // each line is its step's, 10 steps apart
  }
  EXPECT_TRUE(r->Note("gradient accumulation (5 micro-batches a step)"));
  EXPECT_TRUE(r->ext.metrics["throughput"]["tokens_per_device_per_s"].is_null());
}

TEST(Litgpt, EarlyShapeMarksTheOptimizerSteps) {
  // Lightning-AI/litgpt issue #1042 (2024-03-07): `iter 1760 | step 220: loss 1.5947, iter time:
  // 263.85 ms (optimizer.step)` (line 1) and `iter 1800 | step 225: loss 1.8572, ...
  // (optimizer.step)` (line 5) end steps; lines 2-4, 6-7 are micro-batches inside a step.
  Result<Read> r = ReadLog("litgpt_issue1042_optimizer_step.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "litgpt");
  ASSERT_EQ(log.iterations.size(), 2u);
  EXPECT_EQ(log.iterations[0].step, 220);
  EXPECT_EQ(log.iterations[0].loss, 1.5947);
  EXPECT_EQ(log.iterations[0].line, 1);
  EXPECT_EQ(log.iterations[1].step, 225);
  EXPECT_EQ(log.iterations[1].loss, 1.8572);
  EXPECT_EQ(log.iterations[1].line, 5);
  EXPECT_TRUE(r->Note("5 line(s) without (step) are micro-batches inside a step"));
  EXPECT_TRUE(r->Note("gradient accumulation (8 micro-batches a step)"));
  // The same issue's second paste: `iter 4800: val loss 1.7258, val time: 3778.02 ms` (line 1),
  // an evaluation after step 4800 / 8 = 600 (line 5: iter 4840 ends step 605).
  r = ReadLog("litgpt_issue1042_val_line.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 1u);
  EXPECT_EQ(r->log.iterations[0].step, 605);
  ASSERT_EQ(r->log.evals.size(), 1u);
  EXPECT_EQ(r->log.evals[0].step, 600);
  EXPECT_EQ(r->log.evals[0].value, 1.7258);
  EXPECT_EQ(r->log.evals[0].line, 1);
}

TEST(Litgpt, LitGpt2023Shapes) {
  // Lightning-AI/litgpt issue #689 (2023-10-31, pretrain/redpajama.py, gradient_accumulation_steps
  // 2, iter counted from 0): `iter 77 step 39: loss 10.8259, iter time: 214.40ms
  // (optimizer.step)` (line 2) and every other line to `iter 97 step 49` (line 22) end steps 39-49;
  // (77 + 1) / 39 = 2 micro-batches a step, so no step time.
  Result<Read> r = ReadLog("litgpt_2023_redpajama_issue689.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "litgpt");
  ASSERT_EQ(r->log.iterations.size(), 11u);
  for (size_t i = 0; i < 11; ++i) {
    EXPECT_EQ(r->log.iterations[i].step, 39 + static_cast<int64_t>(i));
    EXPECT_EQ(r->log.iterations[i].line, 2 + 2 * static_cast<int64_t>(i));
    EXPECT_EQ(r->log.iterations[i].loss, 10.8259);
    EXPECT_FALSE(r->log.iterations[i].ms);
  }
  EXPECT_TRUE(r->Note("12 line(s) without (step)"));
  EXPECT_TRUE(r->Note("gradient accumulation (2 micro-batches a step)"));
  // Lightning-AI/litgpt issue #519 (lit-gpt's xla/finetune/adapter.py on a TPU v3-8, which leaves
  // the loss out): `[rank: 0] iter 34 step 35: iter time: 3372.20ms (optimizer.step)` (line 1) to
  // `iter 54 step 55` (line 21): iter + 1 = step, one micro-batch a step, so each iter time is its
  // step's. The median of the 21 times is the 11th smallest, 3370.80 (line 17).
  // With no loss and no batch the log gives nothing to report, and says what to set.
  r = ReadLog("litgpt_2023_tpu_no_loss_issue519.log", "auto");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no loss and no timed step in its 21 records"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("set lbs"), std::string::npos) << r.status().message();
  // The batch and layout are not in the paste: lbs 1, mpe 1024 and the 8 cores of a v3-8 as DP8
  // are BENCHFILE parameters here.
  r = ReadLog("litgpt_2023_tpu_no_loss_issue519.log", "auto",
              {{"lbs", 1}, {"mpe", 1024}, {"layout", "TP1PP1DP8"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->log.iterations.size(), 21u);
  EXPECT_EQ(r->log.iterations.front().step, 35);
  EXPECT_EQ(r->log.iterations.front().ms, 3372.20);
  EXPECT_FALSE(r->log.iterations.front().loss);
  EXPECT_EQ(r->log.iterations[11].ms, 5788.97);  // line 12, step 46
  EXPECT_EQ(r->log.iterations.back().step, 55);
  EXPECT_EQ(r->ext.metrics["throughput"]["step_ms_median"].get<double>(), 3370.80);
}

TEST(Litgpt, BadInputNamesTheLine) {
  const logparse::LogParser* litgpt = logparse::FindLogParser("litgpt");
  Result<ParsedLog> loss = litgpt->parse(
      "Epoch 4 | iter 961 step 961 | loss train: 1.062, val: 1.057 | iter time: 529.46 ms (step)\n"
      "Epoch 4 | iter 962 step 962 | loss train: nope, val: 1.057 | iter time: 503.53 ms (step)\n",
      "x.log");
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.status().message(), "x.log:2: LitGPT's 'loss' is 'nope', not a number");
  Result<ParsedLog> time = litgpt->parse(
      "Epoch 4 | iter 961 step 961 | loss train: 1.062, val: 1.057 | iter time: 5x9.46 ms (step)\n",
      "x.log");
  ASSERT_FALSE(time.ok());
  EXPECT_EQ(time.status().message(), "x.log:1: LitGPT's 'iter time' is '5x9.46', not a number");
  // Only micro-batch lines: no record, and the error says so.
  Result<ParsedLog> inside =
      litgpt->parse("iter 1770 | step 221: loss 1.5191, iter time: 89.96 ms\n", "x.log");
  ASSERT_FALSE(inside.ok());
  EXPECT_NE(inside.status().message().find("in 1 lines (1 line(s) of micro-batches inside a step)"),
            std::string::npos)
      << inside.status().message();
}

}  // namespace
}  // namespace bm::rules
