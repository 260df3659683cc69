// DeepSpeed's flops profiler summary (rules/logparse/deepspeed_flops_profile.h) on real logs
// (tests/data/logs/SOURCES.md), read by the deepspeed and trainer parsers, against values read off
// each log by hand; a value that does not parse names the file and line, timers that ran
// backwards give no figure.
#include <gtest/gtest.h>

#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;
using testing_logs::Read;
using testing_logs::ReadLog;

bool HasNote(const ParsedLog& log, const std::string& part) {
  return testing_logs::HasNote(log.notes, part);
}

TEST(DeepSpeedProfile, TrainerOnDeepSpeedStatesItsFlopsPerGpu) {
  // t5-small under the Trainer on DeepSpeed ZeRO-1, 3 nodes of 1 GPU: the summary at step 2
  // (lines 2-30): `FLOPS per GPU = 3 * fwd flops per GPU / iter latency: 2.35 TFLOPS` (line 27) =
  // 3 x 382.64 G (line 18) / 487.61 ms (line 26) = 2.354 T, and `samples/second: 196.88` (line
  // 28) = batch size per GPU 32 x world size 3 / 0.48761 s. The workers' closing dicts (lines
  // 40-42, pdsh's host prefix) give the run's wall time and average. With peak_tflops 312, the
  // stated MFU is 2.35 / 312 (mpe, which the log does not state, only lets the metrics be built:
  // the stated figures do not depend on it).
  Result<Read> r = ReadLog("trainer_deepspeed_flops_profiler_t5_3nodes.log", "trainer",
                           {{"peak_tflops", 312.0}, {"mpe", 512}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->log.stated_flops_per_device);
  EXPECT_DOUBLE_EQ(r->log.stated_flops_per_device->value, 2.35e12);
  EXPECT_EQ(r->log.stated_flops_per_device->line, 27);
  EXPECT_NEAR(3 * 382.64e9 / 0.48761, 2.35e12, 0.005e12);  // the summary's own arithmetic
  EXPECT_NEAR(32 * 3 / 0.48761, 196.88, 0.005);
  EXPECT_TRUE(HasNote(r->log, "at step 2 (line 2): 2.35 TFLOP/s per GPU"));
  EXPECT_TRUE(HasNote(r->log, "iter latency 487.61 ms, samples/second 196.88"));
  EXPECT_DOUBLE_EQ(r->m()["mfu"]["stated_flops_per_device"].get<double>(), 2.35e12);
  EXPECT_DOUBLE_EQ(r->m()["mfu"]["stated"].get<double>(), 2.35e12 / 312e12);
  EXPECT_EQ(r->log.wall_s, 922.0487);
  ASSERT_TRUE(r->log.trainer_average);
  EXPECT_EQ(r->log.trainer_average->samples_per_s, 183.358);
}

TEST(DeepSpeedProfile, InterleavedSummariesWithoutTheEngineNameNoStepAndNoFigure) {
  // A script's own FlopsProfiler on every rank (no engine: no world size, no iter latency), their
  // summaries interleaved (lines 49-106: `Profile Summary at step 10:fwd flops per GPU: 1.41 T`,
  // a header glued before another rank's field). DeepSpeed's wall-clock lines make it a deepspeed
  // log; its records stay the loss lines' (global steps 6-10, the bars' `global_step=N` and
  // `Global Step N, Loss: x`), none from the summaries' `step 10` lines, and no FLOPS figure is
  // read, with a note.
  Result<Read> r = ReadLog("deepspeed_flops_profiler_interleaved_ranks_no_engine.log", "auto");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->log.format, "deepspeed");
  EXPECT_EQ(r->Steps(), (std::vector<int64_t>{6, 7, 8, 9, 10}));
  EXPECT_EQ(r->Loss(7), 12.0042);   // line 2
  EXPECT_EQ(r->Loss(10), 11.9752);  // line 35
  EXPECT_FALSE(r->log.stated_flops_per_device);
  EXPECT_TRUE(HasNote(r->log, "prints no whole-iteration FLOPS line"));
  EXPECT_TRUE(r->m()["mfu"]["stated_flops_per_device"].is_null());
}

// The summary of a real Megatron-DeepSpeed run whose backward the engine did not time
// (`bwd latency: -2.9601e+08 us`), quoted (`> `), after a DeepSpeed step line.
constexpr const char* kNegativeTimers =
    "[2023-10-10 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=2, skipped=0, "
    "lr=[0.0003], mom=[(0.9, 0.95)]\n"
    "> -------------------------- DeepSpeed Flops Profiler --------------------------\n"
    "> Profile Summary at step 2:\n"
    "> fwd flops per GPU:                                                      110.97 T\n"
    "> fwd latency:                                                            9.34 s\n"
    "> bwd latency:                                                            -2.9601e+08 us\n"
    "> step latency:                                                           158.64 ms\n"
    "> iter latency:                                                           -2.86511e+08 us\n"
    "> FLOPS per GPU = 3 * fwd flops per GPU / iter latency:                   -1.16192e+18 "
    "uFLOPS\n"
    "> samples/second:                                                         -0.5\n"
    "> \n"
    "> ----------------------------- Aggregated Profile per GPU -----------------------------\n";

TEST(DeepSpeedProfile, NegativeLatenciesGiveNoFigure) {
  Result<ParsedLog> log = logparse::ParseDeepSpeedLog(kNegativeTimers, "neg.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_FALSE(log->stated_flops_per_device);
  EXPECT_TRUE(HasNote(*log, "line 8 prints a latency or rate that is not positive"));
  ASSERT_EQ(log->iterations.size(), 1u);  // step=2 only
  EXPECT_EQ(log->iterations[0].step, 2);
}

TEST(DeepSpeedProfile, AValueThatDoesNotParseNamesTheLine) {
  std::string text = kNegativeTimers;
  text.replace(text.find("-2.86511e+08 us"), 15, "n/a");
  Result<ParsedLog> log = logparse::ParseDeepSpeedLog(text, "bad.log");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(log.status().message().find("bad.log:8: DeepSpeed flops profiler summary: 'n/a' is "
                                        "not a duration"),
            std::string::npos)
      << log.status().message();
}

}  // namespace
}  // namespace bm::rules
