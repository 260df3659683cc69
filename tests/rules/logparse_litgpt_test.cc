// LitGPT's training lines (rules/logparse/litgpt.cc) on real logs pasted upstream
// (tests/data/logs/SOURCES.md), through the parser and BuildExternalMetrics, against values read
// off each log by hand; and bad input, which names the file and line.
#include <gtest/gtest.h>

#include "rules/exec.h"
#include "rules/external_metrics.h"
#include "rules/logparse/log_parser.h"
#include "tests/support/rule_params.h"
#include "tests/support/test_data.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;
using nlohmann::json;

struct Read {
  ParsedLog log;
  ExternalMetrics ext;
  bool Note(const std::string& part) const {
    for (const std::string& n : ext.notes)
      if (n.find(part) != std::string::npos) return true;
    return false;
  }
};

Result<Read> ReadLog(const std::string& file, const std::string& format, json params = {}) {
  const logparse::LogParser* parser = logparse::FindLogParser(format);
  if (!parser) return Errorf(ErrorCode::kInvalidArgument, "no parser {}", format);
  Read r;
  BM_ASSIGN_OR_RETURN(r.log, parser->parse(testing::ReadTestData("logs/" + file), file));
  params["log_format"] = format;
  params["command"] = json::array({"true"});
  BM_ASSIGN_OR_RETURN(r.ext,
                      BuildExternalMetrics(*parser, r.log, file,
                                           testing::WithDefaults(*MakeExecRule(), params), {}));
  return r;
}

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
