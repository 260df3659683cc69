// A script's loss line that names both a step and a global step, `Epoch 0, Step 9, Global Step 10,
// Loss: x` (Step: the epoch's batches from 0; Global Step: the optimizer's steps), is read at its
// global step by the deepspeed parser, whatever comes first on the line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::rules {
namespace {

using logparse::ParsedLog;

// tests/data/logs/deepspeed_flops_profiler_interleaved_ranks_no_engine.log (a Qwen2-MoE run on
// DeepSpeed, SOURCES.md), its lines 2, 14, 24 and 37 with the tqdm bar glued before each removed
// (the bar's own `global_step=N` came first and hid the mistake), and one `[Rank 0] time (ms)`
// line (its line 12) that makes the log DeepSpeed's. What the script prints after the bar is kept
// byte for byte.
constexpr const char* kLossLinesWithoutBars =
    "[Rank 0] time (ms) | fwd_microstep: 654.38 | bwd_microstep: 2688.62 | bwd_inner_microstep: "
    "2544.27 | bwd_allreduce_microstep: 144.26 | step_microstep: 581.75\n"
    "Epoch 0, Step 6, Global Step 7, Loss: 12.0042, Tokens/s: 4013.1, Tokens: 9980, GPU Util: "
    "100%, GPU Mem: 12.8G/15.0G, CPU Util: 9%, CPU Mem: 21.0G/186.7G\n"
    "Epoch 0, Step 7, Global Step 8, Loss: 11.9652, Tokens/s: 2651.6, Tokens: 10412, GPU Util: "
    "95%, GPU Mem: 13.8G/15.0G, CPU Util: 18%, CPU Mem: 24.3G/186.7G\n"
    "Epoch 0, Step 8, Global Step 9, Loss: 11.8778, Tokens/s: 3383.9, Tokens: 8384, GPU Util: "
    "100%, GPU Mem: 13.8G/15.0G, CPU Util: 9%, CPU Mem: 24.3G/186.7G\n"
    "Epoch 0, Step 9, Global Step 10, Loss: 11.9752, Tokens/s: 3209.4, Tokens: 7968, GPU Util: "
    "100%, GPU Mem: 13.8G/15.0G, CPU Util: 9%, CPU Mem: 24.3G/186.7G\n";

std::vector<int64_t> Steps(const ParsedLog& log) {
  std::vector<int64_t> s;
  for (const logparse::Iteration& it : log.iterations) s.push_back(it.step);
  return s;
}

TEST(DeepSpeedGlobalStep, ALossLineIsReadAtItsGlobalStepNotItsStepInTheEpoch) {
  Result<ParsedLog> log = logparse::ParseDeepSpeedLog(kLossLinesWithoutBars, "global.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  // Global Step 7..10, not the epoch's Step 6..9.
  EXPECT_EQ(Steps(*log), (std::vector<int64_t>{7, 8, 9, 10}));
  ASSERT_EQ(log->iterations.size(), 4u);
  EXPECT_EQ(log->iterations[0].loss, 12.0042);
  EXPECT_EQ(log->iterations[3].loss, 11.9752);
  EXPECT_EQ(log->iterations[3].line, 5);
}

TEST(DeepSpeedGlobalStep, TheGlobalStepWinsWhereverItStands) {
  // The real log's last line cut after its loss, then (written for this test) the same counters
  // in the other order and in `name=value` form: step 10 each time.
  for (const char* line : {"Epoch 0, Step 9, Global Step 10, Loss: 11.9752\n",
                           "Epoch 0, Global Step 10, Step 9, Loss: 11.9752\n",
                           "epoch 0 step 9 global_step=10 loss=11.9752\n"}) {
    Result<ParsedLog> log = logparse::ParseDeepSpeedLog(line, "one.log");
    ASSERT_TRUE(log.ok()) << log.status().message();
    EXPECT_EQ(Steps(*log), (std::vector<int64_t>{10})) << line;
  }
}

}  // namespace
}  // namespace bm::rules
