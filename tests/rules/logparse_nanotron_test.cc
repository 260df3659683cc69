// Nanotron's iteration lines (rules/logparse/nanotron.cc) on real logs pasted upstream
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

TEST(Nanotron, LongRunWithThousandsSuffixes) {
  // huggingface/nanotron issue #390 (2025-10-18): iterations 327281-327284 of 378950 (lines 1-4),
  // each `elapsed_time_per_iteration_ms: 11.5K | tokens_per_sec: 22.8K | tokens_per_sec_per_gpu:
  // 11.4K | global_batch_size: 64`: 22.8K / 11.4K = 2 devices; 22.8K x 11.5 s = 262,200 tokens,
  // not 64, so 64 is the samples of a step (64 x 4096 / 11.5 s = 22.8K: 4096 tokens a sample).
  Result<Read> r = ReadLog("nanotron_issue390_elapsed_k.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "nanotron");
  ASSERT_EQ(log.iterations.size(), 4u);
  const double losses[] = {2.38, 2.35, 2.51, 2.36};
  const double norms[] = {1.25, 1.22, 1.21, 1.18};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(log.iterations[i].step, 327281 + static_cast<int64_t>(i));
    EXPECT_EQ(log.iterations[i].span, 1);
    EXPECT_EQ(log.iterations[i].loss, losses[i]);
    EXPECT_EQ(log.iterations[i].grad_norm, norms[i]);
    EXPECT_EQ(log.iterations[i].ms, 11500.0);
    EXPECT_EQ(log.iterations[i].tokens_per_device_per_s, 11400.0);
    EXPECT_EQ(log.iterations[i].samples, 64.0);
    EXPECT_EQ(log.iterations[i].lr, 1e-05);
  }
  EXPECT_EQ(log.facts.at("devices").value, 2);
  EXPECT_EQ(log.facts.at("devices").line, 1);
  EXPECT_FALSE(log.peak_memory_bytes);
  const json& m = r->ext.metrics;
  EXPECT_EQ(m["throughput"]["measured_steps"], 4);  // all past step 1
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_device_per_s"].get<double>(), 11400.0);
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_s"].get<double>(), 22800.0);
  EXPECT_TRUE(
      r->Note("log_format auto: read as nanotron (nanotron_issue390_elapsed_k.log:1 is a "
              "Nanotron 'iteration: N / M | consumed_tokens: ... | ...' line)"));
}

TEST(Nanotron, EarlyLinesWithMemoryFields) {
  // huggingface/nanotron PR #23 (2024-01-17), 8 GPUs: iterations 991-993 (lines 1-3); line 1
  // carries `cuda_max_memory_reserved: 547M` (bytes). 14.2K / 1.78K = 7.98, 15.5K / 1.94K = 7.99,
  // 16.2K / 2.03K = 7.98: 8 devices. The rate: each step's printed per-GPU rate weighted by its
  // time (45, 41.2, 39.4 ms).
  Result<Read> r = ReadLog("nanotron_pr23_memory_fields.log", "nanotron");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  ASSERT_EQ(log.iterations.size(), 3u);
  EXPECT_EQ(log.iterations[0].step, 991);
  EXPECT_EQ(log.iterations[0].ms, 45.0);
  EXPECT_EQ(log.iterations[1].ms, 41.2);
  EXPECT_EQ(log.iterations[2].ms, 39.4);
  EXPECT_EQ(log.iterations[2].tokens_per_device_per_s, 2030.0);
  EXPECT_EQ(log.iterations[0].loss, 10.6);
  EXPECT_EQ(log.iterations[0].samples, 20.0);
  EXPECT_EQ(log.facts.at("devices").value, 8);
  EXPECT_EQ(log.peak_memory_bytes, 547e6);
  const json& m = r->ext.metrics;
  EXPECT_NEAR(m["throughput"]["tokens_per_device_per_s"].get<double>(),
              (1780 * 0.045 + 1940 * 0.0412 + 2030 * 0.0394) / (0.045 + 0.0412 + 0.0394), 1e-9);
  EXPECT_EQ(m["memory"]["peak_bytes"].get<double>(), 547e6);
  // With the sequence length set (14.2K x 45 ms / 20 samples = 32): 20 x 32 tokens a step over
  // the three steps' time, over 8 devices.
  r = ReadLog("nanotron_pr23_memory_fields.log", "nanotron", {{"mpe", 32}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->ext.metrics["throughput"]["tokens_per_device_per_s"].get<double>(),
              3 * 20 * 32 / (0.045 + 0.0412 + 0.0394) / 8, 1e-9);
}

TEST(Nanotron, SrunPrefixAndARoundedBatch) {
  // huggingface/nanotron issue #233 (2024-11-01), a resumed run under srun (`[0434:0]:` prefix):
  // iteration 12001 of 17500, `elapsed_time_per_iteration_ms: 28.2K | tokens_per_sec: 74.5K |
  // tokens_per_sec_per_gpu: 2.33K | global_batch_size: 1.02K | lm_loss: 2.3 | ... |
  // cuda_max_memory_reserved: 34.1G`. 74.5K / 2.33K = 31.97: 32 devices. 1.02K is 1020 to 3
  // digits (74.5K x 28.2 s = 2.1M tokens, 1024 x 2048 = 2.097M): no exact samples, none read.
  Result<Read> r = ReadLog("nanotron_issue233_srun_rounded_batch.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = r->log;
  EXPECT_EQ(log.format, "nanotron");
  ASSERT_EQ(log.iterations.size(), 1u);
  const logparse::Iteration& it = log.iterations[0];
  EXPECT_EQ(it.step, 12001);
  EXPECT_EQ(it.ms, 28200.0);
  EXPECT_EQ(it.tokens_per_device_per_s, 2330.0);
  EXPECT_EQ(it.loss, 2.3);
  EXPECT_EQ(it.lr, 0.000289);
  EXPECT_EQ(it.grad_norm, 0.15);
  EXPECT_FALSE(it.samples);
  EXPECT_EQ(log.facts.at("devices").value, 32);
  EXPECT_EQ(log.peak_memory_bytes, 34.1e9);
  EXPECT_TRUE(r->Note("global_batch_size is printed to 3 digits"));
  EXPECT_DOUBLE_EQ(r->ext.metrics["throughput"]["tokens_per_device_per_s"].get<double>(), 2330.0);
}

TEST(Nanotron, NotReadAsMegatronAndBadInputNamesTheLine) {
  const std::string text = testing::ReadTestData("logs/nanotron_pr23_memory_fields.log");
  // Megatron's iteration lines look alike (`iteration N/M |`): the megatron format says which
  // format reads this one.
  Result<ParsedLog> megatron = logparse::FindLogParser("megatron")->parse(text, "n.log");
  ASSERT_FALSE(megatron.ok());
  EXPECT_NE(megatron.status().message().find("set log_format = \"nanotron\""), std::string::npos)
      << megatron.status().message();
  // Line 2 of issue #390's paste with its loss mangled.
  Result<ParsedLog> bad =
      logparse::FindLogParser("nanotron")
          ->parse(
              "10/17/2025 16:31:56 [INFO|DP=0|PP=0|TP=0]: iteration: 327281 / "
              "378950 | consumed_tokens: 85.8G | elapsed_time_per_iteration_ms: "
              "11.5K | lm_loss: 2.38\n"
              "10/17/2025 16:32:07 [INFO|DP=0|PP=0|TP=0]: iteration: 327282 / "
              "378950 | consumed_tokens: 85.8G | elapsed_time_per_iteration_ms: "
              "11.5Q | lm_loss: 2.35\n",
              "x.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "x.log:2: Nanotron's 'elapsed_time_per_iteration_ms' is '11.5Q', not a number");
  Result<ParsedLog> none = logparse::FindLogParser("nanotron")->parse("hello\n", "x.log");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message().rfind("x.log: no Nanotron iteration lines", 0), 0u);
}

}  // namespace
}  // namespace bm::rules
