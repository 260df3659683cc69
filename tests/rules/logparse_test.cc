// The log parsers (rules/logparse/) on realistic multi-rank logs written for
// these tests (tests/data/logs/: Megatron TP2 DP4 fp16 with skipped and NaN
// iterations, a loss-scale change, two ranks' memory reports, a duplicated
// line and a cut-off last line; DeepSpeed ZeRO-3 with two ranks' timer lines;
// MLPerf :::MLLOG with srun prefixes), and on malformed ones inline.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "rules/logparse/deepspeed_overflow.h"
#include "rules/logparse/deepspeed_progress.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/records_mfu.h"
#include "rules/logparse/trainer_dicts.h"
#include "rules/logparse/trainer_elapsed.h"
#include "tests/support/test_data.h"

namespace bm::logparse {
namespace {

std::string ReadLog(const std::string& name) { return testing::ReadTestData("logs/" + name); }

double FactOf(const ParsedLog& log, const char* name) {
  auto it = log.facts.find(name);
  return it == log.facts.end() ? -1 : it->second.value;
}

const Iteration* At(const ParsedLog& log, int64_t step) {
  for (const Iteration& it : log.iterations)
    if (it.step == step) return &it;
  return nullptr;
}

TEST(LineScan, NumbersAsPythonPrintsThem) {
  EXPECT_EQ(ParseNumber(" 1.050000E+01 "), 10.5);
  EXPECT_EQ(ParseNumber("65536.0"), 65536.0);
  EXPECT_TRUE(std::isnan(*ParseNumber("NAN")));
  EXPECT_TRUE(std::isinf(*ParseNumber("-inf")));
  EXPECT_FALSE(ParseNumber("12abc"));
  EXPECT_FALSE(ParseNumber(""));
  EXPECT_EQ(
      DottedArg("[x] [INFO]   train_micro_batch_size_per_gpu  4", "train_micro_batch_size_per_gpu"),
      "4");
  EXPECT_EQ(DottedArg("  seq_length ........ 4096", "seq_length"), "4096");
  EXPECT_FALSE(DottedArg("  max_seq_length ........ 4096", "seq_length"));
  EXPECT_FALSE(DottedArg("seq_length is 4096", "seq_length"));
}

TEST(LineScan, ElisionMarks) {
  for (const char* mark :
       {"...", " ...", "......", "[...]", " [...] ", "(...)", "\xE2\x80\xA6", "<snip>", "[snip]"})
    EXPECT_TRUE(IsElisionMark(mark)) << mark;
  for (const char* line : {"", "..", "... more", "[2024-01-01 ...]", "time (ms)", "[...] 12"})
    EXPECT_FALSE(IsElisionMark(line)) << line;
}

TEST(LineScan, TerminalEscapesAreRemovedLinesKept) {
  EXPECT_FALSE(WithoutTerminalEscapes("loss: 2.5\n"));
  EXPECT_EQ(
      *WithoutTerminalEscapes("\x1b[32m[t] [    INFO]\x1b[0m - a = 8\x1b[0m\r\nb\x1b[1;35mc\n"),
      "[t] [    INFO] - a = 8\r\nbc\n");
  EXPECT_EQ(*WithoutTerminalEscapes("x\x1b[2K\x1b["), "x");  // an erase code; a cut one at the end
  // Through the registry, every format reads the log without them.
  Result<ParsedLog> r = FindLogParser("paddle")->parse(
      "\x1b[32m[t] [    INFO]\x1b[0m -   Total train batch size (w. parallel, distributed & "
      "accumulation) = 8\x1b[0m\n\x1b[32m[t] [    INFO]\x1b[0m - loss: 2.5, global_step: 1, "
      "interval_runtime: 2.0, interval_samples_per_second: 4.0, interval_steps_per_second: "
      "0.5\x1b[0m\n",
      "c.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(FactOf(*r, "gbs"), 8);
  EXPECT_EQ(r->iterations.at(0).ms, 2000.0);
}

TEST(LineScan, ByteOrderMarkDoesNotHideTheFirstLine) {
  // A log saved by a Windows editor: its UTF-8 byte order mark before line 1 hid a record that
  // starts the line (a Trainer dict's `{`); through the registry every format reads past it.
  const std::string bom = "\xEF\xBB\xBF";
  const std::string dicts =
      "{'loss': 2.5, 'grad_norm': 1.5, 'learning_rate': 1e-05, 'epoch': 0.5}\r\n"
      "{'loss': 2.25, 'grad_norm': 1.25, 'learning_rate': 1e-05, 'epoch': 1.0}\r\n";
  for (const char* format : {"trainer", "auto"}) {
    Result<ParsedLog> r = FindLogParser(format)->parse(bom + dicts, "w.log");
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_EQ(r->iterations.size(), 2u) << format;
    EXPECT_EQ(r->iterations[0].loss, 2.5);  // line 1, after the mark
    EXPECT_EQ(r->iterations[0].grad_norm, 1.5);
    EXPECT_EQ(r->iterations[0].line, 1);
    EXPECT_EQ(r->iterations[1].loss, 2.25);
    EXPECT_EQ(r->lines, 2);
  }
  // A log of nothing but the mark is an empty log, named as such.
  Result<ParsedLog> empty = FindLogParser("megatron")->parse(bom, "e.log");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("e.log"), std::string::npos);
}

TEST(Megatron, GptNeoxLogTakesDeepSpeedsMaxMemAllocated) {
  // GPT-NeoX on DeepSpeed's engine (deepspeedai/DeepSpeed issue #3742, a user's paste): no
  // report_memory line; the ThroughputTimer's MaxMemAllocated=63.31GB is the memory (GiB).
  const std::string log =
      "[2023-07-25 21:03:17,269] [INFO] [timer.py:215:stop] epoch=0/micro_step=34/global_step=34, "
      "RunningAvgSamplesPerSec=7.864669709950182, CurrSamplesPerSec=8.00912418308922, "
      "MemAllocated=59.65GB, MaxMemAllocated=63.31GB\n"
      " samples/sec: 7.799 | iteration       34/   10000 | elapsed time per iteration (ms): 4103.1 "
      "| learning rate: 2.111E-06 | approx flops per GPU: 112.9TFLOPS | lm_loss: 1.118665E+01 | "
      "number of skipped iterations:   0 | number of nan iterations:   0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "neox.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].loss, 11.18665);
  ASSERT_TRUE(r->peak_memory_bytes);
  EXPECT_DOUBLE_EQ(*r->peak_memory_bytes, 63.31 * 1073741824.0);
  EXPECT_EQ(r->memory_source,
            "MaxMemAllocated (DeepSpeed ThroughputTimer; allocated, not reserved)");
  // A report_memory line wins (max reserved, the larger figure).
  r = ParseMegatronLog(log +
                           " [Rank 0] (after 34 iterations) memory (MB) | allocated: 61000.0 | "
                           "max allocated: 64800.0 | reserved: 70000.0 | max reserved: 70000.0\n",
                       "neox.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r->peak_memory_bytes, 70000.0 * 1048576.0);
  EXPECT_EQ(r->memory_source, "max reserved (Megatron report_memory)");
}

TEST(Megatron, RealisticMultiRankLog) {
  Result<ParsedLog> r = ParseMegatronLog(ReadLog("megatron_tp2dp4.log"), "megatron_tp2dp4.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = *r;
  // Iterations 1-9: the second copy of 5 (another node's) is dropped; 9 is cut off.
  ASSERT_EQ(log.iterations.size(), 9u);
  EXPECT_EQ(log.restarts, 0);
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(log.iterations[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(log.iterations[i].span, 1);  // --log-interval 1
  }
  const Iteration& first = *At(log, 1);
  EXPECT_EQ(first.ms, 2000.0);
  EXPECT_EQ(first.loss, 10.5);
  EXPECT_EQ(first.samples, 16.0);
  EXPECT_EQ(first.loss_scale, 65536.0);
  EXPECT_EQ(first.grad_norm, 5.0);
  EXPECT_DOUBLE_EQ(*At(log, 2)->lr, 6e-5);
  // Skipped (overflow): no loss printed, the loss scale halves.
  EXPECT_FALSE(At(log, 3)->loss);
  EXPECT_EQ(At(log, 3)->skipped, 1);
  EXPECT_EQ(At(log, 3)->loss_scale, 32768.0);
  EXPECT_EQ(At(log, 6)->nan, 1);
  EXPECT_EQ(At(log, 6)->loss_scale, 16384.0);
  // The cut-off line: a record without its unterminated fields.
  EXPECT_FALSE(At(log, 9)->ms);
  EXPECT_FALSE(At(log, 9)->loss);
  // Memory: the largest max reserved of the two ranks, MB = 2^20 bytes.
  ASSERT_TRUE(log.peak_memory_bytes);
  EXPECT_EQ(*log.peak_memory_bytes, 22528.0 * 1048576.0);
  EXPECT_EQ(log.memory_source, "max reserved (Megatron report_memory)");
  // Facts from the argument block and the parameter lines ((0, 0) printed twice).
  EXPECT_EQ(FactOf(log, "mpe"), 1024);
  EXPECT_EQ(FactOf(log, "lbs"), 2);
  EXPECT_EQ(FactOf(log, "gbs"), 16);
  EXPECT_EQ(FactOf(log, "tp"), 2);
  EXPECT_EQ(FactOf(log, "pp"), 1);
  EXPECT_EQ(FactOf(log, "dp"), 4);
  EXPECT_EQ(FactOf(log, "devices"), 8);
  EXPECT_EQ(FactOf(log, "layers"), 4);
  EXPECT_EQ(FactOf(log, "hidden"), 256);
  EXPECT_EQ(FactOf(log, "heads"), 8);
  EXPECT_EQ(FactOf(log, "parameters"), 10000000);
  EXPECT_EQ(log.facts.at("mpe").line, 15);
  EXPECT_EQ(log.precision, "fp16");
}

TEST(Megatron, LogIntervalSpansAndResumedRun) {
  auto line = [](int it, double ms, double loss) {
    return fmt::format(
        " iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): "
        "{:.1f} | learning rate: 1.000000E-04 | global batch size:     8 | lm loss: {:.6E} | "
        "loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
        it, 100, it * 8, ms, loss);
  };
  // --log-interval 10; the run dies after 30 and resumes from the checkpoint at 20.
  std::string text = line(10, 500, 9) + line(20, 400, 8) + line(30, 400, 7) +
                     "resuming from checkpoint at iteration 20\n" + line(30, 410, 7.1) +
                     line(40, 420, 6);
  Result<ParsedLog> r = ParseMegatronLog(text, "resumed.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(r->restarts, 1);
  EXPECT_EQ(r->iterations[0].span, 10);
  EXPECT_EQ(r->iterations[2].step, 30);
  EXPECT_EQ(r->iterations[2].ms, 410.0) << "the resumed run's line replaces the first";
  EXPECT_EQ(r->iterations[3].span, 10);
}

TEST(Megatron, DeepSpeedStepLinesCountThePipelineEnginesSkippedSteps) {
  // Megatron-DeepSpeed's pipeline path prints `number of skipped iterations:   0` whatever its
  // engine skipped; the engine's running count (`step=N, skipped=K`) gives the record at 20 its
  // 5 - 2 = 3 skipped steps. The record at 30 has no engine line at its step: as printed.
  // (A first record at 20 would not get the 3: no engine line at step 10 brackets it.)
  auto iteration = [](int step) {
    return fmt::format(
        " iteration {:8d}/     100 | elapsed time per iteration (ms): 1000.0 | lm loss: "
        "1.000000E+01 | loss scale: 1.0 | number of skipped iterations:   0 | number of nan "
        "iterations:   0 |\n",
        step);
  };
  auto engine = [](int step, int skipped) {
    return fmt::format(
        "[2023-08-15 06:31:42,452] [INFO] [logging.py:96:log_dist] [Rank 0] step={}, skipped={}, "
        "lr=[0.0001], mom=[(0.9, 0.95)]\n",
        step, skipped);
  };
  Result<ParsedLog> r = ParseMegatronLog(
      engine(10, 2) + iteration(10) + engine(20, 5) + iteration(20) + iteration(30), "mds.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(At(*r, 10)->skipped, 2);  // the first record spans steps 1-10: the whole count
  EXPECT_EQ(At(*r, 20)->skipped, 3);
  EXPECT_EQ(At(*r, 30)->skipped, 0);
  Result<ParsedLog> mid =
      ParseMegatronLog(iteration(20) + engine(30, 5) + iteration(30), "mid.log");
  ASSERT_TRUE(mid.ok()) << mid.status().message();
  EXPECT_EQ(At(*mid, 30)->skipped, 0);  // spans 21-30, and no engine line at step 20
  ASSERT_TRUE(ReadDeepSpeedProgress("[Rank 0] step=7, skipped=3, lr=[1e-05]"));
  EXPECT_EQ(ReadDeepSpeedProgress("[Rank 0] step=7, skipped=3, lr=[1e-05]")->skipped, 3);
  EXPECT_FALSE(ReadDeepSpeedProgress("global_step=7, skipped=3"));
  EXPECT_FALSE(ReadDeepSpeedProgress("step=7.5, skipped=3"));
}

TEST(Megatron, MalformedAndEmptyLogsNameFileAndLine) {
  Result<ParsedLog> r = ParseMegatronLog(
      "noise\n iteration        1/      10 | elapsed time per iteration (ms): 12.5 | lm loss: "
      "abc | loss scale: 1.0 |\n",
      "bad.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "bad.log:2: 'lm loss' is 'abc', not a number");

  r = ParseMegatronLog("", "empty.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "empty.log: no Megatron iteration lines (' iteration N/M | ... |') in 0 lines");
  r = ParseMegatronLog("Traceback (most recent call last):\nRuntimeError: CUDA out of memory\n",
                       "oom.log");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("oom.log: no Megatron iteration lines"), std::string::npos);
}

TEST(LineScan, StepsAreWholeCountsNotCastsOfAnyNumber) {
  // A step cast from a number that is none (nan, inf, 1e+20 beyond int64_t) was undefined
  // behaviour (UBSan, round 30's mutated logs); it is a whole number from 0 to 2^53 or none.
  EXPECT_EQ(WholeCount(0.0), 0);
  EXPECT_EQ(WholeCount(12.0), 12);
  EXPECT_EQ(WholeCount(9007199254740992.0), 9007199254740992);  // 2^53
  EXPECT_FALSE(WholeCount(9007199254740994.0));
  EXPECT_FALSE(WholeCount(1e20));
  EXPECT_FALSE(WholeCount(-1.0));
  EXPECT_FALSE(WholeCount(2.5));
  EXPECT_FALSE(WholeCount(std::nan("")));
  EXPECT_FALSE(WholeCount(INFINITY));
  EXPECT_FALSE(WholeCount(std::optional<double>()));
  EXPECT_FALSE(ReadDeepSpeedProgress("[Rank 0] step=nan, skipped=0, lr=[1e-05]"));
  EXPECT_FALSE(ReadDeepSpeedProgress("[Rank 0] step=99999999999999999999, skipped=0, lr=[1]"));

  const std::string good =
      " iteration        1/      10 | elapsed time per iteration (ms): 12.5 | lm loss: 2.5 |\n";
  Result<ParsedLog> r = ParseMegatronLog(
      good +
          " iteration 99999999999999999999/      10 | elapsed time per iteration (ms): 12.5 | "
          "lm loss: 2.5 |\n",
      "huge.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(),
            "huge.log:2: 'iteration 99999999999999999999/      10 |' names no step (a whole "
            "number from 0 to 2^53)");
  r = ParseMegatronLog(good + " iteration      nan/      10 | lm loss: 2.5 |\n", "nan.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "nan.log:2: 'iteration      nan/      10 |' names no step (a whole number from 0 to "
            "2^53)");
  r = ParseMegatronLog(
      " iteration        2/      10 | lm loss: 2.5 | number of skipped iterations:   inf |\n",
      "count.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "count.log:1: 'number of skipped iterations' is 'inf', not a count");

  // NeMo 2's ProgressPrinter: global_step is the step, so a global_step that is none is an error.
  r = ParseNemoLog(
      "Training epoch 0, iteration 0/9 | lr: 1e-05 | global_batch_size: 128 | global_step: inf | "
      "reduced_train_loss: 2.1 | train_step_timing in s: 3.5\n",
      "n2.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "n2.log:1: 'global_step' is 'inf', not a step");

  // MLPerf: a global_batch_size below 1 (steps are samples over it) and a metadata step
  // beyond 2^53 are errors naming the line.
  const std::string event =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", ";
  r = ParseMllog(event + "\"key\": \"global_batch_size\", \"value\": 0, \"metadata\": {}}\n",
                 "gbs.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "gbs.txt:1: global_batch_size is 0, not a batch size");
  r = ParseMllog(
      event + "\"key\": \"train_loss\", \"value\": 2.5, \"metadata\": {\"step\": 1e+20}}\n",
      "step.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "step.txt:1: metadata 'step' is 1e+20, not a place in the run");
  r = ParseMllog(event +
                     "\"key\": \"tracked_stats\", \"value\": {\"loss\": 2.5}, \"metadata\": "
                     "{\"step_num\": -100}}\n",
                 "step_num.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "step_num.txt:1: metadata 'step_num' is -100, not a place in the run");
  // MaxText's blocks place themselves by first_epoch_num (tokens): a digit damaged into an
  // exponent (logparse_mutation_test: 1107296256 -> 110729e256) made a step of -2^63.
  r = ParseMllog(event +
                     "\"key\": \"block_start\", \"value\": null, \"metadata\": {\"epoch_count\": "
                     "50331648, \"first_epoch_num\": 110729e256}}\n",
                 "tokens.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "tokens.txt:1: metadata 'first_epoch_num' is 1.10729e+261, not a place in the run");
}

TEST(Trainer, BarsOfHugeCountsAreNoHang) {
  // A mangled copy of trainer_trl_grpo_prints_between_bar_and_dict.log (round 30's fuzzer, numbers
  // replaced by 9007199254740993, reduced): the logging interval was searched from 1 to the bars'
  // n one value at a time, 2^52 tries (a hang). 9007199254740993 reads as 2^53 (a double); dict 2
  // lies between two bars at 2^53, so logging_steps = 2^53 / 2 and dict 1 is at 2^52.
  const std::string log = std::string(
      "\r" + std::string(53, ' ') +
      "\r{'loss': 0.0, 'epoch': 0.0}\r  0%|          | 9007199254740993/9007199254740993 "
      "[02:03<9007199254740993:08:29, \r{'loss': 0.0, 'epoch': 9007199254740993}\n\r  0%|          "
      "| 9007199254740993/9007199254740993 "
      "[9007199254740993:9007199254740993<9007199254740993:06:34, ");
  Result<ParsedLog> r = FindLogParser("trainer")->parse(log, "bar.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, int64_t{1} << 52);
  EXPECT_EQ(r->iterations[1].step, int64_t{1} << 53);
  EXPECT_EQ(r->iterations[1].loss, 0.0);
}

TEST(Trainer, EvalBeforeARestartKeepsItsStep) {
  // This fuzzing round (trainer_trl_llava_4g_epochs_closing_range.log with an ms-swift dict
  // spliced in, reduced): a dict naming step 6 after seven counted ones restarts the run there and
  // drops the dicts of steps 6 and 7, but the evaluation read after the seventh still pointed past
  // them: PlaceEvals read beyond the steps it inferred (ASan heap-buffer-overflow).
  const std::string log =
      "{'loss': '7.181', 'epoch': '0.016'}\n"
      "{'loss': '4.239', 'epoch': '0.032'}\n"
      "{'loss': '4.086', 'epoch': '0.048'}\n"
      "{'loss': '3.903', 'epoch': '0.064'}\n"
      "{'loss': '3.772', 'epoch': '0.08'}\n"
      "{'loss': '3.719', 'epoch': '0.112'}\n"
      "{'loss': '3.712', 'epoch': '0.128'}\n"
      "{'eval_loss': '3.705', 'epoch': '0.96'}\n"
      "{'loss': '1.322', 'epoch': '0.096', 'global_step/max_steps': '6/189'}\n";
  Result<ParsedLog> r = FindLogParser("trainer")->parse(log, "restart.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->restarts, 1);
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 7);
  EXPECT_EQ(r->evals[0].value, 3.705);
}

TEST(Trainer, TokenRateOfTheRunBeforeIsDroppedWithIt) {
  // This fuzzing round (trainer_live/tokens_seen.buffered.log mutated, reduced): the epoch going
  // back at line 3 starts another run, dropping the dicts before it, but the
  // train_tokens_per_second average read at line 2 was kept, pointing at a dropped dict: Finish
  // read past the steps it inferred for its through_step (ASan heap-buffer-overflow). It is the run
  // before's, dropped too.
  const std::string log =
      "{'loss': '6.099', 'train_tokens_per_second': '6553'}\n"
      "{'loss': '6.087', 'epoch': '1.667', 'num_input_tokens_seen': 5120, "
      "'train_tokens_per_second': '7970'}\n"
      " 8.44it/s]{'loss': '6.125', 'epoch': '1.333'}\n"
      "| 1/1 [00:00<00:00";
  Result<ParsedLog> r = FindLogParser("trainer")->parse(log, "runs.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->restarts, 1);
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].loss, 6.125);
  EXPECT_FALSE(r->trainer_average);
}

TEST(Megatron, BridgeStepTimeLinesWithoutIterationLinesSayWhy) {
  // Megatron-Bridge's `Step Time` line (print_rank_0) without the iteration line it precedes
  // (print_rank_last): rank 0's output of a pipeline-parallel run, or a README's one line (the
  // reduced-precision tutorial's "Step Time : 11.65s GPU utilization: 1158.1TFLOP/s/GPU").
  const std::string text =
      "[NeMo I 2026-02-01 10:00:00] setting number of microbatches to constant 32\n"
      "Step Time : 11.65s GPU utilization: 1158.1MODEL_TFLOP/s/GPU\n";
  Result<ParsedLog> r = ParseMegatronLog(text, "rank0.log");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no Megatron iteration lines"), std::string::npos);
  EXPECT_NE(r.status().message().find("line 2 is Megatron-Bridge's 'Step Time : ...' line, which "
                                      "gives no step or loss"),
            std::string::npos)
      << r.status().message();
}

TEST(Megatron, LineWithoutAKnownFieldIsAnError) {
  // A complete line (it ends with `|`) from which no field was read: not an empty record.
  Result<ParsedLog> r = ParseMegatronLog(
      " iteration        1/      10 | consumed samples:            8 | foo: 1.0 |\n", "bare.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(),
            "bare.log:1: an iteration line without any field the megatron parser reads (elapsed "
            "time per iteration (ms), lm loss, learning rate, global batch size, ...)");
  // A last line cut off before its first read field stays a record (the log's tolerance).
  r = ParseMegatronLog(
      " iteration        1/      10 | elapsed time per iteration (ms): 12.5 | lm loss: 2.0 |\n"
      " iteration        2/      10 | consumed samples:           16 | elapsed ti",
      "cut.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_FALSE(r->iterations[1].ms);
}

TEST(Megatron, KeyValueAndCurrentAverageFieldsMalformed) {
  // ALCF's `name=value` and Primus's `current/average` keep the "NAME:LINE: what" errors.
  Result<ParsedLog> r = ParseMegatronLog(
      " iteration=       2/  317892 | elapsed_time_per_iteration_ms=16030.6 | lm loss=abc |\n",
      "alcf.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "alcf.log:1: 'lm loss' is 'abc', not a number");
  r = ParseMegatronLog(
      "x\n iteration 126/ 5000 | elapsed time per iteration (ms): 13372.8/abc | lm loss: 1.0 |\n",
      "primus.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "primus.log:2: 'elapsed time per iteration (ms)' is '13372.8/abc', not a number");
  // BigScience Megatron-DeepSpeed's seconds: read as ms x 1000, and malformed, an error.
  r = ParseMegatronLog(
      " iteration 10/ 90 | elapsed time per iteration (s): 7.2310 | lm loss: 1 |\n", "seconds.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(*r->iterations[0].ms, 7231.0);
  r = ParseMegatronLog(
      "x\n iteration 10/ 90 | elapsed time per iteration (s): 7.2s | lm loss: 1 |\n",
      "seconds.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "seconds.log:2: 'elapsed time per iteration (s)' is '7.2s', not a number");
  // Well-formed: the first of the pair; `name=value` counters and the loss scale.
  r = ParseMegatronLog(
      " iteration 3/ 10 | elapsed time per iteration (ms): 20.0/30.0 | lm loss: 1.5 |\n"
      " iteration=  4/  10 | elapsed_time_per_iteration_ms=21.5 | global_batch_size=  8 | lm "
      "loss=1.25 | loss_scale=2.0 | grad_norm=0.500 | number_of_skipped_iterations=  0 | "
      "number_of_nan_iterations=  1 |\n",
      "ok.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[0].ms, 20.0);
  EXPECT_EQ(r->iterations[1].ms, 21.5);
  EXPECT_EQ(r->iterations[1].samples, 8.0);
  EXPECT_EQ(r->iterations[1].loss, 1.25);
  EXPECT_EQ(r->iterations[1].loss_scale, 2.0);
  EXPECT_EQ(r->iterations[1].grad_norm, 0.5);
  EXPECT_EQ(r->iterations[1].nan, 1);
  // Primus from July 2026 (print_rank_last_patches.py ThroughputAverageExtension): the token
  // rate appended to the compute segment as `inst/harmonic mean`.
  r = ParseMegatronLog(
      " iteration 5/ 10 | elapsed time per iteration (ms): 6046.6/6050.0 | compute per GPU "
      "(TFLOP/s/GPU): 579.4 (avg 573.6)  | tokens/s/GPU inst/harmonic mean: 10005.5/9903.7 | lm "
      "loss: 1.5 | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
      "primus.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[0].tokens_per_device_per_s, 10005.5);
  EXPECT_EQ(r->iterations[0].ms, 6046.6);
  // Megatron-DeepSpeed's `tokens per gpu per second (tgs)`, swiss-ai's `tokens/sec/gpu`.
  r = ParseMegatronLog(
      " iteration 5/ 10 | elapsed time per iteration (ms): 344656.1 | lm loss: 1.1 | "
      "samples per second: 4.457 | tokens per gpu per second (tgs): 142.612 | TFLOPs: 153.38 |\n"
      " iteration 6/ 10 | elapsed time per iteration (ms): 131064.1 | eta: 0:00:00 | "
      "tokens/sec/gpu: 8000.5 | lm loss: 1.0 |\n",
      "tgs.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[0].tokens_per_device_per_s, 142.612);
  EXPECT_EQ(r->iterations[1].tokens_per_device_per_s, 8000.5);
}

TEST(Nemo, LogIntervalCutLineAndMalformedField) {
  auto line = [](int global_step, double loss, double s) {
    return fmt::format(
        "Training epoch 0, iteration {}/99 | lr: 1e-05 | global_batch_size: 16 | global_step: "
        "{} | reduced_train_loss: {} | train_step_timing in s: {} | consumed_samples: {}\n",
        global_step, global_step, loss, s, (global_step + 1) * 16);
  };
  // log_interval 10: lines at global_step 9 and 19 are steps 10 and 20, ten steps each.
  std::string text = "Validation: iteration 1/5\n" + line(9, 3.5, 0.25) + line(19, 3.25, 0.5);
  Result<ParsedLog> r = ParseNemoLog(text, "n.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 10);
  EXPECT_EQ(r->iterations[0].span, 10);
  EXPECT_EQ(r->iterations[1].step, 20);
  EXPECT_EQ(r->iterations[1].span, 10);
  EXPECT_EQ(r->iterations[1].ms, 500.0);
  EXPECT_EQ(r->iterations[1].loss, 3.25);
  EXPECT_EQ(r->iterations[0].line, 2);
  // A last line without its newline: its last field may be cut, and is not read.
  r = ParseNemoLog(text +
                       "Training epoch 0, iteration 29/99 | global_step: 29 | "
                       "reduced_train_loss: 2.5 | train_step_timing in s: 0.",
                   "cut.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 3u);
  EXPECT_EQ(r->iterations[2].loss, 2.5);
  EXPECT_FALSE(r->iterations[2].ms);
  // A field it reads that does not parse.
  r = ParseNemoLog("Training epoch 0, iteration 0/9 | global_step: 0 | reduced_train_loss: abc\n",
                   "bad.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "bad.log:1: 'reduced_train_loss' is 'abc', not a number");
  r = ParseNemoLog("nothing\n", "none.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "none.log: no NeMo 2 ProgressPrinter lines ('Training epoch E, iteration N/M | ... | "
            "global_step: S | ...'), NeMo 1 training bars ('Epoch E: ... [..., "
            "reduced_train_loss=x, global_step=S, ...]') or NeMo Automodel lines ('step N | "
            "epoch E | loss X | ...') in 1 lines");
}

TEST(Nemo, CarriedValLossIsAnEvaluationWhereItChanges) {
  auto line = [](int global_step, double loss, double val) {
    return fmt::format(
        "Training epoch 0, iteration {}/9 | global_step: {} | reduced_train_loss: {} | "
        "val_loss: {}\n",
        global_step, global_step, loss, val);
  };
  // Line 1 carries a validation from before the log: not read. A sanity check's validation
  // (line 2) is none. Line 5 follows validation lines (4): the validation after step 2, though
  // its value is the same. Line 6 changes it: after step 3. Line 7 is two steps after line 6
  // (log_interval 2): placed at step 4, noted.
  const std::string text = line(0, 3.0, 2.75) + "Sanity checking Validation: iteration 1/2\n" +
                           line(1, 2.5, 2.75) + "Validation: iteration 1/1\n" +
                           line(2, 2.25, 2.75) + line(3, 2.0, 2.5) + line(5, 1.75, 2.25);
  Result<ParsedLog> r = ParseNemoLog(text, "v.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 3u);
  EXPECT_EQ(r->evals[0].step, 2);
  EXPECT_EQ(r->evals[0].value, 2.75);
  EXPECT_EQ(r->evals[0].line, 5);
  EXPECT_EQ(r->evals[1].step, 3);
  EXPECT_EQ(r->evals[1].value, 2.5);
  EXPECT_EQ(r->evals[2].step, 4);
  EXPECT_EQ(r->evals[2].value, 2.25);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("line 7's record spans several steps"), std::string::npos);
  EXPECT_NE(r->notes.back().find("line 1's val_loss comes from a validation before"),
            std::string::npos);
  // NeMo 1 bars: `val_loss=` changes between the drawings of steps 10 and 11: the second is
  // the redraw after step 11's validation.
  auto bar = [](int global_step, const char* val) {
    return fmt::format(
        "Epoch 0: : 10%| | {}/100 [00:10<01:30, v_num=, reduced_train_loss=2.000, "
        "global_step={}.0, val_loss={}]\n",
        global_step + 1, global_step, val);
  };
  r = ParseNemoLog(bar(9, "2.500") + bar(10, "2.250"), "bars.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 11);  // Lightning redraws the bar after the step's validation
  EXPECT_EQ(r->evals[0].value, 2.25);
  // Only a value the first record carries: no evaluation, a note.
  r = ParseNemoLog(line(4, 2.0, 2.5), "one.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->evals.empty());
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0],
            "one.log:1: val_loss (the last validation's value, carried on the training lines) "
            "comes from a validation before the log's first record: not read as an evaluation");
}

TEST(Nemo, LineWrappedAfterItsPipes) {
  // A page broke the line after ` | ` (the pieces end with `|`, which a ProgressPrinter line
  // never does): joined; `auto` knows the first piece by its `lr` field.
  const std::string text =
      "Training epoch 0, iteration 150/999 | lr: 3.014e-06 | \n"
      "global_batch_size: 4 | reduced_train_loss: 11.28 | \n"
      "train_step_timing in s: 0.3217 | consumed_samples: 604\n"
      "[NeMo I 2025-01-01 00:00:00 nemo_logging:393] done: 1\n";
  Result<ParsedLog> r = FindLogParser("auto")->parse(text, "w.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "nemo");
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].step, 151);  // iteration 150: no global_step on the line
  EXPECT_EQ(r->iterations[0].loss, 11.28);
  EXPECT_EQ(r->iterations[0].ms, 321.7);
  EXPECT_EQ(r->iterations[0].samples, 4.0);
  EXPECT_EQ(r->iterations[0].lr, 3.014e-06);
  // A field of a continuation that does not parse names its line.
  r = ParseNemoLog(
      "Training epoch 0, iteration 1/9 | lr: 1e-05\n| reduced_train_loss: x | global_step: 1\n",
      "bad.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "bad.log:2: 'reduced_train_loss' is 'x', not a number");
}

TEST(Nemo, StartUpLinesStateTheLayout) {
  // Lines of a NeMo 2 DiT mock run on 2 GPUs (a NeMo README, mock_dit config: micro batch 1,
  // global batch 8, TP/PP/CP 1): data parallel group [0, 1] -> dp 2, tensor and pipeline groups
  // of one rank, 4 micro-batches (8 / (1 x 2)), Lightning's MEMBER 1/2 -> 2 devices.
  const std::string text =
      "    [NeMo I 2024-11-14 19:42:15 megatron_init:396] Rank 0 has data parallel group : [0, "
      "1]\n"
      "    [NeMo I 2024-11-14 19:42:15 megatron_init:439] Rank 0 has tensor model parallel group: "
      "[0]\n"
      "    [NeMo I 2024-11-14 19:42:15 megatron_init:464] Rank 0 has pipeline model parallel "
      "group: [0]\n"
      "    Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
      "    Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n"
      "    [NeMo I 2024-11-14 19:42:16 num_microbatches_calculator:218] setting number of "
      "microbatches to constant 4\n"
      "    Training epoch 0, iteration 0/49999999 | lr: 0.0001 | global_batch_size: 8 | "
      "global_step: 0 | reduced_train_loss: 0.5288 | train_step_timing in s: 4.022\n";
  Result<ParsedLog> r = ParseNemoLog(text, "dit.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->facts.at("dp").value, 2);
  EXPECT_EQ(r->facts.at("dp").line, 1);
  EXPECT_EQ(r->facts.at("tp").value, 1);
  EXPECT_EQ(r->facts.at("pp").value, 1);
  EXPECT_EQ(r->facts.at("devices").value, 2);
  EXPECT_EQ(r->facts.at("devices").line, 4);
  EXPECT_EQ(r->facts.at("gas").value, 4);
}

TEST(Nemo, RunTableOfAFineTuningRecipe) {
  // NeMo-Run's table for a fine-tuning recipe (shape as `nemo llm finetune --factory ...` prints
  // it): SquadDataModule's seq_length is its longest sample, not every sample's: not read, a
  // note. The strategy's tp 2 differs from megatron_init's group before it (line 1: kept).
  // A cut cell's open quote ('MODEL_…) does not swallow the rows after it.
  const std::string text =
      "[NeMo I 2025-06-01 10:00:00 megatron_init:449] Rank 0 has tensor model parallel group: "
      "[0]\n"
      "Dry run for task nemo.collections.llm.api:finetune\n"
      "Resolved Arguments\n"
      "┏━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓\n"
      "┃ Argument Name ┃ Resolved Value                                 ┃\n"
      "┡━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩\n"
      "│ data    │ SquadDataModule(seq_length=2048, micro_batch_size=1, │\n"
      "│         │ global_batch_size=128)                           │\n"
      "│ trainer │ Trainer(                                         │\n"
      "│         │   strategy=MegatronStrategy(                     │\n"
      "│         │     sharding='MODEL_AND_OPTIMIZER_…              │\n"
      "│         │     tensor_model_parallel_size=2,                │\n"
      "│         │     pipeline_model_parallel_size=1),             │\n"
      "│         │   plugins=MegatronMixedPrecision(precision='16-mixed'))│\n"
      "└─────────┴──────────────────────────────────────────────────┘\n"
      "Training epoch 0, iteration 0/9 | lr: 1e-05 | global_batch_size: 128 | global_step: 0 | "
      "reduced_train_loss: 2.1 | train_step_timing in s: 3.5\n";
  Result<ParsedLog> r = ParseNemoLog(text, "ft.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->facts.contains("mpe"));
  EXPECT_EQ(r->facts.at("lbs").value, 1);  // line 7
  EXPECT_EQ(r->facts.at("lbs").line, 7);
  EXPECT_EQ(r->facts.at("gbs").value, 128);  // line 8
  EXPECT_EQ(r->facts.at("tp").value, 1);     // megatron_init's, line 1
  EXPECT_EQ(r->facts.at("pp").value, 1);     // line 13
  EXPECT_EQ(r->facts.at("pp").line, 13);
  EXPECT_EQ(r->precision, "fp16");  // line 14, '16-mixed'
  EXPECT_EQ(r->precision_line, 14);
  const auto noted = [&](std::string_view part) {
    return std::any_of(r->notes.begin(), r->notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(noted("mpe: ft.log:7 data.seq_length 2048 is SquadDataModule's longest sample"));
  EXPECT_TRUE(
      noted("tp: ft.log:1 says 1, NeMo-Run's argument table ft.log:12 says 2 "
            "(trainer.strategy.tensor_model_parallel_size): 1 kept"));

  // This fuzzing round (nemo2_run_table_mock_negative_step_time.log, the data module's name with a
  // byte that is no UTF-8, reduced): the note held the raw bytes, and writing metrics.json threw
  // nlohmann's type_error 316.
  std::string garbled = text;
  garbled.replace(garbled.find("SquadDataModule"), 5, "Sq\xb1");
  r = ParseNemoLog(garbled, "ft.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NO_THROW(nlohmann::json(r->notes).dump());
  EXPECT_TRUE(
      noted("data.seq_length 2048 is Sq\xef\xbf\xbd"
            "DataModule's longest sample"));
}

TEST(Nemo, AutomodelMalformedAndCutLines) {
  // NeMo Automodel's log_train_metrics line: a field that does not parse names the line.
  constexpr std::string_view kLine =
      "2026-08-10 15:55:20 | INFO | root | step 9 | epoch 0 | loss 0.6974 | grad_norm 1.5436 | "
      "lr 1.00e-05 | mem 24.90 GiB | tps 11278.56(1409.82/gpu) | num_label_tokens 21541\n";
  Result<ParsedLog> r = ParseNemoLog(
      std::string(kLine) +
          "2026-08-10 15:55:23 | INFO | root | step 10 | epoch 0 | loss nan? | grad_norm 1.5 | "
          "lr 1.00e-05 | mem 29.67 GiB | tps 13746.23(1718.28/gpu) | num_label_tokens 29550\n",
      "x.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "x.log:2: NeMo Automodel's 'loss' is 'nan?', not a number");
  r = ParseNemoLog(
      "2026-08-10 15:55:23 | INFO | root | step 10 | epoch 0 | loss 0.8534 | grad_norm 1.5 | "
      "lr 1.00e-05 | mem 29.67 MiB | tps 13746.23(1718.28/gpu) | num_label_tokens 29550\n",
      "x.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "x.log:1: NeMo Automodel's 'mem' is '29.67 MiB', not a number");
  // A cut-off last line: its unterminated field (tps) is left out, the rest read; step 9 is
  // 0-based (Automodel since October 2025): step 10.
  r = ParseNemoLog(std::string(kLine) +
                       "2026-08-10 15:55:23 | INFO | root | step 10 | epoch 0 | loss 0.8534 | "
                       "grad_norm 1.5040 | lr 1.00e-05 | mem 29.67 GiB | tps 13746.2",
                   "x.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 10);
  EXPECT_EQ(r->iterations[0].tokens_per_s, 11278.56);
  EXPECT_EQ(r->iterations[1].step, 11);
  EXPECT_EQ(r->iterations[1].loss, 0.8534);
  EXPECT_FALSE(r->iterations[1].tokens_per_s);
  EXPECT_EQ(r->peak_memory_bytes, 29.67 * 1024 * 1024 * 1024);
}

TEST(Nemo, AutomodelAndProgressPrinterRecordsInOneLogAreRefused) {
  // Automodel numbers its steps its own way (micro-batches before August 2025): beside a NeMo 2
  // ProgressPrinter line (BioNeMo's ESM-2 log) its records made steps 4, 1, 2 (found by
  // logparse_mutation_test). Two runs' lines: refused at the later kind's first line.
  constexpr std::string_view kAutomodel =
      "INFO:root:step 4 | epoch 0 | loss 1.5514 | grad_norm 102.0000 | mem: 11.66 GiB | tps "
      "6924.50\n"
      "INFO:root:step 8 | epoch 0 | loss 0.7913 | grad_norm 46.2500 | mem: 14.58 GiB | tps "
      "9328.79\n";
  constexpr std::string_view kPrinter =
      " 0: Training epoch 0, iteration 28/99 | lr: 5.6e-06 | global_batch_size: 32 | "
      "global_step: 28 | reduced_train_loss: 2.778 | train_step_timing in s: 0.189 | "
      "consumed_samples: 928 | val_loss: 2.861 | val_ppl: 17.57\n";
  Result<ParsedLog> r = ParseNemoLog(std::string(kAutomodel) + std::string(kPrinter), "x.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "x.log:3: a NeMo 2 / NeMo 1 record in a log whose line 1 is a NeMo Automodel record: "
            "two trainers' steps in one log are not one run; give each run its own log");
  r = ParseNemoLog(std::string(kPrinter) + std::string(kAutomodel), "x.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "x.log:2: a NeMo Automodel record in a log whose line 1 is a NeMo 2 / NeMo 1 record: "
            "two trainers' steps in one log are not one run; give each run its own log");
  // Each alone is read.
  EXPECT_TRUE(ParseNemoLog(kAutomodel, "x.log").ok());
  EXPECT_TRUE(ParseNemoLog(kPrinter, "x.log").ok());
}

TEST(Nemo, AutomodelValidationLineShapes) {
  // `[val] step N` (train_ft before November 2025, the VLM recipes) and `[val] NAME | step N`
  // (the KD recipes) are evaluations like `[val] name "NAME" | step N`, never training records.
  // The first validation set's lines are read.
  Result<ParsedLog> r = ParseNemoLog(
      "2026-08-10 15:55:20 | INFO | root | step 9 | epoch 0 | loss 0.6974 | grad_norm 1.5436 | "
      "lr 1.00e-05 | mem 24.90 GiB | tps 11278.56(1409.82/gpu) | num_label_tokens 21541\n"
      "2026-08-10 15:55:21 | INFO | root | [val] step 9 | epoch 0 | loss 0.7012 | lr 1.00e-05 | "
      "num_label_tokens 12345\n"
      "2026-08-10 15:55:23 | INFO | root | step 10 | epoch 0 | loss 0.8534 | grad_norm 1.5040 | "
      "lr 1.00e-05 | mem 29.67 GiB | tps 13746.23(1718.28/gpu) | num_label_tokens 29550\n",
      "x.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[1].step, 11);
  EXPECT_EQ(r->iterations[1].loss, 0.8534);
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 10);
  EXPECT_EQ(r->evals[0].value, 0.7012);
  r = ParseNemoLog(
      "step 19 | epoch 0 | loss 2.1000 | ce_loss 2.3000 | kd_loss 1.9000 | grad_norm 0.5000 | lr "
      "1.00e-05 | mem 30.00 GiB | tps 1000.00(125.00/gpu) | num_label_tokens 4096\n"
      "[val] squad | step 19 | epoch 0 | loss 2.0500 | kd_loss 1.8000 | lr 1.00e-05 | "
      "num_label_tokens 2048\n"
      "[val] hellaswag | step 19 | epoch 0 | loss 3.0000 | kd_loss 2.0000 | lr 1.00e-05 | "
      "num_label_tokens 2048\n",
      "kd.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].loss, 2.1);  // `loss`, not `ce_loss` or `kd_loss`
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 20);
  EXPECT_EQ(r->evals[0].value, 2.05);
  EXPECT_EQ(r->eval_what, "NeMo Automodel '[val] ... | loss X' (validation set \"squad\")");
  // This fuzzing round (nemo_automodel_mi355x_expected_output.log, a byte of the set's name that
  // is no UTF-8, reduced): the label held the name's raw bytes, and writing metrics.json (its
  // eval.task) threw nlohmann's type_error 316.
  r = ParseNemoLog(
      "step 5  | epoch 0 | loss 1.5928 | grad_norm 24.2663 | mem 5.10 GiB | tps "
      "2807.56(350.95/gpu)\n"
      "[val] name \"d\xb1"
      "fault\" | step 9  | epoch 0 | loss 1.7634\n",
      "x.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NO_THROW(nlohmann::json(r->eval_what).dump());
  EXPECT_EQ(r->eval_what,
            "NeMo Automodel '[val] ... | loss X' (validation set \"d\xef\xbf\xbd"
            "fault\")");
  // A single `mem:` line (Automodel before August 2025, micro-batch steps counted from 1): the
  // spacing of the lines is unknown, the printed step is read, with a note saying so.
  r = ParseNemoLog(
      "INFO:root:step 8 | epoch 0 | loss 0.7913 | grad_norm 46.2500 | mem: 14.58 GiB | tps "
      "9328.79\n",
      "one.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].step, 8);
  EXPECT_EQ(r->peak_memory_bytes, 14.58 * 1024 * 1024 * 1024);
  EXPECT_NE(r->notes.back().find("has one line only"), std::string::npos);
  // The agent SFT guide's `tps 210.68/gpu` (docs/guides/llm/agent-sft.mdx, August 2026): the
  // per-GPU figure alone, no total rate to read; the rest of the line is read.
  r = ParseNemoLog(
      "step  0 | epoch 0 | loss 1.2708 | grad_norm 3.0633 | lr 4.00e-06 | mem 34.45 GiB | tps "
      "210.68/gpu  | num_label_tokens 4707\n",
      "agent.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].step, 1);
  EXPECT_EQ(r->iterations[0].loss, 1.2708);
  EXPECT_FALSE(r->iterations[0].tokens_per_s);
}

TEST(Nemo, Nemo1BarsCutAndMalformed) {
  // NeMo 1's Lightning bar, one drawing per step (\r-separated), the last cut before its `]`.
  const std::string bar =
      "Epoch 1:  10%|#  | 3/30 [00:09<01:21, v_num=, reduced_train_loss=2.500, global_step=32.00, "
      "consumed_samples=528.0, train_step_timing in s=3.000]";
  Result<ParsedLog> r =
      ParseNemoLog(bar +
                       "\rEpoch 1:  13%|#  | 4/30 [00:12<01:18, v_num=, reduced_train_loss=2.250, "
                       "global_step=33.00, consumed_samples=544.0, train_step_timing in s=3.",
                   "bars.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 33);  // global_step 32 is 0-based
  EXPECT_EQ(r->iterations[0].ms, 3000.0);
  EXPECT_EQ(r->iterations[1].step, 34);
  EXPECT_EQ(r->iterations[1].span, 1);
  EXPECT_EQ(r->iterations[1].loss, 2.25);
  EXPECT_EQ(r->iterations[1].samples, 16.0);  // (544 - 528) / 1
  EXPECT_FALSE(r->iterations[1].ms);          // cut: "train_step_timing in s=3."
  // Drawings pasted with their carriage returns as the text "^M": each read.
  r = ParseNemoLog(bar + "^M" + bar.substr(0, 65) + "2.000, global_step=33.00]\n", "caret.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[1].step, 34);
  EXPECT_EQ(r->iterations[1].loss, 2.0);
  r = ParseNemoLog("x\n" + bar.substr(0, 65) + "abc, global_step=1.000]\n", "bad.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "bad.log:2: the NeMo bar's 'reduced_train_loss' is 'abc', not a number");
}

TEST(DeepSpeed, RealisticZero3Log) {
  Result<ParsedLog> r = ParseDeepSpeedLog(ReadLog("deepspeed_zero3.log"), "ds.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = *r;
  ASSERT_EQ(log.iterations.size(), 8u);
  EXPECT_EQ(At(log, 1)->loss, 10.4);
  EXPECT_EQ(At(log, 8)->loss, 7.6);
  EXPECT_DOUBLE_EQ(*At(log, 2)->lr, 2.5e-5);
  // Rank 0's timer line came first: its rates are kept.
  EXPECT_EQ(At(log, 4)->samples_per_s, 60.0);
  EXPECT_EQ(At(log, 8)->samples_per_s, 66.0);
  EXPECT_FALSE(At(log, 3)->samples_per_s);
  // skipped= is cumulative (0, 1, 1, 2).
  EXPECT_EQ(At(log, 4)->skipped, 1);
  EXPECT_EQ(At(log, 6)->skipped, 0);
  EXPECT_EQ(At(log, 8)->skipped, 1);
  ASSERT_TRUE(log.trainer_average);
  EXPECT_EQ(log.trainer_average->samples_per_s, 64.0);
  EXPECT_EQ(log.trainer_average->excluded_steps, 2);
  EXPECT_EQ(log.trainer_average->through_step, 8);
  ASSERT_TRUE(log.peak_memory_bytes);
  EXPECT_EQ(*log.peak_memory_bytes, 31.25 * 1073741824.0);
  EXPECT_EQ(FactOf(log, "gbs"), 32);
  EXPECT_EQ(FactOf(log, "lbs"), 4);
  EXPECT_EQ(FactOf(log, "gas"), 1);
  EXPECT_EQ(FactOf(log, "dp"), 8);
  EXPECT_EQ(log.precision, "bf16");
}

// The Hugging Face Trainer's dicts carry no step: numbered from DeepSpeed's
// last step line (printed before the Trainer logs that step), every
// logging_steps; the closing summary and evaluation dicts are not losses.
TEST(DeepSpeed, TrainerDictsTakeTheirStepsFromDeepSpeedsLines) {
  Result<ParsedLog> r = ParseDeepSpeedLog(
      "{'loss': 3.0, 'learning_rate': 1e-06, 'epoch': 0.0}\n"
      "{'loss': 2.9, 'grad_norm': 1.5, 'learning_rate': 2e-06, 'epoch': 0.0}\n"
      "[2024-03-01 09:03:21,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, "
      "lr=[3e-06], mom=[(0.9, 0.999)]\n"
      "{'loss': 2.5, 'learning_rate': 3e-06, 'epoch': 0.01}\n"
      "{'eval_loss': 2.4, 'epoch': 0.01}\n"
      "{'loss': 2.25, 'learning_rate': 4e-06, 'epoch': 0.01}\n"
      "{'train_runtime': 100.0, 'train_loss': 2.6, 'epoch': 1.0}\n",
      "trainer.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(At(*r, 1)->loss, 3.0);
  EXPECT_EQ(At(*r, 2)->loss, 2.9);
  EXPECT_EQ(At(*r, 2)->grad_norm, 1.5);
  EXPECT_EQ(At(*r, 10)->loss, 2.5);
  EXPECT_DOUBLE_EQ(*At(*r, 10)->lr, 3e-6);
  EXPECT_EQ(At(*r, 11)->loss, 2.25);
  EXPECT_DOUBLE_EQ(*At(*r, 11)->lr, 4e-6);
  // logging_steps 5: the dicts are steps 5, 10, then 15 after DeepSpeed's step=12 line.
  r = ParseDeepSpeedLog(
      "  --logging_steps 5 --bf16 True\n"
      "{'loss': 3.0, 'learning_rate': 1e-06, 'epoch': 0.0}\n"
      "{'loss': 2.9, 'learning_rate': 2e-06, 'epoch': 0.0}\n"
      "step=12, skipped=0, lr=[3e-06]\n"
      "{'loss': 2.5, 'learning_rate': 3e-06, 'epoch': 0.01}\n",
      "every5.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(At(*r, 5)->loss, 3.0);
  EXPECT_EQ(At(*r, 10)->loss, 2.9);
  EXPECT_FALSE(At(*r, 12)->loss);
  EXPECT_EQ(At(*r, 15)->loss, 2.5);
}

TEST(DeepSpeed, LossLineShapes) {
  Result<ParsedLog> r = ParseDeepSpeedLog(
      "step=1, loss=2.5\n"
      "global_step: 2 | train loss: 2.25\n"
      "{'loss': 2.0, 'step': 3}\n"
      "micro_step=7 loss=9.9\n"  // micro_step is not the step: no record
      "epoch 0 step 4/10 Loss: tensor(1.75, device='cuda:0')\n",
      "shapes.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(At(*r, 1)->loss, 2.5);
  EXPECT_EQ(At(*r, 2)->loss, 2.25);
  EXPECT_EQ(At(*r, 3)->loss, 2.0);
  EXPECT_EQ(At(*r, 4)->loss, 1.75);
  EXPECT_FALSE(At(*r, 7));

  // A step-less loss after the engine's line is that step's ("[Rank 0] Loss:", HelloDeepSpeed),
  // unless a bracket of counters precedes it (the CIFAR tutorial's "[epoch, batch] loss:").
  r = ParseDeepSpeedLog(
      "[Rank 0] step=10, skipped=0, lr=[0.001]\n[2,  3000] loss: 1.203\n"
      "[Rank 0] step=20, skipped=0, lr=[0.001]\n[Rank 0] Loss: 1.1\n",
      "stepless.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(At(*r, 10)->loss);
  EXPECT_EQ(At(*r, 20)->loss, 1.1);

  r = ParseDeepSpeedLog("[INFO] DeepSpeed info: version=0.13.1\n", "none.log");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("none.log: no DeepSpeed step lines"), std::string::npos);
}

TEST(DeepSpeed, StepZeroSecondEngineAndEvaluationLoss) {
  Result<ParsedLog> r = ParseDeepSpeedLog(
      "[Rank 0] step=0, skipped=0, lr=[5e-05]\n"                   // start-up: no record
      "chosen: 0.0, rejected: 0.0, loss: 0.69\n"                   // an evaluation: no loss
      "[Rank 0] step=10, skipped=4, lr=[1e-05]\n"                  // actor
      "[Rank 0] step=10, skipped=3, lr=[2e-05]\n"                  // critic: left out
      "epoch: 0|step: 10|ppo_ep: 1|act_loss: 0.2|cri_loss: 0.1\n"  // PPO: left out
      "[Rank 0] Loss: 2.5\n"                                       // the first key: step 10's
      "[Rank 0] step=20, skipped=5, lr=[1e-05]\n"
      "[Rank 0] step=20, skipped=3, lr=[2e-05]\n",
      "ppo.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(At(*r, 10)->skipped, 4);
  EXPECT_EQ(At(*r, 10)->lr, 1e-05);
  EXPECT_EQ(At(*r, 10)->loss, 2.5);
  EXPECT_EQ(At(*r, 20)->skipped, 1);
  EXPECT_FALSE(At(*r, 20)->loss);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0].rfind("ppo.log:5: DeepSpeed-Chat PPO lines", 0), 0u) << r->notes[0];

  // Only a step-0 line and an evaluation print: no record, the usual error.
  r = ParseDeepSpeedLog(
      "[Rank 0] step=0, skipped=0, lr=[5e-05]\nchosen: 0.0, rejected: 0.0, loss: 0.69\n",
      "start.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("start.log: no DeepSpeed step lines", 0), 0u)
      << r.status().message();
}

TEST(DeepSpeed, ValidationAndNamespacedLossesAreNoTrainingLosses) {
  Result<ParsedLog> r = ParseDeepSpeedLog(
      "[Rank 0] step=10, skipped=0, lr=[1e-05]\n"
      "[Rank 0] Validation Loss: 3.1\n"               // step-less, but an evaluation's
      "step:10 - critic/loss:0.9 - actor/loss:0.4\n"  // namespaced: another objective's
      "eval step 20, loss: 2.9\n"                     // an evaluation at a step
      "[Rank 0] step=20, skipped=0, lr=[1e-05]\n"
      "step 20 loss: 2.5\n"
      "step:30 - val/loss:2.4\n"     // veRL's validation line: no record
      "step:30 - train/loss:2.3\n",  // the training loss's own namespace
      "val.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 3u);
  EXPECT_FALSE(At(*r, 10)->loss);
  EXPECT_EQ(At(*r, 20)->loss, 2.5);
  EXPECT_EQ(At(*r, 30)->loss, 2.3);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0].rfind("val.log:4: loss lines of an evaluation", 0), 0u) << r->notes[0];
}

TEST(LineScan, KeysAreWholeNames) {
  EXPECT_EQ(NumberAfter("actor/kl_loss:0.0 - loss: 2.5", "loss", ":"), 2.5);
  EXPECT_FALSE(NumberAfter("actor/pg_loss:0.1 - actor/loss:0.2", "loss", ":"));
  // A '/' after a value separates two names (DeepSpeed's timer line).
  EXPECT_EQ(NumberAfter("epoch=0/micro_step=20/global_step=10, x=1", "global_step", "="), 10);
  EXPECT_EQ(NumberAfter("'loss': 1.5", "loss", ":"), 1.5);
}

TEST(DeepSpeed, PipelineEngineLinesAlone) {
  // DeepSpeed >= 0.17 logs at WARNING: a pipeline run shows only PipelineEngine's print()
  // (deepspeed/runtime/pipe/engine.py train_batch, with 2024's further losses before "iter
  // time"), no `step=` lines.
  const std::string log =
      "steps: 10 loss: 2.3026 moe_loss: 0.0100 iter time (s): 0.500 samples/sec: 512.000\n"
      "steps: 20 loss: 2.1000 moe_loss: 0.0090 iter time (s): 0.400 samples/sec: 640.000\n"
      "the steps: 30 are done\n";
  std::optional<Detected> d = DetectLogFormat(log);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->format, "deepspeed");
  Result<ParsedLog> r = ParseDeepSpeedLog(log, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 10);
  EXPECT_EQ(r->iterations[0].span, 10);
  EXPECT_EQ(r->iterations[0].loss, 2.3026);
  EXPECT_EQ(r->iterations[0].ms, 500.0);
  EXPECT_EQ(r->iterations[1].samples_per_s, 640.0);
  EXPECT_EQ(r->iterations[1].ms, 400.0);
}

TEST(Mllog, MlperfLogWithRankPrefixes) {
  Result<ParsedLog> r = ParseMllog(ReadLog("mllog_lora.log"), "result_0.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const ParsedLog& log = *r;
  ASSERT_EQ(log.iterations.size(), 6u);  // rank 1's copy of step 3 merged
  EXPECT_EQ(At(log, 1)->span, 1);
  EXPECT_EQ(At(log, 1)->ms, 1500.0) << "timed from run_start";
  EXPECT_EQ(At(log, 2)->ms, 1000.0);
  EXPECT_EQ(At(log, 4)->ms, 900.0);
  EXPECT_EQ(At(log, 5)->ms, 1200.0);
  EXPECT_EQ(At(log, 4)->loss, 4.8) << "train_loss wins over tracked_stats' loss";
  EXPECT_EQ(At(log, 4)->lr, 1e-4);
  EXPECT_EQ(FactOf(log, "gbs"), 8);
  EXPECT_EQ(FactOf(log, "mpe"), 512);
  EXPECT_EQ(FactOf(log, "gas"), 1);
  EXPECT_EQ(log.wall_s, 7.0);
  EXPECT_FALSE(log.peak_memory_bytes);
}

TEST(Mllog, BrokenEventInTheMiddleIsAnError) {
  std::string good =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", \"key\": "
      "\"train_loss\", \"value\": 2.0, \"metadata\": {\"step\": 1}}\n";
  Result<ParsedLog> r = ParseMllog(good + ":::MLLOG {\"key\": \n" + good, "broken.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "broken.txt:2: an :::MLLOG line that is not a JSON event");
  // Garbled the way Lambda's v4.1 results are (a text substitution inside the line), a line that
  // names a key read here is an error still; one naming a key nothing reads is skipped.
  const std::string garbled_stop =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 2, \"event_type\": \"INTERVAL_END\", \"key\": "
      "\"block_stop\", \"value\": nullLambdaorkspace/x.py\", \"lineno\": 112}}\n";
  r = ParseMllog(good + garbled_stop + good, "garbled.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "garbled.txt:2: an :::MLLOG line that is not a JSON event");
  const std::string garbled_init =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 2, \"event_type\": \"INTERVAL_START\", \"key\": "
      "\"init_start\", \"value\": nullLambdaorkspace/x.py\", \"lineno\": 207}}\n";
  r = ParseMllog(good + garbled_init + good, "garbled.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n.find(
               "garbled.txt:2: 1 :::MLLOG line(s) garbled mid-log (no JSON object; the first "
               "names key \"init_start\"") != std::string::npos;
  }));
  // This fuzzing round (mllog_nv_flux1_train_loss_lr.log, a byte flipped in a key, reduced): the
  // key a garbled line names, quoted in the note, was its raw bytes, no UTF-8, and writing
  // metrics.json (which holds the notes) threw nlohmann's type_error 316.
  const std::string garbled_key =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 2, \"event_type\": \"POINT_IN_TIME\", \"key\": "
      "\"e\xb1valuation_frequency\", \"value\": 262144, \"metadata\": {\"lineno\": 297}}\n";
  r = ParseMllog(good + garbled_key + good, "garbled.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NO_THROW(nlohmann::json(r->notes).dump());
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n.find("the first names key \"e\xef\xbf\xbdvaluation_frequency\"") != std::string::npos;
  }));
  r = ParseMllog(":::MLLOG {\"namespace\": \"\", \"key\": \"run_start\", \"value\": null}\n",
                 "no_loss.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no MLPerf train_loss, tracked_stats or block_stop events"),
            std::string::npos);
  EXPECT_EQ(r.status().message().find("never started"), std::string::npos) << "it did start";
  // Cut off before run_start (as a v2.1 DLRM result is, after its hyperparameters): it says so.
  r = ParseMllog(
      ":::MLLOG {\"namespace\": \"\", \"key\": \"submission_benchmark\", \"value\": \"dlrm\"}\n"
      ":::MLLOG {\"namespace\": \"\", \"key\": \"global_batch_size\", \"value\": 55296}\n",
      "cut.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "cut.txt: no MLPerf train_loss, tracked_stats or block_stop events (':::MLLOG {... "
            "\"key\": \"train_loss\" ...}') in 2 lines (2 :::MLLOG events); nor run_start or any "
            "evaluation: the run never started (the log is cut off, or the job failed while "
            "setting up)");
}

TEST(Mllog, PackedBertSaysWhatIsMissing) {
  // MLPerf Training v5.0 BERT, Dell (lines 76, 2081, 2088-2091 of
  // Dell/results/XE9680x8H200-SXM-141GB/bert/result_0.txt): packed samples, one block for the
  // epoch, throughput-only tracked_stats, evaluations at epoch_num = samples (150053 / 768 is no
  // step). Not a GPT-3 log: the error says what is missing, not that tokens would not divide.
  const std::string text =
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746142761526, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"global_batch_size\", \"value\": 768, \"metadata\": {\"file\": "
      "\"/workspace/bert/run_pretraining.py\", \"lineno\": 1281}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746142778073, \"event_type\": "
      "\"INTERVAL_START\", \"key\": \"block_start\", \"value\": null, \"metadata\": {\"file\": "
      "\"/workspace/bert/run_pretraining.py\", \"lineno\": 1641, \"first_epoch_num\": 1, "
      "\"epoch_count\": 1}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746142796371, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"tracked_stats\", \"value\": {\"throughput\": "
      "8200.513887452538}, \"metadata\": {\"file\": \"/workspace/bert/run_pretraining.py\", "
      "\"lineno\": 1850, \"epoch_num\": 150053}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746142796372, \"event_type\": "
      "\"INTERVAL_START\", \"key\": \"eval_start\", \"value\": 150053, \"metadata\": {\"file\": "
      "\"/workspace/bert/run_pretraining.py\", \"lineno\": 1856, \"epoch_num\": 150053}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746142799100, \"event_type\": "
      "\"INTERVAL_END\", \"key\": \"eval_stop\", \"value\": 150053, \"metadata\": {\"file\": "
      "\"/workspace/bert/run_pretraining.py\", \"lineno\": 1862, \"epoch_num\": 150053}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746142799101, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"eval_accuracy\", \"value\": 0.3784697651863098, \"metadata\": "
      "{\"file\": \"/workspace/bert/run_pretraining.py\", \"lineno\": 1866, \"epoch_num\": "
      "150053}}\n";
  Result<ParsedLog> r = ParseMllog(text, "bert.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "bert.txt:2: no training step: no train_loss events, none of the 1 tracked_stats "
            "events holds a training loss, lr, grad_norm or step time, and the blocks name "
            "first_epoch_num/epoch_count (epochs) but no samples_count or step; the "
            "eval_accuracy events' epoch_num (150053 at line 6) is not a multiple of "
            "global_batch_size 768 (an epoch, or packed or variable-size samples), so it places "
            "no step either");
}

TEST(Mllog, RunStartWithoutRunStopSaysSo) {
  // MLPerf Training v5.1 llama2_70b_lora, Dell (lines 974-977 of
  // Dell/results/1xXE9780x8B200-SXM-180GB/llama2_70b_lora/result_0.txt): the run was killed at
  // step 80 (SIGTERM), with no run_stop. Its steps are read (10 and 20, from metadata.step: no
  // global_batch_size in these lines), and no time to train.
  const std::string text =
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1759883447028, \"event_type\": "
      "\"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {\"file\": "
      "\"/usr/local/lib/python3.12/dist-packages/mlperf_common/callbacks/logging.py\", "
      "\"lineno\": 83}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1759883447028, \"event_type\": "
      "\"INTERVAL_START\", \"key\": \"block_start\", \"value\": null, \"metadata\": {\"file\": "
      "\"/usr/local/lib/python3.12/dist-packages/mlperf_common/callbacks/logging.py\", "
      "\"lineno\": 185, \"samples_count\": 1536, \"step\": 0}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1759883459756, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"tracked_stats\", \"value\": {\"train_loss\": "
      "1.8403122425079346}, \"metadata\": {\"file\": \"/workspace/ft-llm/custom_callbacks.py\", "
      "\"lineno\": 273, \"samples_count\": 80, \"lr\": 0.0005497879849661988, \"step\": 10}}\n"
      "0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1759883472631, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"tracked_stats\", \"value\": {\"train_loss\": "
      "1.4662407636642456}, \"metadata\": {\"file\": \"/workspace/ft-llm/custom_callbacks.py\", "
      "\"lineno\": 273, \"samples_count\": 160, \"lr\": 0.0005491522667766103, \"step\": 20}}\n";
  Result<ParsedLog> r = ParseMllog(text, "killed.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 10);
  EXPECT_DOUBLE_EQ(*r->iterations[0].ms, (1759883459756.0 - 1759883447028.0) / 10);
  EXPECT_EQ(r->iterations[1].lr, 0.0005491522667766103);
  EXPECT_FALSE(r->wall_s);
  EXPECT_NE(std::find(r->notes.begin(), r->notes.end(),
                      "killed.txt:1: run_start but no run_stop: the run did not finish (killed, "
                      "crashed, or the log is cut off), so the log gives no time to train"),
            r->notes.end());
}

TEST(Mllog, TrainStepTimeAtAnEpochFractionIsNoStep) {
  // MLPerf Training v6.0 dlrm_dcnv2, NVIDIA HugeCTR (lines 15, 30-32, 126-127 of
  // NVIDIA/results/theia_ngpu64_ngc26.03_hugectr/dlrm_dcnv2/result_0.txt): after run_stop,
  // on_training_end logs the run's mean step time at "step" = current_iter / iter_per_epoch. It is
  // no step: the block (step 0 to 1550) times the run.
  const std::string text =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1778684292795, "
      "\"event_type\": \"POINT_IN_TIME\", \"key\": \"global_batch_size\", \"value\": 135168, "
      "\"metadata\": {\"file\": \"/workspace/dlrm/mlperf_logger/param_info.py\", "
      "\"lineno\": 31}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1778684317777, "
      "\"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, "
      "\"metadata\": {\"file\": \"/workspace/dlrm/mlperf_logger/callbacks.py\", "
      "\"lineno\": 51}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1778684317777, "
      "\"event_type\": \"INTERVAL_START\", \"key\": \"block_start\", \"value\": null, "
      "\"metadata\": {\"file\": \"/workspace/dlrm/mlperf_logger/callbacks.py\", "
      "\"lineno\": 52, \"samples_count\": 209760460, \"step\": 0}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1778684319817, "
      "\"event_type\": \"INTERVAL_END\", \"key\": \"block_stop\", \"value\": null, "
      "\"metadata\": {\"file\": \"/workspace/dlrm/mlperf_logger/callbacks.py\", "
      "\"lineno\": 85, \"samples_count\": 209760460, \"step\": 1550}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1778684359365, "
      "\"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", \"value\": null, "
      "\"metadata\": {\"file\": \"/workspace/dlrm/mlperf_logger/callbacks.py\", "
      "\"lineno\": 112, \"status\": \"success\", \"epoch_num\": 0.9494474337081548}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1778684359365, "
      "\"event_type\": \"POINT_IN_TIME\", \"key\": \"tracked_stats\", "
      "\"value\": {\"train_step_time\": 0.001413863189731249}, "
      "\"metadata\": {\"file\": \"/workspace/dlrm/mlperf_logger/callbacks.py\", "
      "\"lineno\": 78, \"step\": 0.9494474337081548}}\n";
  Result<ParsedLog> r = ParseMllog(text, "dlrm.txt");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].step, 1550);
  EXPECT_EQ(r->iterations[0].span, 1550);
  EXPECT_DOUBLE_EQ(*r->iterations[0].ms, (1778684319817.0 - 1778684317777.0) / 1550);
  EXPECT_DOUBLE_EQ(*r->wall_s, (1778684359365.0 - 1778684317777.0) / 1000);
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n.find(
               "dlrm.txt:6: a tracked_stats train_step_time (0.00141386 s) at a fractional "
               "\"step\"") != std::string::npos;
  }));
}

TEST(Mllog, EpochTimedLogSaysItsEpochsPlaceNoStep) {
  // MLPerf Training v5.0 retinanet, tinycorp (tinygrad; lines 11, 22-24, 26-27 of
  // tinycorp/results/tinybox_green/retinanet/result_0.txt): training timed by epoch_start and
  // epoch_stop at epoch_num, no training statistics, no blocks.
  const std::string text =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745598088273, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"global_batch_size\", \"value\": 96, \"metadata\": {\"file\": "
      "\"tinygrad/examples/mlperf/model_train.py\", \"lineno\": 504}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745598144406, \"event_type\": "
      "\"INTERVAL_START\", \"key\": \"epoch_start\", \"value\": 1, \"metadata\": {\"file\": "
      "\"tinygrad/examples/mlperf/model_train.py\", \"lineno\": 527, \"epoch_num\": 1}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745605078062, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"epoch_stop\", \"value\": 1, \"metadata\": {\"file\": "
      "\"tinygrad/examples/mlperf/model_train.py\", \"lineno\": 598, \"epoch_num\": 1}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745605078063, \"event_type\": "
      "\"INTERVAL_START\", \"key\": \"eval_start\", \"value\": 1, \"metadata\": {\"file\": "
      "\"tinygrad/examples/mlperf/model_train.py\", \"lineno\": 603, \"epoch_num\": 1}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745610378469, \"event_type\": "
      "\"POINT_IN_TIME\", \"key\": \"eval_accuracy\", \"value\": 0.2608930553164607, "
      "\"metadata\": {\"file\": \"tinygrad/examples/mlperf/model_train.py\", \"lineno\": 679, "
      "\"epoch_num\": 1}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1745610378469, \"event_type\": "
      "\"INTERVAL_END\", \"key\": \"eval_stop\", \"value\": 1, \"metadata\": {\"file\": "
      "\"tinygrad/examples/mlperf/model_train.py\", \"lineno\": 680, \"epoch_num\": 1}}\n";
  Result<ParsedLog> r = ParseMllog(text, "retinanet.txt");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "retinanet.txt: no MLPerf train_loss, tracked_stats or block_stop events (':::MLLOG "
            "{... \"key\": \"train_loss\" ...}') in 6 lines (6 :::MLLOG events); its 1 epoch_stop "
            "event(s) (the first at line 3) time whole epochs by epoch_num and place no step");
}

TEST(Mllog, PrimusTrainLossCountsTheSamplesBeforeItsStep) {
  // The MLPerf reference for small_llm_moe_pretraining (gpt-oss-20B on Primus, mlcommons/training
  // @ aa344c7 small_llm_moe_pretraining/primus/rcp_logs/gbs32/run_0.log, lines 17 and 425-434):
  // primus_mllog logs train_loss from inside train_step, so its samples_count is the samples
  // before the step (12256 for the 384th step of 32). The block of 384 steps ends at 12288
  // (block_stop, eval_accuracy), and the next train_loss (12288) is step 385.
  const std::string text =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771599913587, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"global_batch_size\", \"value\": 32, \"metadata\": {\"file\": \""
      "/opt/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\", \"line"
      "no\": 49}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601025437, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"train_loss\", \"value\": 5.2799577713012695, \"metadata\": {\"f"
      "ile\": \"/opt/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py"
      "\", \"lineno\": 214, \"samples_count\": 12192, \"lr\": 0.0007999999159488634}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601028535, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"train_loss\", \"value\": 5.302831649780273, \"metadata\": {\"fi"
      "le\": \"/opt/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\""
      ", \"lineno\": 214, \"samples_count\": 12224, \"lr\": 0.0007999999152857408}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601031678, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"train_loss\", \"value\": 5.271429538726807, \"metadata\": {\"fi"
      "le\": \"/opt/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\""
      ", \"lineno\": 214, \"samples_count\": 12256, \"lr\": 0.0007999999146200125}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601031695, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"tracked_stats\", \"value\": {\"throughput\": 10.990004890374049"
      "}, \"metadata\": {\"file\": \"/opt/venv/lib/python3.10/site-packages/primus_mllog/ml"
      "perf_pre_training.py\", \"lineno\": 226, \"step\": 12288}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601031696, \"event_type\": \"INTERVA"
      "L_END\", \"key\": \"block_stop\", \"value\": null, \"metadata\": {\"file\": \"/opt/v"
      "env/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\", \"lineno\": "
      "124, \"samples_count\": 12288}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601031696, \"event_type\": \"INTERVA"
      "L_START\", \"key\": \"eval_start\", \"value\": null, \"metadata\": {\"file\": \"/opt"
      "/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\", \"lineno\""
      ": 126, \"samples_count\": 12288}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601096086, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"eval_accuracy\", \"value\": 5.260438442230225, \"metadata\": {"
      "\"file\": \"/opt/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training."
      "py\", \"lineno\": 134, \"samples_count\": 12288}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601096086, \"event_type\": \"INTERVA"
      "L_END\", \"key\": \"eval_stop\", \"value\": null, \"metadata\": {\"file\": \"/opt/ve"
      "nv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\", \"lineno\": 1"
      "44, \"samples_count\": 12288}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601096086, \"event_type\": \"INTERVA"
      "L_START\", \"key\": \"block_start\", \"value\": null, \"metadata\": {\"file\": \"/op"
      "t/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\", \"lineno"
      "\": 148, \"samples_count\": 12288}}\n"
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1771601098806, \"event_type\": \"POINT_I"
      "N_TIME\", \"key\": \"train_loss\", \"value\": 5.328076362609863, \"metadata\": {\"fi"
      "le\": \"/opt/venv/lib/python3.10/site-packages/primus_mllog/mlperf_pre_training.py\""
      ", \"lineno\": 214, \"samples_count\": 12288, \"lr\": 0.0007999999139516785}}\n";
  Result<ParsedLog> r = ParseMllog(text, "primus.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(r->iterations[0].step, 382);  // line 2: 12192 / 32 + 1
  EXPECT_EQ(r->iterations[2].step, 384);  // line 4: 12256 / 32 + 1
  EXPECT_EQ(r->iterations[2].loss, 5.271429538726807);
  EXPECT_DOUBLE_EQ(*r->iterations[2].ms, 1771601031678.0 - 1771601028535.0);
  EXPECT_EQ(r->iterations[3].step, 385);  // line 11: 12288 / 32 + 1
  // Lines 4-11: from step 384's train_loss to step 385's, less block_stop (line 6) to the
  // block_start after the evaluation (line 10).
  EXPECT_DOUBLE_EQ(*r->iterations[3].ms,
                   (1771601098806.0 - 1771601031678.0) - (1771601096086.0 - 1771601031696.0));
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 384);  // line 8: samples_count 12288 / 32, after the step
}

TEST(FlagPerf, PerfLogEventsAndABrokenOne) {
  // driver/perf_logger.py's lines: two STEP_END events (global_steps 10, 20 of a global batch
  // of 32), an EVALUATE with eval_loss, FINISHED.
  const std::string log =
      "[PerfLog] {\"event\": \"STEP_END\", \"value\": {\"loss\": 3.5, \"global_steps\": 10, "
      "\"num_trained_samples\": 320, \"learning_rate\": 0.001, \"seq/s\": 64.0}, \"metadata\": "
      "{\"time_ms\": 1000, \"rank\": 0}}\n"
      "[PerfLog] {\"event\": \"STEP_END\", \"value\": {\"loss\": 3.25, \"global_steps\": 20, "
      "\"num_trained_samples\": 640, \"seq/s\": 80.0}, \"metadata\": {\"time_ms\": 5000}}\n"
      "[PerfLog] {\"event\": \"EVALUATE\", \"value\": {\"global_steps\": 20, \"eval_loss\": 3.1}}\n"
      "[PerfLog] {\"event\": \"FINISHED\", \"value\": {\"e2e_time\": 12.5, "
      "\"training_sequences_per_second\": 70.0}}\n";
  Result<ParsedLog> r = ParseFlagPerfLog(log, "rank0.out.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[1].step, 20);
  EXPECT_EQ(r->iterations[1].span, 10);
  EXPECT_EQ(*r->iterations[1].samples, 32);  // 640 / 20
  EXPECT_EQ(*r->iterations[1].samples_per_s, 80.0);
  EXPECT_EQ(*r->iterations[0].lr, 0.001);
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 20);
  EXPECT_EQ(*r->trainer_average->samples_per_s, 70.0);
  EXPECT_EQ(r->trainer_average->through_step, 20);
  EXPECT_EQ(*r->wall_s, 12.5);
  Result<ParsedLog> auto_read = ParseAutoLog(log, "rank0.out.log");
  ASSERT_TRUE(auto_read.ok());
  EXPECT_EQ(auto_read->format, "flagperf");
  // [PerfLog] lines around another trainer's lines (an LLM case): that trainer's steps.
  Result<ParsedLog> wrapped = ParseAutoLog(
      "[PerfLog] {\"event\": \"LAUNCH_TRAINING\", \"metadata\": {\"time_ms\": 1}}\n"
      " iteration       10/     100 | elapsed time per iteration (ms): 500.0 | global batch "
      "size:    16 | lm loss: 7.000000E+00 |\n",
      "llm.log");
  ASSERT_TRUE(wrapped.ok()) << wrapped.status().message();
  EXPECT_EQ(wrapped->format, "flagperf");
  ASSERT_EQ(wrapped->iterations.size(), 1u);
  EXPECT_EQ(*wrapped->iterations[0].loss, 7.0);
  // A broken event in the middle names its line; a last line cut off is tolerated.
  Result<ParsedLog> broken =
      ParseFlagPerfLog("[PerfLog] {\"event\": \"STEP_END\", \"value\": {\n" + log, "cut.log");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message(), "cut.log:1: a [PerfLog] line that is not a JSON event");
  EXPECT_TRUE(
      ParseFlagPerfLog(log + "[PerfLog] {\"event\": \"STEP_END\", \"val", "cut_last.log").ok());
}

TEST(FlagPerf, EvaluateWithoutValueTakesTheAccuracyOfTheStepEndJustBefore) {
  // glm's trainer: STEP_END carries the state's eval_accuracy (the last evaluation's), EVALUATE
  // follows the STEP_END of the step it evaluated at, in the same millisecond, without a value.
  const std::string step_end_20 =
      "[PerfLog] {\"event\": \"STEP_END\", \"value\": {\"loss\": 0.5, \"eval_accuracy\": 0.75, "
      "\"global_steps\": 20, \"num_trained_samples\": 640}, \"metadata\": {\"time_ms\": 9000}}\n";
  const std::string evaluate_at_9000 =
      "[PerfLog] {\"event\": \"EVALUATE\", \"metadata\": {\"time_ms\": 9000}}\n";
  Result<ParsedLog> r = ParseFlagPerfLog(step_end_20 + evaluate_at_9000, "glm.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 20);
  EXPECT_EQ(r->evals[0].value, 0.75);
  EXPECT_EQ(r->evals[0].line, 1);
  // Logged every 10 steps (log_freq 10): an evaluation at step 25 follows the STEP_END of step 20
  // seconds later; that STEP_END's accuracy is an older evaluation's: no eval.
  Result<ParsedLog> stale = ParseFlagPerfLog(
      step_end_20 + "[PerfLog] {\"event\": \"EVALUATE\", \"metadata\": {\"time_ms\": 14000}}\n",
      "glm_freq10.log");
  ASSERT_TRUE(stale.ok()) << stale.status().message();
  EXPECT_TRUE(stale->evals.empty());
  // Another event between them: no eval either.
  Result<ParsedLog> between = ParseFlagPerfLog(
      step_end_20 + "[PerfLog] {\"event\": \"STEP_BEGIN\", \"metadata\": {\"time_ms\": 9000}}\n" +
          evaluate_at_9000,
      "glm_between.log");
  ASSERT_TRUE(between.ok()) << between.status().message();
  EXPECT_TRUE(between->evals.empty());
}

TEST(LineScan, CarriageReturnsSplitALineIntoSegments) {
  std::vector<std::pair<std::string, int64_t>> seen;
  int64_t n = ForEachLine("a\n\r 10%|#| 1/9\r{'loss': 1}\r\nb\r\n\nc",
                          [&](std::string_view line, int64_t no) {
                            seen.push_back({std::string(line), no});
                          });
  EXPECT_EQ(n, 5);
  EXPECT_EQ(seen,
            (std::vector<std::pair<std::string, int64_t>>{
                {"a", 1}, {" 10%|#| 1/9", 2}, {"{'loss': 1}", 2}, {"b", 3}, {"", 4}, {"c", 5}}));
}

TEST(TrainerDicts, NumbersStringsAndOtherValues) {
  std::optional<TrainerDict> d = ParseTrainerDict(
      "  {'loss': '10.46', 'grad_norm': nan, 'learning_rate': 4.5e-05, 'x': None, 'y': [1, "
      "{'z': 2}], 'name': 'abc', \"epoch\": '0.000416'}   ");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->at("loss"), 10.46);
  EXPECT_TRUE(std::isnan(*d->at("grad_norm")));
  EXPECT_DOUBLE_EQ(*d->at("learning_rate"), 4.5e-05);
  EXPECT_FALSE(d->at("x"));
  EXPECT_FALSE(d->at("y"));
  EXPECT_FALSE(d->at("name"));
  EXPECT_DOUBLE_EQ(*d->at("epoch"), 0.000416);
  EXPECT_TRUE(ParseTrainerDict("[default0]: {'loss': 2.5}"));  // a prefix before it
  EXPECT_FALSE(ParseTrainerDict("{'loss': 2.5} trailing"));
  EXPECT_FALSE(ParseTrainerDict("{'loss': 2.5"));  // cut off
  EXPECT_FALSE(ParseTrainerDict("{loss: 2.5}"));
  // A global step over the steps' count (ms-swift) is its step; elsewhere "n/m" is no number.
  d = ParseTrainerDict(
      "{'loss': 1.0, 'global_step/max_steps': '205/270', 'ratio': '3/4', "
      "'steps[global_step/max_steps]': '60/x'}");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->at("global_step/max_steps"), 205);
  EXPECT_FALSE(d->at("ratio"));
  EXPECT_FALSE(d->at("steps[global_step/max_steps]"));
}

// transformers logs step 1 too with logging_first_step, then every logging_steps;
// before, the first dict was numbered logging_steps.
TEST(DeepSpeed, WallClockBreakdownLinesTellAutoItIsDeepSpeed) {
  // DeepSpeed 0.18.5 with wall_clock_breakdown and a training script's own loss lines, its tqdm
  // postfix glued before them (a 2026-02-10 run log, Qwen2-MoE on 4 GPUs, index id 64166517662,
  // the first training lines as the stored index shows them): no step= or timer line, so auto
  // knew the log only by the engine's `time (ms) | fwd_microstep: ...` timers.
  const std::string log =
      "Epoch 0:   0%|          | 0/743 [00:00<?, ?it/s][Rank 0] time (ms) | fwd_microstep: "
      "1136.68 | bwd_microstep: 2443.19 | bwd_inner_microstep: 2265.61 | "
      "bwd_allreduce_microstep: 177.41 | step_microstep: 0.05\n"
      "Epoch 0:   0%|          | 0/743 [00:03<?, ?it/s, loss=12.0024, global_step=1, "
      "toks/s=2480.0, gpu_util=99%, gpu_mem=10.5G, cpu_util=15%, cpu_mem=21.7G]Epoch 0, Step 0, "
      "Global Step 1, Loss: 12.0024, Tokens/s: 2480.0, Tokens: 8884, GPU Util: 99%, GPU Mem: "
      "10.5G/15.0G, CPU Util: 15%, CPU Mem: 21.7G/186.7G\n"
      "Epoch 0:   0%|          | 1/743 [00:06<44:41,  3.61s/it, loss=11.9413, global_step=2, "
      "toks/s=3930.4, gpu_util=100%, gpu_mem=12.8G, cpu_util=9%, cpu_mem=21.4G]Epoch 0, Step 1, "
      "Global Step 2, Loss: 11.9413, Tokens/s: 3930.4, Tokens: 9748, GPU Util: 100%, GPU Mem: "
      "12.8G/15.0G, CPU Util: 9%, CPU Mem: 21.4G/186.7G\n";
  Result<ParsedLog> r = ParseAutoLog(log, "ds.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "deepspeed");
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 1);  // global_step=1 (Step 0 of the epoch)
  EXPECT_EQ(r->iterations[0].loss, 12.0024);
  EXPECT_EQ(r->iterations[1].step, 2);
  EXPECT_EQ(r->iterations[1].loss, 11.9413);
}

TEST(DeepSpeed, OverflowLinesAreSkippedStepsWhereNoStepLineCountsThem) {
  // DynamicLossScaler.update_scale prints one line per overflowed optimizer step (rank 0), inside
  // engine.step(), before that step's dict: each is a skipped step of the next record. With the
  // engine's `step=N, skipped=K` lines the running count says the same and the lines add nothing.
  const std::string overflow =
      "[2024-09-15 00:41:26,125] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
      "Rank 0 Skipping step. Attempted loss scale: 4096, reducing to 2048\n";
  const std::string hysteresis =
      "[2024-09-15 00:41:26,080] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! "
      "Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing "
      "hysteresis to 1\n";
  const std::string dicts = "logging_steps=5,\n" + hysteresis + overflow +
                            "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n" + overflow +
                            "{'loss': 2.4, 'learning_rate': 2e-05, 'epoch': 0.2}\n" + overflow;
  for (auto parse : {ParseDeepSpeedLog, ParseTrainerLog, ParseAutoLog}) {
    Result<ParsedLog> r = parse(dicts, "fp16.log");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->format, parse == ParseTrainerLog ? "trainer" : "deepspeed");
    ASSERT_EQ(r->iterations.size(), 2u);
    EXPECT_EQ(At(*r, 5)->skipped, 2);   // lines 2 and 3
    EXPECT_EQ(At(*r, 10)->skipped, 1);  // line 5
    ASSERT_FALSE(r->notes.empty());
    EXPECT_NE(r->notes.back().find("fp16.log:7: 1 fp16 overflow line(s)"), std::string::npos)
        << r->notes.back();
  }
  Result<ParsedLog> counted = ParseDeepSpeedLog(
      overflow + overflow +
          "[2024-09-15 00:41:27,020] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, "
          "skipped=2, lr=[1e-05], mom=[(0.9, 0.999)]\n" +
          overflow +
          "[2024-09-15 00:41:28,020] [INFO] [logging.py:96:log_dist] [Rank 0] step=20, "
          "skipped=3, lr=[2e-05], mom=[(0.9, 0.999)]\n",
      "counted.log");
  ASSERT_TRUE(counted.ok()) << counted.status().message();
  EXPECT_EQ(At(*counted, 10)->skipped, 2);  // the step line's count, not 2 + 2
  EXPECT_EQ(At(*counted, 20)->skipped, 1);
}

TEST(DeepSpeed, Fp16OptimizerOverflowLinesWithoutZero) {
  // Without ZeRO, FP16_Optimizer.step says "[Rank 0] Overflow detected. Skipping step." (log_dist,
  // rank 0) and FP16_UnfusedOptimizer.step "[deepspeed] fp16 dynamic loss scale overflow!
  // Skipping step." through logger.info on every rank: here two ranks, two overflowed steps
  // (65536 -> 32768, then 32768 -> 16384) before the dict at step 4, one more before step 8.
  auto unfused = [](const char* from, const char* to) {
    return fmt::format(
        "[2024-03-08 16:33:21,416] [INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 dynamic "
        "loss scale overflow! Skipping step. Attempted loss scale: {}, reducing to {}\n",
        from, to);
  };
  const std::string log =
      "logging_steps=4,\n" + unfused("65536.0", "32768.0") + unfused("65536.0", "32768.0") +
      unfused("32768.0", "16384.0") + unfused("32768.0", "16384.0") +
      "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n" + unfused("16384.0", "8192.0") +
      unfused("16384.0", "8192.0") + "{'loss': 2.4, 'learning_rate': 2e-05, 'epoch': 0.2}\n";
  for (auto parse : {ParseDeepSpeedLog, ParseTrainerLog, ParseAutoLog}) {
    Result<ParsedLog> r = parse(log, "unfused.log");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->format, parse == ParseTrainerLog ? "trainer" : "deepspeed");
    EXPECT_EQ(At(*r, 4)->skipped, 2);  // lines 2-5: two steps, two ranks each
    EXPECT_EQ(At(*r, 8)->skipped, 1);  // lines 7-8
    bool noted = false;
    for (const std::string& n : r->notes) noted |= n.find("unfused.log:3: 3 more copies") == 0;
    EXPECT_TRUE(noted);
  }
  Result<ParsedLog> fused = ParseDeepSpeedLog(
      "[2023-12-11 16:39:34,450] [INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. "
      "Skipping step. Attempted loss scale: 65536, reducing to 32768.0\n"
      "step 1, loss: 7.2\n"
      "step 2, loss: 7.1\n",
      "fused.log");
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  EXPECT_EQ(At(*fused, 1)->skipped, 1);
  EXPECT_EQ(At(*fused, 2)->skipped, 0);
}

TEST(DeepSpeed, GradOverflowIterationIsAnOptimizerStepCount) {
  // FP16_Optimizer._update_scale logs f"\nGrad overflow on iteration {cur_iter}" (the number on a
  // line of its own), FP16_UnfusedOptimizer's "Grad overflow on iteration: %s"; cur_iter counts
  // the optimizer steps before this one.
  EXPECT_EQ(OverflowOptimizerStep("    Grad overflow on iteration 0"), 1);
  EXPECT_EQ(OverflowOptimizerStep("[2026-06-18 23:36:56,643] [INFO] "
                                  "[unfused_optimizer.py:281:_update_scale] Grad overflow on "
                                  "iteration: 4"),
            5);
  EXPECT_EQ(OverflowOptimizerStep("Grad overflow on iteration 6023 (x)"), std::nullopt);
  EXPECT_EQ(OverflowOptimizerStep("No Grad overflow for 500 iterations"), std::nullopt);
  // Script loss lines that count micro-batches run ahead of it: left out, and with nothing else
  // the log is refused, saying why.
  Result<ParsedLog> r = ParseDeepSpeedLog(
      "Epoch: 0, Step: 0, Rank: 0, loss = 6.8\n"
      "Epoch: 0, Step: 5, Rank: 0, loss = 7.7\n"
      "Grad overflow on iteration 0\n"
      "Epoch: 0, Step: 10, Rank: 0, loss = 8.5\n"
      "Epoch: 0, Step: 15, Rank: 0, loss = 7.2\n"
      "Grad overflow on iteration 1\n",
      "micro.log");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("(line 2: step 6, yet line 3 counts optimizer step 1)"),
            std::string::npos)
      << r.status().message();
}

TEST(DeepSpeed, TrainerLoggingFirstStep) {
  Result<ParsedLog> r = ParseDeepSpeedLog(
      "logging_first_step=True,\n"
      "logging_steps=10,\n"
      "{'loss': '10.9', 'learning_rate': '1e-05', 'epoch': '0.01'}\n"
      "{'loss': '10.1', 'learning_rate': '2e-05', 'epoch': '0.1'}\n"
      "{'loss': '9.5', 'learning_rate': '3e-05', 'epoch': '0.2'}\n",
      "first.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 3u);
  EXPECT_EQ(At(*r, 1)->loss, 10.9);
  EXPECT_EQ(At(*r, 10)->loss, 10.1);
  EXPECT_EQ(At(*r, 20)->loss, 9.5);
}

// A Trainer resumed from its step-2 checkpoint after a crash at step 3: the
// dicts count on from 2, and the failed run's step 3 is replaced.
TEST(Trainer, ResumedRunCountsOnFromTheCheckpoint) {
  Result<ParsedLog> r = ParseTrainerLog(
      "{'loss': 3.0}\n{'loss': 2.9}\n{'loss': 2.8}\nTraceback (most recent call last):\n"
      "[INFO|trainer.py:2460] >>   Continuing training from global step 2\n"
      "{'loss': 2.75}\n{'loss': 2.6}\n",
      "resumed.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(At(*r, 2)->loss, 2.9);
  EXPECT_EQ(At(*r, 3)->loss, 2.75);
  EXPECT_EQ(At(*r, 4)->loss, 2.6);
  EXPECT_EQ(r->restarts, 1);
}

// Megatron core >= 0.16 resumed from the iteration-20 checkpoint: the resumed
// run's first line (21) and its line at 30, which averages 21-30.
TEST(Megatron, Core016ResumedRunsFirstInterval) {
  auto line = [](int it, double ms, double loss) {
    return fmt::format(
        " [2026-03-01 10:00:00.000000] iteration {:8d}/{:8d} | consumed samples: {:12d} | "
        "elapsed time per iteration (ms): {:.1f} | learning rate: 1.000000E-04 | global batch "
        "size:     8 | lm loss: {:.6E} | loss scale: 1.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |\n",
        it, 100, it * 8, ms, loss);
  };
  std::string text = line(10, 500, 9) + line(20, 400, 8) + "loading checkpoint at iteration 20\n" +
                     line(21, 4000, 7.9) + line(30, 760, 7.09) + line(40, 400, 7);
  Result<ParsedLog> r = ParseMegatronLog(text, "resumed016.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 5u);
  // Line 5 averages 21-30: (10 x 760 - 4000) / 9 = 400 ms, (10 x 7.09 - 7.9) / 9 = 7.0.
  EXPECT_EQ(At(*r, 30)->span, 9);
  EXPECT_NEAR(*At(*r, 30)->ms, 400.0, 1e-9);
  EXPECT_NEAR(*At(*r, 30)->loss, 7.0, 1e-9);
  EXPECT_EQ(At(*r, 40)->span, 10);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0].rfind("resumed016.log:5: iteration 30's line averages iterations 21-30", 0),
            0u);
}

// An interval that prints no lm loss although not all of its iterations were
// skipped: training_log prints a loss only `if avg >= 0.0`, so its average was
// NaN (a bf16 NaN that no skip caught). Megatron-LM prints the counts on every
// line; a fork's line without them says nothing about its loss.
TEST(Megatron, MissingLossWithUnskippedIterationsIsNaN) {
  auto line = [](int it, std::string_view loss, int skipped) {
    return fmt::format(
        " iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): "
        "400.0 | learning rate: 1.000000E-04 | global batch size:     8 | {}loss scale: 1.0 | "
        "number of skipped iterations: {:3d} | number of nan iterations: {:3d} |\n",
        it, 100, it * 8, loss, skipped, skipped > 0 ? 1 : 0);
  };
  std::string text = line(10, "lm loss: 9.000000E+00 | ", 0) + line(20, "", 3) + line(30, "", 10) +
                     line(40, "", 0) +
                     " iteration       50/     100 | elapsed time per iteration (ms): 400.0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(text, "nan.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 5u);
  EXPECT_EQ(At(*r, 10)->loss, 9.0);
  ASSERT_TRUE(At(*r, 20)->loss);  // 7 of 10 advanced, no loss: NaN
  EXPECT_TRUE(std::isnan(*At(*r, 20)->loss));
  EXPECT_EQ(At(*r, 20)->skipped, 3);
  EXPECT_EQ(At(*r, 20)->nan, 2);   // Megatron's 1 among the skipped, 1 more among the others
  EXPECT_FALSE(At(*r, 30)->loss);  // all 10 skipped: no loss, the count says why
  EXPECT_EQ(At(*r, 30)->nan, 1);
  EXPECT_TRUE(std::isnan(*At(*r, 40)->loss));
  EXPECT_EQ(At(*r, 40)->nan, 1);
  EXPECT_FALSE(At(*r, 50)->loss);  // no counts printed: not Megatron-LM's line
  EXPECT_EQ(At(*r, 50)->nan, 0);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_EQ(r->notes[0].rfind("loss: 2 iteration line(s) from nan.log:2 (iteration 20) on", 0), 0u);
  // A count that does not parse is still an error at its line.
  r = ParseMegatronLog(line(10, "", 0) +
                           " iteration       20/     100 | number of skipped "
                           "iterations: x |\n",
                       "badcount.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "badcount.log:2: 'number of skipped iterations' is 'x', not a number");
}

// tqdm's bar before a Trainer dict gives its step (trainer_dicts.h): what
// ProgressCallback.on_step_end drew before on_log wrote the dict, unless it is
// stale (tqdm redraws at most every 0.1 s), another bar, or off the stated
// logging_steps.
TEST(Trainer, SpeedMetricsInEveryDictDoNotCloseTheRun) {
  // include_num_input_tokens_seen: each step dict carries train_runtime; the closing dict is
  // the one without a loss.
  Result<ParsedLog> r = ParseTrainerLog(
      "{'loss': 2.5, 'epoch': 0.5, 'train_runtime': 3.0, 'train_tokens_per_second': 9.0}\n"
      "{'loss': 2.4, 'epoch': 1.0, 'train_runtime': 6.0, 'train_tokens_per_second': 9.5}\n"
      "{'train_runtime': 6.5, 'train_samples_per_second': 4.0, 'train_steps_per_second': "
      "0.3077, 'train_loss': 2.45, 'epoch': 1.0}\n",
      "tokens.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(At(*r, 2)->loss, 2.4);
  EXPECT_EQ(r->wall_s, 6.5);
  ASSERT_TRUE(r->trainer_average);
  EXPECT_EQ(r->trainer_average->through_step, 2);  // 0.3077 x 6.5 = 2.0
  // A malformed value in such a dict is still an error at its line.
  r = ParseTrainerLog(
      "{'loss': 2.5, 'train_runtime': 3.0}\n{'loss': 2.4, 'train_runtime': 6.0, 'memory(GiB)': "
      "'n/a'}\n",
      "tokens.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "tokens.log:2: 'memory(GiB)' is not a number of GiB");
}

TEST(Trainer, LlamaFactoryTimedeltaElapsedTime) {
  // LLaMA-Factory's trainer_log.jsonl: str(timedelta(seconds=int(elapsed))).
  EXPECT_EQ(TimedeltaSeconds("0:04:02"), 242);
  EXPECT_EQ(TimedeltaSeconds("12:00:59"), 43259);
  EXPECT_EQ(TimedeltaSeconds("1 day, 2:03:04"), 93784);
  EXPECT_EQ(TimedeltaSeconds("3 days, 0:00:05"), 259205);
  EXPECT_FALSE(TimedeltaSeconds("0:4:02"));
  EXPECT_FALSE(TimedeltaSeconds("0:04:60"));
  EXPECT_FALSE(TimedeltaSeconds("123:04:02"));
  EXPECT_FALSE(TimedeltaSeconds("1 week, 0:04:02"));
  EXPECT_FALSE(TimedeltaSeconds("54m 1s"));
}

TEST(Trainer, BarsBeforeTheDictsTimeTheirSteps) {
  // tqdm's {elapsed} ("MM:SS", from an hour "H:MM:SS") on the bar of each dict's step: step 20
  // took (25 - 10) s / 10. An evaluation between 20 and 30 runs on the same clock: step 30 is
  // not timed across it, with a note; step 40 is again ((25:00:01 - 0:59:50) / 10 steps).
  // Step 50's bar is no tqdm time (1:5 has one minute digit): untimed.
  Result<ParsedLog> r = ParseTrainerLog(
      " 10%|#| 10/100 [00:10<01:30,  1.00it/s]{'loss': 1.5, 'epoch': 0.1}\n"
      " 20%|#| 20/100 [00:25<01:20,  1.00it/s]{'loss': 1.4, 'epoch': 0.2}\n"
      "{'eval_loss': 1.45, 'eval_runtime': 9.0, 'epoch': 0.2}\n"
      " 30%|#| 30/100 [59:50<01:10,  1.00it/s]{'loss': 1.3, 'epoch': 0.3}\n"
      " 40%|#| 40/100 [25:00:01<01:00,  1.00it/s]{'loss': 1.2, 'epoch': 0.4}\n"
      " 50%|#| 50/100 [1:5<00:50,  1.00it/s]{'loss': 1.1, 'epoch': 0.5}\n",
      "bars.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(At(*r, 20) && At(*r, 30) && At(*r, 40) && At(*r, 50));
  EXPECT_FALSE(At(*r, 10)->ms);
  ASSERT_TRUE(At(*r, 20)->ms);
  EXPECT_DOUBLE_EQ(*At(*r, 20)->ms, 1500.0);
  EXPECT_FALSE(At(*r, 30)->ms);
  ASSERT_TRUE(At(*r, 40)->ms);
  EXPECT_DOUBLE_EQ(*At(*r, 40)->ms, (25 * 3600 + 1 - (59 * 60 + 50)) * 1000.0 / 10);
  EXPECT_FALSE(At(*r, 50)->ms);
  bool noted = false;
  for (const std::string& n : r->notes)
    noted =
        noted || n.find(
                     "bars.log:4: the elapsed time of the dicts (or of the progress bars "
                     "before them) does not time the steps of 1 record(s)") != std::string::npos;
  EXPECT_TRUE(noted);
  // Steps faster than the whole seconds: 10 steps of 0.05 s show 00:01, 00:01, 00:02. Timing 30
  // by its 1 s (100 ms a step) and not 20 would read them twice as slow: none is timed.
  r = ParseTrainerLog(
      " 10%|#| 10/100 [00:01<00:05,  19.9it/s]{'loss': 1.5, 'epoch': 0.1}\n"
      " 20%|#| 20/100 [00:01<00:04,  19.9it/s]{'loss': 1.4, 'epoch': 0.2}\n"
      " 30%|#| 30/100 [00:02<00:03,  19.9it/s]{'loss': 1.3, 'epoch': 0.3}\n",
      "fast.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(At(*r, 30));
  EXPECT_FALSE(At(*r, 20)->ms);
  EXPECT_FALSE(At(*r, 30)->ms);
  noted = false;
  for (const std::string& n : r->notes)
    noted = noted || n.find(
                         "fast.log:2: the progress bars before the dicts of lines 1 and 2 show "
                         "the same second") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Trainer, MsSwiftElapsedTimeTimesTheSteps) {
  EXPECT_EQ(FormattedSeconds("1d 2h 3m 4s"), 93784);  // ms-swift's format_time
  EXPECT_EQ(FormattedSeconds("54m 1s"), 3241);
  EXPECT_EQ(FormattedSeconds("0s"), 0);
  EXPECT_FALSE(FormattedSeconds("5 minutes"));
  EXPECT_FALSE(FormattedSeconds("54m1"));
  // A run resumed from step 100: train_speed(s/it) counts the seconds over the steps since the
  // resume (10 s/it, not 1050 s at step 105), so it does not agree with 'elapsed_time' and the
  // whole seconds time the steps: (100 - 50) s over the 5 steps to 110. The dicts before the
  // resume line are the failed run's clock: step 105's record is not timed across it.
  Result<ParsedLog> r = ParseTrainerLog(
      "{'loss': 1.2, 'global_step/max_steps': '100/200', 'elapsed_time': '16m 40s', "
      "'train_speed(s/it)': 10.0}\n"
      "  Continuing training from global step 100\n"
      "{'loss': 1.1, 'global_step/max_steps': '105/200', 'elapsed_time': '50s', "
      "'train_speed(s/it)': 10.0}\n"
      "{'loss': 1.0, 'global_step/max_steps': '110/200', 'elapsed_time': '1m 40s', "
      "'train_speed(s/it)': 10.0}\n",
      "swift.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(At(*r, 110));
  EXPECT_FALSE(At(*r, 105)->ms);
  ASSERT_TRUE(At(*r, 110)->ms);
  EXPECT_DOUBLE_EQ(*At(*r, 110)->ms, 10000.0);
  // ms-swift 2-3's train_speed(iter/s) is global_step / seconds: step / it, finer than the
  // whole seconds (200 / 0.5 - 100 / 0.5 = 200 s over 100 steps, though '6m 41s' - '3m 20s' =
  // 201 s).
  r = ParseTrainerLog(
      "{'loss': 1.2, 'train_speed(iter/s)': 0.5, 'global_step/max_steps': '100/200', "
      "'elapsed_time': '3m 20s'}\n"
      "{'loss': 1.0, 'train_speed(iter/s)': 0.5, 'global_step/max_steps': '200/200', "
      "'elapsed_time': '6m 41s'}\n",
      "swift2.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(At(*r, 200) && At(*r, 200)->ms);
  EXPECT_DOUBLE_EQ(*At(*r, 200)->ms, 2000.0);
}

// speed_metrics rounds train_steps_per_second to 3 decimals: over a long run it allows several
// step counts; the last bar settles it, else a note says the average is taken through the last
// dict.
TEST(Trainer, ClosingDictsStepsRunFromRoundedRates) {
  const std::string closing =
      "{'train_runtime': 3462.7809, 'train_samples_per_second': 0.404, 'train_steps_per_second': "
      "0.012, 'train_loss': 0.0, 'epoch': 1.0}\n";
  Result<ParsedLog> r = ParseTrainerLog(
      "{'loss': 1.0, 'epoch': 0.5}\n"
      "{'loss': 0.5, 'epoch': 0.9}\n" +
          closing,
      "rounded.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trainer_average->through_step, 2);  // 39.8-43.3 steps: unsettled
  bool noted = false;
  for (const std::string& n : r->notes)
    noted = noted || n.find(
                         "rounded.log:3: train_steps_per_second x train_runtime, as rounded, "
                         "allows 40 to 43 steps run") != std::string::npos;
  EXPECT_TRUE(noted);
  r = ParseTrainerLog(
      "\r 93%|#########3| 40/43 [52:50<03:51, 77.01s/it]{'loss': 1.0}\n"
      "\r100%|##########| 43/43 [57:42<00:00, 78.10s/it]\n" +
          closing,
      "bar.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trainer_average->through_step, 43);
  // 2026's strings: '14.71' s at '35.35' steps/s is 519.8-520.3 steps: 520.
  r = ParseTrainerLog(
      "{'loss': '4.1'}\n{'train_runtime': '14.71', 'train_samples_per_second': "
      "'565.7', 'train_steps_per_second': '35.35', 'epoch': '1'}\n",
      "strings.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trainer_average->through_step, 520);
}

// unsloth prints its banner instead of transformers' "***** Running training *****" summary; its
// 2024 wording (unsloth#1194) and its 2025 one.
TEST(Trainer, UnslothBannersBatchSizes) {
  Result<ParsedLog> r = ParseTrainerLog(
      "==((====))==  Unsloth - 2x faster free finetuning | Num GPUs = 1\n"
      "   \\   /|    Num examples = 1,760 | Num Epochs = 1\n"
      "O^O/ \\_/ \\    Batch size per device = 5 | Gradient Accumulation steps = 8\n"
      "\\        /    Total batch size = 40 | Total steps = 220\n"
      "{'loss': 1.5, 'epoch': 0.01}\n",
      "unsloth2024.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("lbs").value, 5);
  EXPECT_EQ(r->facts.at("gas").value, 8);
  EXPECT_EQ(r->facts.at("gbs").value, 40);
  EXPECT_EQ(r->facts.at("gbs").line, 4);
  r = ParseTrainerLog(
      "O^O/ \\_/ \\    Batch size per device = 2 | Gradient accumulation steps = 4\n"
      "\\        /    Data Parallel GPUs = 1 | Total batch size (2 x 4 x 1) = 1,024\n"
      "{'loss': 1.5, 'epoch': 0.01}\n",
      "unsloth2025.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("gas").value, 4);
  EXPECT_EQ(r->facts.at("dp").value, 1);
  EXPECT_EQ(r->facts.at("gbs").value, 1024);
}

TEST(Trainer, AnotherRanksCopyOfTheDictsIsLeftOut) {
  const std::string series =
      "{'loss': 3.0, 'epoch': 0.5}\n{'loss': 2.9, 'epoch': 1.0}\n"
      "{'train_runtime': 10.0, 'train_samples_per_second': 8.0, 'epoch': 1.0}\n"
      "{'eval_loss': 2.0, 'eval_runtime': 1.5, 'epoch': 1.0}\n";
  Result<ParsedLog> r = ParseTrainerLog(series + series, "ranks.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->wall_s, 10.0);
  EXPECT_EQ(r->evals.size(), 1u);
  EXPECT_NE(std::find_if(r->notes.begin(), r->notes.end(),
                         [](const std::string& n) {
                           return n.find("ranks.log:7: a second closing dict") == 0;
                         }),
            r->notes.end());
  // Dicts without an epoch or a step may repeat in a real run: each is a step.
  r = ParseTrainerLog("{'loss': 3.0}\n{'loss': 3.0}\n", "same.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations.size(), 2u);
  // A resumed run may print the failed run's dicts again: they are its records.
  r = ParseTrainerLog(
      "{'loss': 3.0, 'epoch': 0.1}\n{'loss': 2.9, 'epoch': 0.2}\n"
      "  Continuing training from global step 1\n{'loss': 2.9, 'epoch': 0.2}\n",
      "resumed.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(At(*r, 2)->loss, 2.9);
}

// A resume the log does not state (transformers at log_level warning): train_loss is the loss
// summed over the steps this run trained, over all 50. Resumed from step 25, the dicts at 30, 40
// and 50 cover 5, 10 and 10 steps: 2.5 x 5 + 2.25 x 10 + 2.0 x 10 = 55, / 50 = 1.1 (by hand). The
// closing rate counts all 50 steps over this run's seconds: 160 x 25 / 50 = 80. With train_loss
// 2.35 (= (2.5 x 30 + 42.5) / 50: the first dict covers its 30 steps) the run started at step 0,
// and nothing changes.
TEST(Trainer, UnstatedResumeFromTheClosingTrainLoss) {
  const auto noted = [](const ParsedLog& l, std::string_view what) {
    return std::any_of(l.notes.begin(), l.notes.end(),
                       [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  const auto log = [](const char* train_loss) {
    return fmt::format(
        "  0%|          | 0/50 [00:00<?, ?it/s]\n"
        " 60%|######    | 30/50 [00:03<00:02,  9.81it/s]{{'loss': 2.5, 'grad_norm': 1.1, "
        "'learning_rate': 4e-05, 'epoch': 0.6}}\n"
        " 80%|########  | 40/50 [00:04<00:01,  9.80it/s]{{'loss': 2.25, 'grad_norm': 1.0, "
        "'learning_rate': 2e-05, 'epoch': 0.8}}\n"
        "100%|##########| 50/50 [00:05<00:00,  9.80it/s]{{'loss': 2.0, 'grad_norm': 0.9, "
        "'learning_rate': 0.0, 'epoch': 1.0}}\n"
        "{{'train_runtime': 2.5, 'train_samples_per_second': 160.0, 'train_steps_per_second': "
        "20.0, 'train_loss': {}, 'epoch': 1.0}}\n",
        train_loss);
  };
  Result<ParsedLog> r = ParseTrainerLog(log("1.1"), "resumed.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 3u);
  EXPECT_EQ(r->iterations[0].step, 30);
  EXPECT_EQ(r->iterations[0].span, 5);
  ASSERT_TRUE(r->trainer_average && r->trainer_average->samples_per_s);
  EXPECT_NEAR(*r->trainer_average->samples_per_s, 80.0, 1e-9);
  EXPECT_EQ(r->trainer_average->excluded_steps, 25);
  EXPECT_TRUE(noted(*r, "resumed from step 25 without saying so"));
  r = ParseTrainerLog(log("2.35"), "fresh.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(*r->trainer_average->samples_per_s, 160.0, 1e-9);
  EXPECT_EQ(r->trainer_average->excluded_steps, 0);
  EXPECT_FALSE(noted(*r, "without saying so"));
}

TEST(Trainer, StepsFromEpochsOnlyWhereUnambiguous) {
  const std::string bar = "  6%|6         | 1/16 [00:01<00:15,  1.00s/it]\n";
  // Bar-numbered step 1 at epoch 0.06: 15.4-18.2 steps an epoch, so epoch 0.5 is step 8 or 9:
  // ambiguous, counted as 2 with the note.
  Result<ParsedLog> r =
      ParseTrainerLog(bar + "{'loss': 3.0, 'epoch': 0.06}\n{'loss': 2.9, 'epoch': 0.5}\n", "e.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations.back().step, 2);
  EXPECT_NE(r->notes.back().find("numbered as if it were 1"), std::string::npos);
  // A counted dict without an epoch: nothing inferred.
  r = ParseTrainerLog(bar + "{'loss': 3.0, 'epoch': 0.06}\n{'loss': 2.9}\n", "e.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations.back().step, 2);
  // Stated logging_steps wins: no inference.
  r = ParseTrainerLog(
      "logging_steps=1,\n" + bar + "{'loss': 3.0, 'epoch': 0.06}\n{'loss': 2.9, 'epoch': 0.12}\n",
      "e.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations.back().step, 2);
  // Steps 1 and 3 (bars) with one dict between: logging_steps 1 would not fit, (3 - 1) / 2 = 1
  // does; epochs 1/4 a step.
  const std::string bar1 = " 25%|2         | 1/4 [00:01<00:03,  1.00s/it]\n";
  const std::string bar3 = " 75%|7         | 3/4 [00:03<00:01,  1.00s/it]\n";
  r = ParseTrainerLog(bar1 + "{'loss': 3.0, 'epoch': 0.25}\n{'loss': 2.9, 'epoch': 0.5}\n" + bar3 +
                          "{'loss': 2.8, 'epoch': 0.75}\n{'loss': 2.7, 'epoch': 1.0}\n",
                      "l.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(r->iterations.back().step, 4);
  EXPECT_NE(r->notes.back().find("logging_steps 1, inferred"), std::string::npos);
}

// transformers from 2025 prints the epoch as f"{v:.4g}": four significant digits, far finer than
// round(epoch, 2) when an epoch has hundreds of steps; and the closing dict's steps run bound steps
// per epoch even while unsettled (a range), each dict placed narrowing them for the next.
TEST(Trainer, StepsFromFourDigitEpochsAndTheClosingDictsRange) {
  // 50 steps an epoch, logging_steps 10 (not stated): epochs 10/50 = '0.2', ..., '2'. Closing:
  // '0.0352' steps/s (3 decimals: 0.0347-0.0357) x '2845' s (2844.5-2845.5) = 98.7-101.6 steps:
  // 99-101 at epoch '2' (1.9995-2.0005): 49.49-50.51 steps an epoch; '0.2' (0.19995-0.20005)
  // allows only 10, which pins 49.99-50.01 an epoch, and so on.
  std::string text;
  for (int step = 10; step <= 100; step += 10)
    text += fmt::format("{{'loss': '1.5', 'epoch': '{:.4g}'}}\n", step / 50.0);
  text +=
      "{'train_runtime': '2845', 'train_samples_per_second': '0.2812', "
      "'train_steps_per_second': '0.0352', 'train_loss': '1.5', 'epoch': '2'}\n";
  Result<ParsedLog> r = ParseTrainerLog(text, "g4.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}));
  EXPECT_EQ(r->trainer_average->through_step, 100);  // the last dict's, now placed
  // Unquoted epochs are round(epoch, 2) (+-0.005): the closing dict's 40 steps at 0.06 allow
  // 615-727 steps an epoch, and 0.02 then 9.2-18.2 steps: counted.
  text.clear();
  for (int step = 10; step <= 40; step += 10)
    text += fmt::format("{{'loss': 1.5, 'epoch': {:.2f}}}\n", step / 625.0);
  text +=
      "{'train_runtime': 112.7, 'train_samples_per_second': 2.8, "
      "'train_steps_per_second': 0.355, 'train_loss': 1.5, 'epoch': 0.06}\n";
  r = ParseTrainerLog(text, "r2.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  steps.clear();
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4}));
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("numbered as if it were 1"), std::string::npos);
}

// The Trainer's epoch counts micro-batches (epoch + micro-batches done / micro-batches an
// epoch): with gradient accumulation an epoch's last step takes the remainder, so the epochs do not
// grow by one share a step, and the dicts are placed by that count.
TEST(Trainer, StepsFromEpochsCountingMicroBatches) {
  // 7 micro-batches an epoch, GAS 3: 3 steps an epoch (3, 3 and 1 micro-batches), logging_steps 2
  // (not stated). Step 2 at 6/7 = '0.8571', 4 at 1 + 3/7 = '1.429', 6 at '2', 8 at 2 + 6/7 =
  // '2.857'; closing '2' steps/s x '4' s = 7.997-8.003: 8 steps at '2.857'. One rate of steps an
  // epoch fits none of it (8 / 2.857 = 2.8, 6 / 2 = 3); only steps 2, 4, 6, 8 fit the count.
  const std::string dicts =
      "{'loss': '6.1', 'epoch': '0.8571'}\n{'loss': '6.0', 'epoch': '1.429'}\n"
      "{'loss': '5.9', 'epoch': '2'}\n{'loss': '5.8', 'epoch': '2.857'}\n";
  Result<ParsedLog> r = ParseTrainerLog(
      dicts +
          "{'train_runtime': '4', 'train_samples_per_second': '8', 'train_steps_per_second': "
          "'2', 'train_loss': '5.95', 'epoch': '2.857'}\n",
      "gas3.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{2, 4, 6, 8}));
  ASSERT_FALSE(r->notes.empty());
  EXPECT_NE(r->notes.back().find("logging_steps 2, the one value at whose multiples"),
            std::string::npos);
  // Without the closing dict nothing bounds the steps run: counted.
  r = ParseTrainerLog(dicts, "gas3.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations.back().step, 4);
  EXPECT_NE(r->notes.back().find("numbered as if it were 1"), std::string::npos);
}

// A notebook that trains several configurations prints each run's dicts and closing dict in turn
// (a 2026 LoRA lab log, index id 71559672946: four 30-step runs): the epoch going back starts
// another run, whose records, evaluations and closing figures replace the earlier run's.
TEST(Trainer, EpochGoingBackStartsAnotherRun) {
  const std::string text =
      "{'loss': '2.163', 'epoch': '0.5'}\n{'loss': '1.6', 'epoch': '1'}\n"
      "{'eval_loss': '1.5', 'epoch': '1'}\n"
      "{'train_runtime': '406.5', 'train_samples_per_second': '1.181', "
      "'train_steps_per_second': '0.074', 'train_loss': '1.57', 'epoch': '1'}\n"
      "{'loss': '2.155', 'epoch': '0.5'}\n{'loss': '0.2408', 'epoch': '1'}\n"
      "{'train_runtime': '477.3', 'train_samples_per_second': '1.006', "
      "'train_steps_per_second': '0.063', 'train_loss': '0.7058', 'epoch': '1'}\n";
  Result<ParsedLog> r = ParseTrainerLog(text, "runs.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].loss, 2.155);  // line 5
  EXPECT_EQ(r->iterations[1].loss, 0.2408);
  EXPECT_EQ(r->restarts, 1);
  EXPECT_TRUE(r->evals.empty());  // the first run's
  EXPECT_EQ(r->wall_s, 477.3);    // line 7, not line 4's 406.5
  EXPECT_EQ(r->trainer_average->samples_per_s, 1.006);
  EXPECT_EQ(r->trainer_average->through_step, 30);  // 0.063 x 477.3 = 29.8-30.3
  bool noted = false;
  for (const std::string& n : r->notes)
    noted = noted || n.find("runs.log:5: another training run starts here (epoch 0.5 after 1)") !=
                         std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Trainer, ProgressBarsNumberTheDicts) {
  auto bar = [](int n, int total) {
    return fmt::format("\r {:3d}%|#         | {}/{} [00:01<00:09,  1.50it/s]", n * 100 / total, n,
                       total);
  };
  const std::string clear = "\r                              \r";
  // No logging_steps stated: the bars give 50 and 100 (each line after a dict starts with
  // tqdm.write's redraw at the dict's step); the third dict's only bar is the redraw after the
  // second (100 again), the fourth's an evaluation bar (8/8) and a finished bar on the line
  // before: both counted on (101, 102).
  std::string text = bar(49, 200) + bar(50, 200) + clear + "{'loss': 3.0, 'epoch': 0.1}\n" +
                     bar(50, 200) + bar(100, 200) + clear + "{'loss': 2.5, 'epoch': 0.2}\n" +
                     bar(100, 200) + clear + "{'loss': 2.25, 'epoch': 0.3}\n" + bar(8, 8) + "\n" +
                     "{'loss': 2.0, 'epoch': 0.4}\n";
  Result<ParsedLog> r = ParseTrainerLog(text, "bars.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{50, 100, 101, 102}));
  EXPECT_EQ(At(*r, 100)->loss, 2.5);
  ASSERT_EQ(r->notes.size(), 1u);  // 101 and 102 are counted guesses
  EXPECT_NE(r->notes[0].find("does not state logging_steps"), std::string::npos);
  // logging_steps=10 stated: a bar at 17 (not redrawn since) loses to the count (20);
  // a bar at 30 on the grid wins; a bar of another total (60: not the training bar) never
  // numbers a dict.
  text = "logging_steps=10,\n" + bar(10, 40) + "{'loss': 3.0}\n" + bar(17, 40) + "{'loss': 2.0}\n" +
         bar(30, 40) + "{'loss': 1.0}\n" + bar(50, 60) + "{'loss': 0.5}\n";
  r = ParseTrainerLog(text, "stated.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  steps.clear();
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 30, 40}));
  // The only note: the bars of 10 and 30 both show 00:01, too coarse to time the steps.
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("show the same second"), std::string::npos);
  // A message glued after the bar ended its line: the drawings since are lost, the bar is stale.
  r = ParseTrainerLog(bar(10, 40) + "{'loss': 3.0}\n" + bar(20, 40) +
                          "Saving model checkpoint to out/checkpoint-20\n{'loss': 2.0}\n",
                      "glued.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  steps.clear();
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 11}));
  // The Trainer under DeepSpeed >= 0.17 prints no step= line: the bar numbers its dicts too.
  r = ParseDeepSpeedLog(bar(25, 40) + "{'loss': 3.0}\n" + bar(26, 40) + "{'loss': 2.0}\n",
                        "ds.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(At(*r, 25)->loss, 3.0);
  EXPECT_EQ(At(*r, 26)->loss, 2.0);
}

// A callback's prints between the bar and the dict (TRL GRPO with a metrics print), pasted from a
// terminal (tqdm's clear a line of its own): the bar before the dict bounds its step from below,
// the first bar after it from above (a later drawing may have replaced tqdm.write's redraw); the
// same n in both numbers it. Different n: counted, as before.
TEST(Trainer, BarsOnBothSidesOfADictNumberIt) {
  auto bar = [](int n, int total) {
    return fmt::format("  0%|          | {}/{} [01:29<67:59:26,  8.22s/it]", n, total);
  };
  const std::string clear = "                              \n";
  const std::string text = bar(10, 100) + "\nLogging 44 metrics\n" + clear +
                           "{'loss': 1.0, 'epoch': 0.0}\n" + bar(10, 100) + "MDI: 6.3\n" +
                           bar(20, 100) + "\nLogging 44 metrics\n" + clear +
                           "{'loss': 0.5, 'epoch': 0.0}\n" + bar(23, 100) + "\n" + bar(30, 100) +
                           "\nLogging 44 metrics\n" + clear + "{'loss': 0.25, 'epoch': 0.0}\n" +
                           bar(4, 8) + "\n" + bar(30, 100) + "\n";
  Result<ParsedLog> r = ParseTrainerLog(text, "between.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  // 10 (10 before, 10 after); 30 (the evaluation bar of total 8 between is not the training
  // bar); the second (20 before, 23 after) at 20: logging_steps 10 is the one value that puts
  // the n-th dict at n x 10 with the first and the third where their bars put them.
  EXPECT_EQ(steps, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(At(*r, 10)->loss, 1.0);
  EXPECT_EQ(At(*r, 20)->loss, 0.5);
  EXPECT_EQ(At(*r, 30)->loss, 0.25);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("logging_steps 10, the one value that puts each dict between the "
                             "training bars"),
            std::string::npos)
      << r->notes[0];
}

// tqdm draws no bar where it cannot size one (ncols 0, Colab): format_meter returns
// l_bar[:-1] + r_bar[1:], "  5% 10/200 [04:49<1:24:08, 26.57s/it]". Such a counter numbers the
// dict on its line as a drawn bar does; bars around a dict that allow several logging_steps leave
// it counted.
TEST(Trainer, CountersWithoutABarAndLooseBounds) {
  Result<ParsedLog> r = ParseTrainerLog(
      "  5% 10/200 [04:49<1:24:08, 26.57s/it]{'loss': 0.5, 'epoch': 0.01}\n", "ncols0.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].step, 10);
  // One dict between the bars at 2 and 4: logging_steps 2, 3 or 4.
  r = ParseTrainerLog(
      "  1% 2/100 [00:01<01:00,  1.00s/it]\nreward: 0.5\n{'loss': 0.5, 'epoch': 0.01}\n"
      "  4% 4/100 [00:04<01:00,  1.00s/it]\n",
      "loose.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].step, 1);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("as if it were 1"), std::string::npos) << r->notes[0];
}

// The training bar's total (max_steps) bounds the closing dict's steps run: '0.006' steps/s x
// '1.368e+04' s allows 75-88 steps, the bars numbered dicts of total 80: 80 (a CPU LoRA run's
// tail, 2026, in a public repository's report, index id 67429897961).
TEST(Trainer, TheBarsTotalBoundsTheStepsRun) {
  Result<ParsedLog> r = ParseTrainerLog(
      " 50%|#####     | 40/80 [1:53:42<2:00:46, 181.16s/it] {'loss': '2.159', 'epoch': '1'}\n"
      "100%|##########| 80/80 [3:47:55<00:00, 174.65s/it] {'loss': '2.206', 'epoch': '2'}\n"
      "{'train_runtime': '1.368e+04', 'train_samples_per_second': '0.012', "
      "'train_steps_per_second': '0.006', 'train_loss': '2.363', 'epoch': '2'}\n",
      "cpu.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].step, 40);
  EXPECT_EQ(r->iterations[1].step, 80);
  ASSERT_TRUE(r->trainer_average);
  EXPECT_EQ(r->trainer_average->through_step, 80);
  EXPECT_TRUE(r->notes.empty()) << r->notes[0];
}

// The epochs' spacing: dicts every 0.008 of an epoch ('0.472' ... '0.496', four digits) and the
// closing dict's 3125-3130 steps at '0.5' (6249-6261 steps an epoch) allow only logging_steps 50
// (0.0079-0.0081 x 6249-6261), and each epoch one multiple of 50: 2950, 3000, 3050, 3100; the
// closing epoch then settles 3125 (a Slurm run's `tail -n 20`, 2026, in a chat export, index id
// 52215062895; its config: 6250 steps an epoch, logging_steps 50).
TEST(Trainer, LoggingStepsFromTheSpacingOfTheEpochs) {
  Result<ParsedLog> r = ParseTrainerLog(
      "{'loss': '0.5869', 'grad_norm': '0.326', 'learning_rate': '8.291e-07', 'epoch': '0.472'}\n"
      "{'loss': '0.5682', 'grad_norm': '0.3492', 'learning_rate': '4.255e-07', 'epoch': '0.48'}\n"
      "{'loss': '0.5899', 'grad_norm': '0.39', 'learning_rate': '1.549e-07', 'epoch': '0.488'}\n"
      "{'loss': '0.5934', 'grad_norm': '0.3262', 'learning_rate': '1.814e-08', 'epoch': '0.496'}\n"
      "{'train_runtime': '5212', 'train_samples_per_second': '4.797', 'train_steps_per_second': "
      "'0.6', 'train_loss': '0.6394', 'epoch': '0.5'}\n",
      "spacing.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{2950, 3000, 3050, 3100}));
  ASSERT_TRUE(r->trainer_average);
  EXPECT_EQ(r->trainer_average->through_step, 3125);
  // Without the closing dict nothing bounds the steps per epoch: counted.
  r = ParseTrainerLog("{'loss': '0.5869', 'epoch': '0.472'}\n{'loss': '0.5682', 'epoch': '0.48'}\n",
                      "spacing.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations.back().step, 2);
}

// HfArgumentParser gives every field with a '_' a dashed alias too (_parse_dataclass_field):
// "--logging-steps 10 --logging-first-step" states logging_steps as well.
TEST(Trainer, DashedLoggingStepsOnTheCommandLine) {
  Result<ParsedLog> r = ParseTrainerLog(
      "python train.py --output-dir out --logging-steps 10 --logging-first-step\n"
      "{'loss': 2.0, 'epoch': 0.01}\n{'loss': 1.9, 'epoch': 0.1}\n{'loss': 1.8, 'epoch': 0.2}\n",
      "dashed.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::vector<int64_t> steps;
  for (const Iteration& it : r->iterations) steps.push_back(it.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 10, 20}));
  EXPECT_TRUE(r->notes.empty());
}

// transformers writes the dicts to stdout (tqdm.write) and its bars to stderr: a log of stderr
// alone has bars and no dict, and the error says so.
TEST(Trainer, BarsWithoutDictsSayWhereTheDictsWent) {
  Result<ParsedLog> r = ParseTrainerLog(
      "***** Running training *****\n  1%|          | 1/72 [00:27<32:54, 27.82s/it]\n",
      "stderr.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "stderr.log: no Trainer loss dicts (\"{'loss': X, 'learning_rate': ...}\", one per "
            "logging_steps) in 2 lines; its progress bars are there (line 2) but the dicts go to "
            "stdout: was only stderr kept?");
}

TEST(Trainer, TokensPerSecondOfIncludeNumInputTokensSeen) {
  // transformers' Trainer.log with include_num_input_tokens_seen: speed_metrics("train",
  // start_time, num_tokens=num_input_tokens_seen) in every dict, the last one the run's token rate
  // so far (LlamaFactory#9147's dicts, 2025-09: 523776 / 356.9094 = 1467.532).
  const std::string dicts =
      "{'loss': 1.8349, 'grad_norm': 2.62, 'learning_rate': 1e-05, 'epoch': 0.18, "
      "'num_input_tokens_seen': 261888, 'train_runtime': 184.9061, 'train_tokens_per_second': "
      "1416.33}\n"
      "{'loss': 1.7993, 'grad_norm': 2.35, 'learning_rate': 9.97e-06, 'epoch': 0.36, "
      "'num_input_tokens_seen': 523776, 'train_runtime': 356.9094, 'train_tokens_per_second': "
      "1467.532}\n";
  Result<ParsedLog> r = ParseTrainerLog("logging_steps=10,\n" + dicts, "tokens.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->trainer_average);
  EXPECT_EQ(r->trainer_average->tokens_per_s, 1467.532);
  EXPECT_EQ(r->trainer_average->through_step, 20);
  EXPECT_EQ(r->trainer_average->line, 3);
  EXPECT_FALSE(r->wall_s);  // train_runtime beside a loss: not the closing dict's
  // Resumed, the tokens count from the first run's start, the seconds from the resume's.
  r = ParseTrainerLog("logging_steps=10,\n  Continuing training from global step 10\n" + dicts,
                      "resumed.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->trainer_average);
}

TEST(Trainer, DictsWithTypographicQuotesSayWhyTheyAreNotRead) {
  // huggingface/transformers#33336 (waldnebel, 2024-09): the dicts pasted with ‘’ for Python's
  // quotes (an editor's "smart quotes"). Not the log the run wrote; the error says what is wrong.
  const std::string log =
      "Run:\n"
      "{\u2018loss\u2019: 1.453, \u2018grad_norm\u2019: 2.474428415298462, "
      "\u2018learning_rate\u2019: 4.682539682539683e-05, \u2018epoch\u2019: 0.19}\n";
  const std::string hint =
      "; line 2 is a Trainer log dict with typographic quotes (\u2018loss\u2019) where Python "
      "prints 'loss': the text was pasted through an editor that changed them; give the log as "
      "the run wrote it";
  Result<ParsedLog> r = ParseTrainerLog(log, "quotes.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "quotes.log: no Trainer loss dicts (\"{'loss': X, 'learning_rate': ...}\", one per "
            "logging_steps) in 2 lines" +
                hint);
  for (auto parse : {ParseAutoLog, ParseDeepSpeedLog}) {
    r = parse(log, "quotes.log");
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().message().ends_with(hint)) << r.status().message();
  }
}

TEST(Trainer, ANotebooksTrainingTableSaysWhyItIsNotRead) {
  // unsloth in Colab (a Japanese tarot-prompt project's README, index id 1239065216): the
  // notebook's table copied as text, tab-separated, where a script prints the dicts.
  const std::string log =
      " [90/90 01:55, Epoch 30/30]\n"
      "Step\tTraining Loss\n"
      "10\t1.898500\n"
      "20\t0.925200\n";
  const std::string hint =
      "; line 2 heads a Jupyter notebook's training table (Step, Training Loss: transformers' "
      "NotebookProgressCallback draws it in place of the log dicts): run the training as a "
      "script, whose output has the dicts";
  Result<ParsedLog> r = ParseTrainerLog(log, "table.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "table.log: no Trainer loss dicts (\"{'loss': X, 'learning_rate': ...}\", one per "
            "logging_steps) in 4 lines" +
                hint);
  r = ParseAutoLog(log, "table.log");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().message().ends_with(hint)) << r.status().message();
  // As a markdown table (unslothai/unsloth#2291, 2025-04: a GRPO notebook's table).
  r = ParseAutoLog(
      "Step | Training Loss | reward | reward_std | completion_length | kl\n"
      "-- | -- | -- | -- | -- | --\n"
      "1 | 0.000000 | -17.250000 | 1.500000 | 445.500000 | 0.000000\n",
      "markdown.log");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("; line 1 heads a Jupyter notebook's training table"),
            std::string::npos)
      << r.status().message();
  // An executed notebook exported as text: the table is an HTML object's placeholder (a Korean
  // GRPO tutorial under transformers 5, index id 60884557104).
  r = ParseTrainerLog(
      "[transformers] warmup_ratio is deprecated and will be removed in v5.2. Use `warmup_steps` "
      "instead.\n"
      "<IPython.core.display.HTML object>\n",
      "nbconvert.log");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().message().ends_with(
      "; line 2 is a Jupyter notebook's HTML output as text (<IPython.core.display.HTML object>: "
      "in a notebook transformers' NotebookProgressCallback draws its table of the logs as HTML "
      "in place of the log dicts): run the training as a script, whose output has the dicts"))
      << r.status().message();
}

TEST(Trainer, AResumePastMaxStepsSaysWhyThereAreNoDicts) {
  // hiyouga/LlamaFactory#1813 (2023-12-12): resumed from a checkpoint at step 200000 of a longer
  // run, the new run's max_steps 139495: the bar starts at 0/139495 and nothing is trained. Not
  // "was only stderr kept?".
  Result<ParsedLog> r = ParseTrainerLog(
      "[INFO|trainer.py:1791] 2023-12-12 10:12:06,000 >>   Continuing training from global step "
      "200000\n"
      "[INFO|trainer.py:1793] 2023-12-12 10:12:06,000 >>   Will skip the first 1 epochs then the "
      "first 60505 batches in the first epoch.\n"
      "  0%|          | 0/139495 [00:00<?, ?it/s]\n",
      "resumed.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "resumed.log: no Trainer loss dicts (\"{'loss': X, 'learning_rate': ...}\", one per "
            "logging_steps) in 3 lines; the run resumed from global step 200000 (line 1), and its "
            "progress bars count no more steps than that: a resume at or past max_steps trains "
            "nothing");
}

TEST(Trainer, ARunShorterThanLoggingStepsHasOnlyTheClosingDict) {
  // 40 steps at logging_steps 500 (transformers' default) print no loss dict: the eval dicts and
  // the closing dict are read, without a series. '0.5' x '80' (0.4995 x 79.995 = 39.96 to
  // 0.5005 x 80.005 = 40.04) is 40 steps at epoch '2': 20 an epoch, the evals at 20 and 40.
  const std::string log =
      "{'eval_loss': '0.9', 'eval_runtime': '1.5', 'epoch': '1'}\n"
      "{'eval_loss': '0.8', 'eval_runtime': '1.5', 'epoch': '2'}\n"
      "{'train_runtime': '80', 'train_samples_per_second': '4', 'train_steps_per_second': "
      "'0.5', 'train_loss': '1.2', 'epoch': '2'}\n";
  Result<ParsedLog> r = ParseTrainerLog(log, "short.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->iterations.empty());
  ASSERT_EQ(r->evals.size(), 2u);
  EXPECT_EQ(r->evals[0].step, 20);
  EXPECT_EQ(r->evals[1].step, 40);
  EXPECT_EQ(r->evals[1].value, 0.8);
  EXPECT_EQ(r->wall_s, 80);
  ASSERT_TRUE(r->trainer_average);
  EXPECT_EQ(r->trainer_average->samples_per_s, 4);
  EXPECT_EQ(r->trainer_average->through_step, 40);
  ASSERT_FALSE(r->notes.empty());
  EXPECT_EQ(r->notes.back(),
            "short.log:3: no Trainer loss dict, only the closing dict (a run of fewer steps than "
            "logging_steps, transformers' default 500, or logging_strategy \"no\"): no loss "
            "series, the closing dict's figures are the run's");
  // A closing dict without numbers (a page's placeholders) times nothing: still an error.
  r = ParseTrainerLog(
      "{'train_runtime': '...', 'train_samples_per_second': '...', 'train_loss': '...'}\n",
      "placeholders.log");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().message().ends_with(
      "; line 1 is the closing dict, but its train_runtime and train_samples_per_second are no "
      "numbers"))
      << r.status().message();
  // Without the closing dict (the run stopped before it): an error that says so.
  r = ParseTrainerLog(log.substr(0, log.find("{'train_runtime'")), "stopped.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "stopped.log: no Trainer loss dicts (\"{'loss': X, 'learning_rate': ...}\", one per "
            "logging_steps) in 2 lines; line 1 is an eval dict, but no loss dict or closing dict "
            "(train_runtime) follows: the run logged no training step (fewer steps than "
            "logging_steps) and did not finish");
}

TEST(Trainer, TrainMetricsBlockStandsInForAMissingClosingDict) {
  // Trainer.log_metrics("train", ...): the runtime as a timedelta truncated to hundredths, the
  // rest rounded. Without a closing dict before it, its figures are the closing dict's; '0.2' x
  // 1 day, 0:00:10.50 (86410.5 s: 0.1995 x 86410.45 = 17238.9 to 0.2005 x 86410.55 = 17325.3)
  // leaves the steps run open, and through_step stays at the last dict's.
  const std::string log =
      "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.5}\n"
      "***** train metrics *****\n"
      "  epoch                    =        1.0\n"
      "  total_flos               =  1351978GF\n"
      "  train_runtime            = 1 day, 0:00:10.50\n"
      "  train_samples_per_second =        3.2\n"
      "  train_steps_per_second   =        0.2\n";
  Result<ParsedLog> r = ParseTrainerLog(log, "block.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->wall_s, 86410.5);
  ASSERT_TRUE(r->trainer_average);
  EXPECT_EQ(r->trainer_average->samples_per_s, 3.2);
  EXPECT_EQ(r->trainer_average->line, 2);
  EXPECT_EQ(r->trainer_average->through_step, 1);
  // After a closing dict the block is its copy: the dict's figures stay.
  r = ParseTrainerLog(
      "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.5}\n"
      "{'train_runtime': 20.5, 'train_samples_per_second': 3.1, 'train_steps_per_second': 0.1, "
      "'train_loss': 2.5, 'epoch': 1.0}\n"
      "***** train metrics *****\n"
      "  train_runtime            = 0:00:20.50\n"
      "  train_samples_per_second =        9.9\n",
      "both.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->trainer_average->samples_per_s, 3.1);
  EXPECT_EQ(r->trainer_average->line, 2);
  for (const std::string& n : r->notes) EXPECT_EQ(n.find("train metrics"), std::string::npos) << n;
  // `***** eval metrics *****`: the evaluation after training, once (a dict printed for it too
  // has the unrounded value).
  r = ParseTrainerLog(
      "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 1.0}\n"
      "{'eval_loss': 2.41234567, 'epoch': 1.0}\n"
      "***** eval metrics *****\n"
      "  epoch                   =        1.0\n"
      "  eval_loss               =     2.4123\n"
      "  eval_runtime            = 0:00:06.26\n"
      "***** eval metrics *****\n"
      "  eval_loss               =     2.3999\n",
      "eval.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 2u);
  EXPECT_EQ(r->evals[0].value, 2.41234567);
  EXPECT_EQ(r->evals[1].value, 2.3999);
  EXPECT_EQ(r->evals[1].line, 7);
}

// Peak memory in the dicts (trainer_memory.h): axolotl's keys since d0d2fc560
// (2025-08-27: logs["memory/max_allocated (GiB)"] = round(allocated, 2), ...;
// transformers prints the values as strings); the largest reserved figure wins,
// else the largest allocated one; a value that is not a number is an error.
TEST(Trainer, PeakMemoryFromTheDicts) {
  Result<ParsedLog> r = ParseTrainerLog(
      "{'loss': '0.7157', 'grad_norm': '12.79', 'learning_rate': '0', 'ppl': '2.046', "
      "'memory/max_active (GiB)': '2.98', 'memory/max_allocated (GiB)': '2.98', "
      "'memory/device_reserved (GiB)': '4.12', 'tokens/trainable': 93, 'epoch': '0.1333'}\n"
      "{'loss': '0.7', 'memory/max_allocated (GiB)': '3.5', 'memory/device_reserved (GiB)': "
      "'4.0', 'epoch': '0.2667'}\n",
      "axolotl.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(*r->peak_memory_bytes, 4.12 * 1024 * 1024 * 1024);
  EXPECT_NE(r->memory_source.find("device_reserved"), std::string::npos);
  r = ParseTrainerLog("{'loss': 1.0, 'memory/max_mem_allocated(gib)': 2.5}\n", "alloc.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(*r->peak_memory_bytes, 2.5 * 1024 * 1024 * 1024);
  EXPECT_NE(r->memory_source.find("max_mem_allocated"), std::string::npos);
  // LLaMA-Factory's trainer_log.jsonl with RECORD_VRAM (get_peak_memory: rank 0's device, GiB).
  r = ParseTrainerLog(
      "{\"current_steps\": 5, \"loss\": 1.0, \"vram_allocated\": 10.5, \"vram_reserved\": 12.25}\n"
      "{\"current_steps\": 10, \"loss\": 0.9, \"vram_allocated\": 10.75, \"vram_reserved\": "
      "12.0}\n",
      "llamafactory.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(*r->peak_memory_bytes, 12.25 * 1024 * 1024 * 1024);
  EXPECT_NE(r->memory_source.find("vram_reserved"), std::string::npos);
  r = ParseTrainerLog("{'loss': 1.0}\n{'loss': 0.9, 'memory(GiB)': 'n/a'}\n", "swift.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "swift.log:2: 'memory(GiB)' is not a number of GiB");
}

TEST(Paddle, ErnieKitGlobalFieldsAndMalformedOnes) {
  // ERNIEKit's step line (erniekit/train/*/pretraining_trainer.py): global_* over the interval.
  auto line = [](std::string tokens) {
    return "[I] - loss: 2.5, learning_rate: 1e-05, global_step: 20, max_mem_reserved_gb: 40.5, "
           "loss_scale: 1024.0, global_runtime: 20.0, global_samples_per_second: 32.0, "
           "global_steps_per_second: 0.5, tokens_per_sec_per_card: " +
           tokens + ", progress_or_epoch: 0.1\n";
  };
  const std::string good =
      "[I] -   Total train batch size (w. parallel, distributed & "
      "accumulation) = 1,024\n" +
      line("4000.0");
  Result<ParsedLog> r = ParseAutoLog(good, "e.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "paddle");
  ASSERT_EQ(r->iterations.size(), 1u);
  const Iteration& it = r->iterations[0];
  EXPECT_EQ(it.step, 20);
  EXPECT_DOUBLE_EQ(*it.ms, 2000.0);  // 20 s over 20 x 0.5 = 10 steps
  EXPECT_EQ(*it.samples, 1024.0);    // the block's total (ratio 32 / 0.5 = 64 disagrees: noted)
  EXPECT_EQ(*it.tokens_per_device_per_s, 4000.0);
  EXPECT_EQ(*it.loss_scale, 1024.0);
  EXPECT_EQ(*r->peak_memory_bytes, 40.5 * 1024 * 1024 * 1024);
  EXPECT_EQ(r->facts.at("gbs").value, 1024.0);
  EXPECT_EQ(r->notes.size(), 2u);  // auto's, and the ratio's

  r = ParsePaddleLog(line("fast"), "e.log");
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "e.log:1: 'tokens_per_sec_per_card' is 'fast', not a number");
  r = ParsePaddleLog(
      "[I] -   Total train batch size (w. parallel, distributed & accumulation) = ?\n", "e.log");
  EXPECT_EQ(r.status().message(), "e.log:1: 'Total train batch size' is '?', not a number");
  // A cut-off last line keeps its complete fields.
  r = ParsePaddleLog("loss: 2.5, global_step: 3, global_runtime: 1.5, tokens_per_sec_per_c",
                     "e.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->iterations[0].tokens_per_device_per_s);
}

TEST(Megatron, HardWrappedLinesJoined) {
  // A 40-column copy: the first piece lost its trailing space (break at a space: joined with
  // one), the second broke inside `learning` (full width: joined without).
  const std::string wrapped =
      " iteration       10/     100 | consumed\n"   // 39, the space after it lost
      "samples: 640 | lm loss: 2.5 | learning r\n"  // 40: the width
      "ate: 1.0E-04 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
      " iteration       20/     100 | lm loss: 2.4 | number of skipped iterations:   0 | number "
      "of nan iterations:   0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(wrapped, "w.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[0].loss, 2.5);
  EXPECT_EQ(r->iterations[0].lr, 1.0E-04);
  EXPECT_EQ(r->iterations[1].line, 4);
  // A line that no following line completes is read alone: here one without any field.
  r = ParseMegatronLog(" iteration       10/     100 | consumed samples: 640 |\nsome text\n",
                       "w.log");
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(),
            "w.log:1: an iteration line without any field the megatron parser reads (elapsed "
            "time per iteration (ms), lm loss, learning rate, global batch size, ...)");
}

TEST(Megatron, BridgeConfigSummaryOfNonDefaultValues) {
  // Megatron-Bridge v0.4+ (ConfigContainer.log_non_default_values, its shape at 067f987) under
  // srun -l: the model's values only where they differ from MCore's (tp 4; pp 1 not printed),
  // the train and dataset sections in full. Written for this test from that code.
  const std::string log =
      "0: \n"
      "0: ======================================================================\n"
      "0: Configuration Summary (Non-Default Values vs Megatron Core)\n"
      "0: ======================================================================\n"
      "0: \n"
      "0: [optimizer] Non-default values (vs Mcore OptimizerConfig):\n"
      "0:   bf16: True  (Mcore default: False)\n"
      "0:   lr: 0.0003  (Mcore default: None)\n"
      "0: \n"
      "0: [model] Non-default values (vs Mcore TransformerConfig):\n"  // 10
      "0:   bf16: True  (Mcore default: False)\n"                      // 11
      "0:   context_parallel_size: 2  (Mcore default: 1)\n"            // 12
      "0:   hidden_size: 4096  (Mcore default: 0)\n"                   // 13
      "0:   num_attention_heads: 32  (Mcore default: 0)\n"             // 14
      "0:   num_layers: 32  (Mcore default: 0)\n"                      // 15
      "0:   tensor_model_parallel_size: 4  (Mcore default: 1)\n"       // 16
      "0: \n"
      "0: ----------------------------------------------------------------------\n"
      "0: Other Configuration Values:\n"
      "0: ----------------------------------------------------------------------\n"
      "0: \n"
      "0: [train]:\n"                  // 22
      "0:   global_batch_size: 256\n"  // 23
      "0:   micro_batch_size: 2\n"     // 24
      "0:   train_iters: 100\n"
      "0: \n"
      "0: [dataset]:\n"               // 27
      "0:   seq_length: 8192\n"       // 28
      "0:   sequence_length: 8192\n"  // 29
      "0: \n"
      "0: ======================================================================\n"  // 31
      "0:   num_layers: 99\n"  // after the closing rule: not the summary's
      "0: Step Time : 9.09s GPU utilization: 663.5MODEL_TFLOP/s/GPU\n"
      "0:  [2026-05-01 10:00:00] iteration       10/     100 | consumed samples:         2560 | "
      "elapsed time per iteration (ms): 9089.0 | learning rate: 3.000000E-04 | global batch "
      "size:   256 | lm loss: 8.114214E+00 | loss scale: 1.0 | grad norm: 0.042 | number of "
      "skipped iterations:   0 | number of nan iterations:   0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "s.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("gbs").value, 256);
  EXPECT_EQ(r->facts.at("gbs").line, 23);
  EXPECT_EQ(r->facts.at("lbs").value, 2);
  EXPECT_EQ(r->facts.at("mpe").value, 8192);
  EXPECT_EQ(r->facts.at("mpe").line, 29);  // MCore's sequence_length (Bridge's seq_length: 28)
  EXPECT_EQ(r->facts.at("tp").value, 4);
  EXPECT_EQ(r->facts.at("tp").line, 16);
  EXPECT_FALSE(r->facts.contains("pp"));  // a default, not printed: the log does not say
  EXPECT_EQ(r->facts.at("layers").value, 32);
  EXPECT_EQ(r->facts.at("hidden").value, 4096);
  EXPECT_EQ(r->facts.at("heads").value, 32);
  EXPECT_EQ(r->precision, "bf16");
  EXPECT_EQ(r->precision_line, 11);  // the model's, not the optimizer's (7)
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].ms, 9089.0);  // the iteration line's, not Step Time's
  EXPECT_EQ(r->iterations[0].line, 34);
  EXPECT_TRUE(std::any_of(r->notes.begin(), r->notes.end(), [](const std::string& n) {
    return n ==
           "dp: s.log:12 context_parallel_size 2: the data-parallel size is devices / (tp "
           "x pp x cp), which the log does not state; set layout for per-replica figures";
  }));
}

TEST(Megatron, BridgeConfigYamlAfterAnArgumentBlock) {
  // The argument block's values stand; the YAML's different sequence length is a note naming
  // both lines. YAML's nesting decides: model.seq_length and a nested `seq_length` are not the
  // training length, `model.transformer.` (MCore's ModelConfig) counts as `model.`, a recipe
  // name gives the precision, and the block ends at print()'s blank line.
  const std::string log =
      "  global_batch_size ............................... 128\n"    // 1
      "  seq_length ...................................... 4096\n"   // 2
      "_target_: megatron.bridge.training.config.ConfigContainer\n"  // 3
      "dataset:\n"
      "  _target_: megatron.bridge.training.config.GPTDatasetConfig\n"
      "  seq_length: 2048\n"  // 6
      "  split_matrix:\n"
      "  - - 0\n"
      "    - 0.5\n"
      "mixed_precision: bf16_mixed\n"  // 10
      "model:\n"
      "  generation_config:\n"
      "    config_dict:\n"
      "      num_layers: 7\n"
      "  seq_length: 131072\n"  // 15
      "  transformer:\n"
      "    num_layers: 24\n"                   // 17
      "    pipeline_model_parallel_size: 2\n"  // 18
      "    tensor_model_parallel_size: 2\n"
      "train:\n"
      "  global_batch_size: 128\n"  // 21
      "  micro_batch_size: 4\n"     // 22
      "\n"
      "  micro_batch_size: 8\n"  // after the print
      " iteration       10/     100 | elapsed time per iteration (ms): 500.0 | lm loss: 2.5 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "y.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("mpe").value, 4096);
  EXPECT_EQ(r->facts.at("mpe").line, 2);
  EXPECT_EQ(r->facts.at("gbs").line, 1);  // the same value: no note
  EXPECT_EQ(r->facts.at("lbs").value, 4);
  EXPECT_EQ(r->facts.at("lbs").line, 22);
  EXPECT_EQ(r->facts.at("layers").value, 24);
  EXPECT_EQ(r->facts.at("layers").line, 17);
  EXPECT_EQ(r->facts.at("pp").value, 2);
  EXPECT_EQ(r->facts.at("tp").value, 2);
  EXPECT_EQ(r->precision, "bf16");
  EXPECT_EQ(r->precision_line, 10);
  const std::vector<std::string> expected = {
      "mpe: y.log:2 says 4096, Megatron-Bridge's config print y.log:6 says 2048 "
      "(dataset.seq_length): 4096 kept",
      "mpe: y.log:6 dataset.seq_length 2048 is the training length; y.log:15 model.seq_length "
      "131072 is the model's maximum, not used"};
  EXPECT_EQ(r->notes, expected);
}

TEST(Megatron, BridgeConfigYamlUnderTorchrunPrefixesWithoutItsEnd) {
  // torchrun --tee's `[defaultN]:` prefixes: another rank's line amid rank 0's print is not the
  // print's; an iteration line right after it (the print's blank line lost) ends it.
  const std::string log =
      "[default0]:_target_: megatron.bridge.training.config.ConfigContainer\n"
      "[default0]:dataset:\n"
      "[default1]:  sequence_length: 9999\n"
      "[default0]:  sequence_length: 2048\n"  // 4
      "[default0]:  tokenizer_prompt_format: a long string that yaml.safe_dump wrapped at\n"
      "[default0]:    eighty columns\n"
      "[default0]:comm_overlap: null\n"
      "[default0]: iteration       10/     100 | elapsed time per iteration (ms): 500.0 | lm "
      "loss: 2.5 |\n"
      "[default0]:train:\n"
      "[default0]:  global_batch_size: 64\n";  // after the print: not read
  Result<ParsedLog> r = ParseMegatronLog(log, "t.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("mpe").value, 2048);
  EXPECT_EQ(r->facts.at("mpe").line, 4);
  EXPECT_FALSE(r->facts.contains("gbs"));
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].line, 8);
}

TEST(Megatron, BridgeConfigPrecision) {
  // The argument block's precision stands; the print's other one is a note.
  const std::string iteration =
      " iteration       10/     100 | elapsed time per iteration (ms): 500.0 | lm loss: 2.5 |\n";
  Result<ParsedLog> r = ParseMegatronLog(
      "  bf16 ............................................ False\n"
      "  fp16 ............................................ True\n"
      "_target_: megatron.bridge.training.config.ConfigContainer\n"
      "mixed_precision:\n"
      "  _target_: megatron.bridge.training.mixed_precision.MixedPrecisionConfig\n"
      "  bf16: true\n"  // 6
      "  fp16: false\n"
      "\n" +
          iteration,
      "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->precision, "fp16");
  EXPECT_EQ(r->precision_line, 1);
  EXPECT_EQ(r->notes, (std::vector<std::string>{
                          "precision: p.log:1 says fp16, Megatron-Bridge's config print p.log:6 "
                          "says bf16 (mixed_precision.bf16): fp16 kept"}));
  // No mixed precision and the model's bf16 and fp16 both false: fp32.
  r = ParseMegatronLog(
      "_target_: megatron.bridge.training.config.ConfigContainer\n"
      "mixed_precision: null\n"
      "model:\n"
      "  bf16: false\n"  // 4
      "  fp16: false\n"
      "\n" +
          iteration,
      "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->precision, "fp32");
  EXPECT_EQ(r->precision_line, 4);
}

TEST(Megatron, ValidationLinesAreEvals) {
  // Several validation sets: the first one's series; the test set and a repeat at the same
  // iteration (after training, `on validation set`) left out.
  const std::string log =
      " iteration       10/      20 | lm loss: 2.0 | number of skipped iterations:   0 | number "
      "of nan iterations:   0 |\n"
      " validation-wiki loss at iteration 10 | lm loss value: 1.900000E+00 | lm loss PPL: 6.7 |\n"
      " validation-code loss at iteration 10 | lm loss value: 1.500000E+00 | lm loss PPL: 4.5 |\n"
      " iteration       20/      20 | lm loss: 1.8 | number of skipped iterations:   0 | number "
      "of nan iterations:   0 |\n"
      " validation-wiki loss at iteration 20 | lm loss value: 1.700000E+00 | lm loss PPL: 5.5 |\n"
      " validation-wiki loss at iteration 20 on validation set | lm loss value: 1.710000E+00 |\n"
      " validation loss at iteration 20 on test set | lm loss value: 1.600000E+00 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "v.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 2u);
  EXPECT_EQ(r->evals[0].step, 10);
  EXPECT_EQ(r->evals[0].value, 1.9);
  EXPECT_EQ(r->evals[0].line, 2);
  EXPECT_EQ(r->evals[1].step, 20);
  EXPECT_EQ(r->evals[1].value, 1.7);
  EXPECT_EQ(r->eval_what, "Megatron validation-wiki loss (the first loss's value)");

  // This fuzzing round (a set's name with a byte that is no UTF-8, found by checking the other
  // places log text goes into metrics.json after the mllog case): the label held the raw bytes,
  // and writing metrics.json (its eval.task) threw nlohmann's type_error 316.
  r = ParseMegatronLog(
      " iteration       10/      20 | lm loss: 2.0 |\n"
      " validation-w\xb1 loss at iteration 10 | lm loss value: 1.900000E+00 |\n",
      "v.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NO_THROW(nlohmann::json(r->eval_what).dump());
  EXPECT_EQ(r->eval_what, "Megatron validation-w\xef\xbf\xbd loss (the first loss's value)");
}

TEST(Megatron, MindSpeedFsdpMonitorRateAndValidationLines) {
  // MindSpeed-LLM's FSDP2 TrainMonitor with --log_throughput (train_monitor.py at c77308a, its
  // log templates, logging_steps 2): the printed `tokens/s` wins over consumed tokens' growth.
  const std::string llm =
      "INFO [2026-08-01 10:00:02] >>  iteration        2/     100 | consumed samples:         16 "
      "| consumed tokens:      16384 | elapsed time per iteration (ms): 1000.00 | tokens/s: "
      "8000.00 | mfu: 30.00 | learning rate: 1.000000E-05 | global batch size:     8 | lm loss: "
      "2.000000E+00 | mtp loss: 0.000000E+00 | grad norm: 1.000 | max_memory_allocated(GB): 18.00 "
      "| max_memory_reserved(GB): 20.00 |\n"
      "INFO [2026-08-01 10:00:04] >>  iteration        4/     100 | consumed samples:         32 "
      "| consumed tokens:      32768 | elapsed time per iteration (ms): 1000.00 | tokens/s: "
      "8100.00 | mfu: 30.00 | learning rate: 1.000000E-05 | global batch size:     8 | lm loss: "
      "1.900000E+00 | mtp loss: 0.000000E+00 | grad norm: 1.000 | max_memory_allocated(GB): 18.00 "
      "| max_memory_reserved(GB): 21.50 |\n";
  Result<ParsedLog> r = ParseMegatronLog(llm, "m.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[1].span, 2);
  EXPECT_EQ(r->iterations[0].tokens_per_s, 8000.0);
  EXPECT_EQ(r->iterations[1].tokens_per_s, 8100.0);  // not 16384 / 2 s
  EXPECT_EQ(r->iterations[1].loss, 1.9);
  EXPECT_EQ(*r->peak_memory_bytes, 21.5 * 1024 * 1024 * 1024);
  // MindSpeed-MM's FSDP trainer (train_engine.py at 57069cd, training_log and _run_validation).
  const std::string mm =
      " [2026-06-17 10:00:00] iteration      100/    1000 | consumed samples:          800 | "
      "elapsed time per iteration (ms): 2231.6 | learning rate: 1.000000E-05 | global batch size: "
      "    8 | loss: 1.016570E+00 | grad norm: 1.500 |\n"
      " [2026-06-17 10:00:05] ** validation after iteration 100 ** | validation steps: 10 | "
      "validation loss: 1.234000E+00 |\n"
      " [2026-06-17 10:03:45] iteration      200/    1000 | consumed samples:         1600 | "
      "elapsed time per iteration (ms): 2200.0 | learning rate: 1.000000E-05 | global batch size: "
      "    8 | loss: 9.000000E-01 | grad norm: 1.400 |\n"
      " [2026-06-17 10:03:50] ** validation after iteration 200 ** | validation steps: 10 | "
      "validation loss: abc |\n";
  r = ParseMegatronLog(mm, "mm.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 1u);  // the unreadable one is not an evaluation
  EXPECT_EQ(r->evals[0].step, 100);
  EXPECT_EQ(r->evals[0].value, 1.234);
  EXPECT_EQ(r->evals[0].line, 2);
  EXPECT_EQ(r->iterations[1].loss, 0.9);
}

TEST(Megatron, FieldGluedToTheNextOne) {
  // A fork's field printed without its ` |` before the next (FlagScale_musa's chip_throughput);
  // MindSpeed-LLM's `decoupled learning rate` is another field, not a glued `learning rate`.
  const std::string log =
      " iteration       10/     100 | elapsed time per iteration (ms): 100.0 | chip_throughput: "
      "500.00 /s  learning rate: 1.000000E-05 | decoupled learning rate: 2.000000E-05 | lm loss: "
      "2.0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "g.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[0].lr, 1e-05);
  EXPECT_EQ(r->iterations[0].tokens_per_device_per_s, 500.0);
  r = ParseMegatronLog(
      " iteration       10/     100 | chip_throughput: abc /s  learning rate: 1.0E-05 |\n",
      "g.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "g.log:1: 'chip_throughput' is 'abc', not a number");
}

TEST(Megatron, LastFieldBeforeTheTimersAndCutOffLastField) {
  // ModelLink's tgs ends the line without ` |`, the timers' `time (ms)` glued after it: read. A
  // last field cut off (a README quoting part of the line) is not.
  Result<ParsedLog> r = ParseMegatronLog(
      " iteration        2/     100 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 | "
      "tgs (tokens/gpu/second): 353.02 time (ms)\n"
      " iteration        3/     100 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 | "
      "tgs (tokens/gpu/second): 354\n",
      "t.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[0].tokens_per_device_per_s, 353.02);
  EXPECT_FALSE(r->iterations[1].tokens_per_device_per_s);
  r = ParseMegatronLog(
      " iteration        2/     100 | lm loss: 2.0 | tgs (tokens/gpu/second): n/a time (ms)\n",
      "t.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "t.log:1: 'tgs (tokens/gpu/second)' is 'n/a', not a number");
}

TEST(Megatron, GluedMemoryReportsOfTwoRanksGiveTheLarger) {
  // Two ranks' report_memory prints on one line (the first without its newline): each is read.
  const std::string log =
      "[Rank 4] (after 1 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0 | "
      "reserved: 3.0 | max reserved: 3.0[Rank 0] (after 1 iterations) memory (MB) | allocated: "
      "1.0 | max allocated: 5.0 | reserved: 6.0 | max reserved: 6.0\n"
      " iteration        1/     100 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "m.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->peak_memory_bytes, 6.0 * 1024 * 1024);
  // The larger first: still the larger.
  r = ParseMegatronLog(
      "[Rank 0] (after 1 iterations) memory (MB) | max allocated: 5.0 | max reserved: 7.0"
      "[Rank 1] (after 1 iterations) memory (MB) | max allocated: 5.0 | max reserved: 6.0\n"
      " iteration        1/     100 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 |\n",
      "m.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->peak_memory_bytes, 7.0 * 1024 * 1024);
}

TEST(Megatron, PrimusAlignedArgumentsAreNotMegatronsBlock) {
  // Primus prints its own aligned argument list (module_utils.py log_dict_aligned, `name : value
  // (type)`) before Megatron's dotted block: lines 476 and 623 of a 2026 Primus DeepSeek-V4 smoke
  // log (AMD-AGI/Primus deepseek-v4/develop/progress/p20/smoke_pp2_ep4_final.log, colour codes
  // removed). Read as Megatron's block they gave bf16 "False" and fp16 "False": precision fp32
  // for a bf16 run. Not read; Megatron's own block (line 1481) says bf16.
  const std::string primus =
      "[20260507 13:09:31][rank-0/8][INFO]     [---------------------module_utils.py:227] :   "
      "bf16                                                         : True (bool)\n"
      "[20260507 13:09:31][rank-0/8][INFO]     [---------------------module_utils.py:227] :   "
      "fp16                                                         : False (bool)\n"
      "[20260507 13:09:31][rank-0/8][INFO]     [---------------------module_utils.py:227] :   "
      "global_batch_size                                            : 16 (int)\n";
  const std::string megatron =
      "[20260507 13:09:31][rank-0/8][DEBUG]    [-----------------------arguments.py:1576] :   "
      "bf16 ............................................ True\n";
  const std::string iteration =
      " iteration        1/      10 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(primus + iteration, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->precision, "");
  EXPECT_EQ(r->facts.count("gbs"), 0u);
  r = ParseMegatronLog(primus + megatron + iteration, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->precision, "bf16");
  EXPECT_EQ(r->precision_line, 4);
}

TEST(Megatron, ParameterLinesOfSomeRanksOnlyAreNotTheModel) {
  // PP2 stated, only pipeline rank 0's count printed: the billions line, with a note; without
  // one, no count. Both pipeline ranks printed: their sum.
  const std::string args =
      "  pipeline_model_parallel_size .................... 2\n"
      "  tensor_model_parallel_size ...................... 1\n";
  const std::string stage0 =
      " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1137615064\n";
  const std::string stage1 =
      " > number of parameters on (tensor, pipeline) model parallel rank (0, 1): 1000\n";
  const std::string billions = "Total number of parameters in billions: 5.96\n";
  const std::string iteration =
      " iteration        1/      10 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 |\n";
  Result<ParsedLog> r = ParseMegatronLog(args + stage0 + billions + iteration, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->facts.at("parameters").value, 5.96e9);
  EXPECT_EQ(r->facts.at("parameters").line, 4);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("p.log:3 give 1 of the tensor x pipeline ranks' counts only"),
            std::string::npos)
      << r->notes[0];
  r = ParseMegatronLog(args + stage0 + iteration, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.count("parameters"), 0u);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_TRUE(r->notes[0].starts_with("parameters: none read")) << r->notes[0];
  r = ParseMegatronLog(args + stage0 + stage1 + billions + iteration, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("parameters").value, 1137615064.0 + 1000.0);
}

TEST(Megatron, ParameterLinesUnderExpertParallelismAreOneShard) {
  // Lines 1624, 2283 and 3184 of a 2026 Primus DeepSeek-V2-Lite run under EP8 (AMD-AGI/Primus
  // pilot/pilot/state/runs/dsv2_lite_fp8_mi355x_20260511T024914Z_baseline/train.log @ 7e45b58,
  // colour codes removed): only data-parallel rank 0 prints its count, whose experts are 8 of the
  // 64, so 3228954112 is not the model's 15.82e9. (The whole log, 562 kB, is not in the corpus.)
  const std::string log =
      "[20260511 02:57:54][rank-0/8][DEBUG]    [-----------------------arguments.py:1576] :   "
      "expert_model_parallel_size ...................... 8\n"
      "[20260511 02:58:03][rank-0/8][DEBUG]    [------------------------training.py:1286] :  > "
      "number of parameters on (tensor, pipeline) model parallel rank (0, 0): 3228954112\n"
      " iteration        1/      20 | elapsed time per iteration (ms): 78258.5 | lm loss: 2.0 |\n"
      "[20260511 02:59:23][rank-0/8][DEBUG]    [---------theoretical_memory_usage.py:153] : Total "
      "number of parameters in billions: 15.82\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->facts.at("parameters").value, 15.82e9);
  EXPECT_EQ(r->facts.at("parameters").line, 4);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("count one expert-parallel rank's experts only "
                             "(expert_model_parallel_size 8)"),
            std::string::npos)
      << r->notes[0];
  // expert_model_parallel_size 1: the count as printed.
  std::string one = log;
  one.replace(one.find("...... 8"), 8, "...... 1");
  r = ParseMegatronLog(one, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->facts.at("parameters").value, 3228954112.0);
}

TEST(Megatron, FirstIntervalThatCannotAverageTheFirstIterationIsKept) {
  // Lines at 1, 10, 20: core 0.16's shape, but 10 x 900 ms is less than iteration 1's 20000 ms,
  // so the line at 10 cannot average iteration 1 in; and lines at 1 and 2 alone are
  // --log-interval 1's.
  auto line = [](int n, const char* ms) {
    return fmt::format(
        " iteration {:8d}/     100 | elapsed time per iteration (ms): {} | lm loss: 2.0 | number "
        "of skipped iterations:   0 | number of nan iterations:   0 |\n",
        n, ms);
  };
  Result<ParsedLog> r =
      ParseMegatronLog(line(1, "20000.0") + line(10, "900.0") + line(20, "900.0"), "c.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[1].ms, 900.0);
  EXPECT_EQ(r->iterations[1].span, 9);
  EXPECT_TRUE(r->notes.empty());
  r = ParseMegatronLog(line(1, "3000.0") + line(2, "2000.0"), "c.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[1].ms, 2000.0);
  EXPECT_TRUE(r->notes.empty());
}

TEST(Megatron, GptNeoXValidationResultsAreEvals) {
  // GPT-NeoX's evaluate_and_print_results: ` validation results at iteration N | lm_loss value:
  // x | lm_loss_ppl value: y | `; after training the prefix names no iteration, and the test
  // set's chart is "test". Lines of a FORGE (GPT-NeoX) run-sizing doc, its iteration line
  // wrapped over three lines.
  const std::string log =
      " samples/sec: 51.234 | iteration       10/      50 | elapsed time per iteration (ms): "
      "19987.6 |\n"
      " learning rate: 1.234E-04 | approx flops per GPU: 150.3TFLOPS | lm_loss: 7.123456E+00 |\n"
      " number of skipped iterations:   0 | number of nan iterations:   0 |\n"
      " validation results at iteration 100 | lm_loss value: 6.912345E+00 | lm_loss_ppl value: "
      "1.004E+03 |\n"
      " validation results at the end of training for val data | lm_loss value: 6.8E+00 | \n"
      " test results at the end of training for test data | lm_loss value: 6.7E+00 | \n";
  Result<ParsedLog> r = ParseMegatronLog(log, "neox.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].loss, 7.123456);
  EXPECT_EQ(r->iterations[0].ms, 19987.6);
  ASSERT_EQ(r->evals.size(), 1u);
  EXPECT_EQ(r->evals[0].step, 100);
  EXPECT_EQ(r->evals[0].value, 6.912345);
  EXPECT_EQ(r->evals[0].line, 4);
}

TEST(Megatron, ElisionMarkOverABatchRampUp) {
  // BigScience's 104B notes: --log-interval 1 lines 6502-6504 (GBS 80), ` ...`, then 8600 (GBS
  // 160 by then). Line 8600 averages one iteration: span 1, and no token rate from the consumed
  // tokens' growth since 6504 (507 M tokens over 2096 iterations of a growing batch, against
  // the line's 66.45 s: 3638 tokens/s, where 160 x 2048 / 66.4511 s = 4931).
  auto line = [](int n, long samples, long tokens, const char* ms, int gbs) {
    return fmt::format(
        " iteration {:8d}/  159576 | consumed samples: {:12d} | consumed tokens: {:12d} | elapsed "
        "time per iteration (ms): {} | learning rate: 6.000E-05 | global batch size: {:5d} | lm "
        "loss: 3.876781E+00 | loss scale: 4096.0 | grad norm: 3246.595 | num zeros: 0.0 | number "
        "of skipped iterations:   0 | number of nan iterations:   0 |\n",
        n, samples, tokens, ms, gbs);
  };
  const std::string log = line(6502, 216960, 444334080, "31074.1", 80) +
                          line(6503, 217040, 444497920, "31065.8", 80) +
                          line(6504, 217120, 444661760, "31073.4", 80) + "\n ...\n\n" +
                          line(8600, 464560, 951418880, "66451.1", 160);
  Result<ParsedLog> r = ParseMegatronLog(log, "b.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  for (const Iteration& it : r->iterations) EXPECT_EQ(it.span, 1) << it.step;
  EXPECT_FALSE(r->iterations[3].tokens_per_s);
  EXPECT_DOUBLE_EQ(*r->iterations[1].tokens_per_s, (444497920 - 444334080) / 31.0658);
  // Without an unmarked gap the interval is unknown: the span stays the gap, but the growth
  // over the lines left out still gives no rate.
  r = ParseMegatronLog(line(6504, 217120, 444661760, "31073.4", 80) + "...\n" +
                           line(8600, 464560, 951418880, "66451.1", 160),
                       "b.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->iterations[1].span, 2096);
  EXPECT_FALSE(r->iterations[1].tokens_per_s);
}

TEST(Megatron, LoneLineAfterABatchRampUpGetsNoRateFromTheWholeCount) {
  // BLOOM-176B's line at 12695 (GBS 2048 by then) re-flowed by a docstring over five lines, read
  // joined. Alone, it spans 12695; its consumed samples, 9841584, are not 2048 x 12695: the batch
  // ramped up, so the run's consumed tokens over 12695 x 105.22 s (15089 tokens/s) are no rate of
  // this line's iteration (2048 x 2048 / 105.22 s = 39862).
  const std::string log =
      "Each iteration log line looks like:\n"
      "  [default7]: iteration 12695/115311 | consumed samples: 9841584 |\n"
      "  consumed tokens: 20155564032 | elapsed time per iteration (s): 105.22 |\n"
      "  learning rate: 5.969E-05 | global batch size: 2048 | lm loss: 2.463556E+00 |\n"
      "  grad norm: 0.174 | num zeros: 0.0 | number of skipped iterations: 0 |\n"
      "  number of nan iterations: 0 | samples per second: 19.463 | TFLOPs: 149.02 |\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "bloom.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 1u);
  EXPECT_EQ(r->iterations[0].line, 2);
  EXPECT_EQ(r->iterations[0].ms, 105220.0);
  EXPECT_EQ(r->iterations[0].loss, 2.463556);
  EXPECT_EQ(r->iterations[0].samples, 2048);
  EXPECT_FALSE(r->iterations[0].tokens_per_s);
  // The same line where the batch never changed (consumed samples 2048 x 11): the whole count.
  r = ParseMegatronLog(
      " iteration 11/50 | consumed samples: 22528 | consumed tokens: 46137344 | elapsed time per "
      "iteration (ms): 1000.0 | global batch size: 2048 | lm loss: 2.0 |\n",
      "c.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(*r->iterations[0].tokens_per_s, 46137344 / (11 * 1.0));
}

TEST(Megatron, IterationLineWhoseFieldsGoOnAtTheNextLine) {
  // A doc's re-typed line over four lines, `| ... |` for the fields it leaves out: the pieces
  // never reach `number of nan iterations`, so they are not joined; the error says why.
  const std::string log =
      "[2026-06-11 15:19:14] iteration   2/  50 | consumed samples: 1024 |\n"
      "  elapsed time per iteration (ms): 11184.3 |\n"
      "  learning rate: 6.000000E-05 | global batch size: 512 |\n"
      "  lm loss: 1.178900E+01 | ... | grad norm: 1.837 | ...\n";
  Result<ParsedLog> r = ParseMegatronLog(log, "w.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "w.log:1: an iteration line whose fields go on at the next line, and the lines after "
            "it never reach Megatron's last field ('number of nan iterations |'): a line re-typed "
            "or cut over several lines (a README's `| ... |`?), not read");
  // The same with CRLF line ends (a Windows-edited copy): the line after the first was read as
  // empty, and the error said the line had no field.
  std::string crlf;
  for (char c : log) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  Result<ParsedLog> w = ParseMegatronLog(crlf, "w.log");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), r.status().message());
  // A doc's placeholder line whose only field has no closing ` |`: the error names it.
  r = ParseMegatronLog(
      "iteration       10/      10 | ... | lm loss: X.XXX\n\xE2\x9C\x93 LoRA Fine-Tuning "
      "Complete!\n",
      "x.log");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "x.log:1: an iteration line without any field the megatron parser reads (elapsed "
            "time per iteration (ms), lm loss, learning rate, global batch size, ...); its last "
            "field, 'lm loss: X.XXX', has no closing ' |' (a line cut off), and a cut-off field "
            "is not read");
}

TEST(Megatron, MsSwiftFirstIterationLineIsNotCore016s) {
  // ms-swift 3.x's training_log prints iteration 1 and resets its timer and sums there (unlike
  // Megatron core 0.16): the line at 5 averages iterations 2-5 as printed, nothing taken out.
  auto line = [](int n, const char* ms, const char* loss) {
    return fmt::format(
        " [2026-01-20 08:33:58] iteration {:8d}/     206 | consumed samples: {:12d} | elapsed time "
        "per iteration (ms): {} | memory(GiB): 21.5 | elapsed time: 1m 7s | remaining time: 6h 0m "
        "4s | learning rate: 4.8E-06 | global batch size:    64 | lm loss: {} | loss scale: 1.0 | "
        "grad norm: 1.105 | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
        n, n * 64, ms, loss);
  };
  Result<ParsedLog> r = ParseMegatronLog(
      line(1, "200000.0", "1.5") + line(5, "100000.0", "1.2") + line(10, "99000.0", "1.1"),
      "s.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 3u);
  EXPECT_EQ(r->iterations[1].span, 4);
  EXPECT_EQ(r->iterations[1].ms, 100000.0);
  EXPECT_EQ(r->iterations[1].loss, 1.2);
  EXPECT_EQ(r->iterations[2].span, 5);
  EXPECT_TRUE(r->notes.empty());
  EXPECT_EQ(*r->peak_memory_bytes, 21.5 * 1024 * 1024 * 1024);
}

TEST(Paddle, EvalLossAtTheRecordOfItsEpoch) {
  // The Trainer logs a step's record, then evaluates at the same step (same epoch): the eval is
  // at that step. An evaluation whose epoch is not the last record's is at an unknown step.
  auto step = [](int n, const char* epoch) {
    return fmt::format(
        "[I] - loss: 1.5, learning_rate: 1e-05, global_step: {}, interval_runtime: 2.0, "
        "interval_samples_per_second: 4.0, interval_steps_per_second: 5.0, epoch: {}\n",
        n, epoch);
  };
  const std::string eval =
      "[I] - eval_loss: 0.75, eval_accuracy: 0.6, eval_runtime: 1.5, epoch: 0.25\n";
  Result<ParsedLog> r = ParsePaddleLog(step(10, "0.25") + eval + step(20, "0.5") + eval, "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->evals.size(), 2u);
  EXPECT_EQ(r->evals[0].step, 10);
  EXPECT_EQ(r->evals[0].value, 0.75);
  EXPECT_EQ(r->evals[0].line, 2);
  EXPECT_EQ(r->evals[1].step, 0);  // epoch 0.25 after step 20's 0.5
  EXPECT_EQ(r->eval_what, "the PaddleNLP Trainer's eval_loss");
  r = ParsePaddleLog(step(10, "0.25") + "[I] - eval_loss: abc, eval_runtime: 1.5, epoch: 0.25\n",
                     "p.log");
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "p.log:2: 'eval_loss' is 'abc', not a number");
}

TEST(Paddle, OptimizerNotRunWarningsAreTheNextRecordsSkippedSteps) {
  // fp16: one `optimizer not run` warning per overflowed step, counted in the record that
  // follows; a count over the record's steps (a warning printed twice) is capped at its span.
  auto step = [](int n) {
    return fmt::format(
        "[I] - loss: 1.5, learning_rate: 1e-05, global_step: {}, interval_runtime: 2.0, "
        "interval_samples_per_second: 4.0, interval_steps_per_second: 5.0, epoch: 0.5\n",
        n);
  };
  const std::string warn = "[W] - optimizer not run, scale_before: 2.0, scale_after: 1.0\n";
  Result<ParsedLog> r = ParsePaddleLog(
      step(10) + warn + warn + step(20) + step(30) + warn + warn + warn + step(32), "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 4u);
  EXPECT_EQ(r->iterations[0].skipped, 0);
  EXPECT_EQ(r->iterations[1].skipped, 2);
  EXPECT_EQ(r->iterations[2].skipped, 0);
  EXPECT_EQ(r->iterations[3].span, 2);
  EXPECT_EQ(r->iterations[3].skipped, 2);
}

TEST(Paddle, TimedSaveRestartsTheClockAndTheClosingLineGivesWallTime) {
  // PaddleFormers times a logged step's save and restarts the interval's clock after it: the
  // evaluation and save before step 20's record are not in its 2.0 s. The closing line gives
  // wall_s; its value must parse.
  auto step = [](int n) {
    return fmt::format(
        "[I] - loss: 1.5, learning_rate: 1e-05, global_step: {}, interval_runtime: 2.0, "
        "interval_samples_per_second: 40.0, interval_steps_per_second: 5.0, epoch: 0.5\n",
        n);
  };
  const std::string eval = "[I] - eval_loss: 0.75, eval_runtime: 1.5, epoch: 0.5\n";
  const std::string save = "[I] - Saving model checkpoint to ./out/checkpoint-10\n";
  const std::string timed =
      "[I] - is_persistent_ckpt: 1, save_ckpt_time_sec: 3.5, global_save_step: 10\n";
  Result<ParsedLog> r = ParsePaddleLog(
      step(10) + eval + save + timed + step(20) +
          "[I] - train_runtime: 9.25, train_samples_per_second: 17.3, train_loss: 1.5\n",
      "p.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 2u);
  EXPECT_EQ(r->iterations[1].ms, 200.0);  // 1 / 5 steps/s, not less the 1.5 s evaluation
  EXPECT_TRUE(r->notes.empty()) << r->notes.front();
  EXPECT_EQ(r->wall_s, 9.25);
  r = ParsePaddleLog(step(10) + "[I] - train_runtime: abc, train_samples_per_second: 1.0\n",
                     "p.log");
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "p.log:2: 'train_runtime' is 'abc', not a number");
}

TEST(TrainerDicts, LlamaFactoryJsonlNamesItsStepAndNullLoss) {
  // LLaMA-Factory's trainer_log.jsonl (LogCallback.on_log): current_steps, `lr` since 2024-11.
  Result<ParsedLog> r = ParseAutoLog(
      "{\"current_steps\": 5, \"total_steps\": 10, \"loss\": 1.5, \"lr\": 2e-05, "
      "\"epoch\": 0.5}\n"
      "{\"current_steps\": 10, \"total_steps\": 10, \"loss\": null, \"eval_loss\": null, "
      "\"learning_rate\": null, \"epoch\": 1.0}\n",
      "trainer_log.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "trainer");
  ASSERT_EQ(r->iterations.size(), 1u);  // the null-loss line is no record
  EXPECT_EQ(r->iterations[0].step, 5);
  EXPECT_EQ(*r->iterations[0].lr, 2e-05);
}

TEST(Torchtitan, ResumedRunReplacesRecordsFromItsStart) {
  // The newest trainer line (tokens per train step, since 2026-08) and a 2-D mesh: 2 x 2 = 4
  // devices, 16384 / 4 = 4096 tokens per device per step. The run resumes at step 16 (a
  // checkpoint of step 15): its step 20 replaces the first run's and spans steps 16-20.
  const std::string text =
      "[rank0]:[titan] 2026-08-21 10:00:00,000 - root - INFO - Building 2-D device mesh with "
      "['dp_shard', 'tp'], [2, 2]\n"
      "[rank0]:[titan] 2026-08-21 10:00:01,000 - root - INFO - Trainer is initialized with 4096 "
      "tokens per DP rank, 16384 tokens per train step, gradient accumulation steps 2, maximum "
      "context length 2048, total steps 30 (warmup 2)\n"
      "[rank0]:[titan] 2026-08-21 10:00:01,000 - root - INFO - Training starts at step 1\n"
      "[rank0]:[titan] 2026-08-21 10:00:05,000 - root - INFO - step:  1  loss: 10.50000  "
      "grad_norm:  2.0000  memory:  3.00GiB(5.00%)  tps: 1,024  tflops: 1.00  mfu: 1.00%\n"
      "[rank0]:[titan] 2026-08-21 10:00:14,000 - root - INFO - step: 10  loss:  8.00000  "
      "grad_norm:  1.0000  memory:  4.50GiB(7.00%)  tps: 4,096  tflops: 4.00  mfu: 4.00%\n"
      "[rank0]:[titan] 2026-08-21 10:00:24,000 - root - INFO - step: 20  loss:  7.00000  "
      "grad_norm:  1.0000  memory:  4.50GiB(7.00%)  tps: 4,096  tflops: 4.00  mfu: 4.00%\n"
      "[rank0]:[titan] 2026-08-21 11:00:00,000 - root - INFO - Loading the checkpoint from "
      "./outputs/checkpoint/step-15.\n"
      "[rank0]:[titan] 2026-08-21 11:00:01,000 - root - INFO - Training starts at step 16\n"
      "[rank0]:[titan] 2026-08-21 11:00:10,000 - root - INFO - step: 20  loss:  6.90000  "
      "grad_norm:  1.0000  memory:  4.00GiB(6.00%)  tps: 2,048  tflops: 2.00  mfu: 2.00%\n"
      "[rank0]:[titan] 2026-08-21 11:00:20,000 - root - INFO - step: 30  loss:  6.00000  "
      "grad_norm:  1.0000  memory:  4.00GiB(6.00%)  tps: 4,096  tflops: 4.00  mfu: 4.00%\n";
  Result<ParsedLog> log = ParseAutoLog(text, "x.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->format, "torchtitan");
  ASSERT_EQ(log->iterations.size(), 4u);
  EXPECT_EQ(log->restarts, 1);
  EXPECT_EQ(FactOf(*log, "devices"), 4);
  EXPECT_EQ(FactOf(*log, "dp"), 2);
  EXPECT_EQ(FactOf(*log, "tp"), 2);
  EXPECT_EQ(FactOf(*log, "mpe"), 2048);
  const Iteration& first = log->iterations[0];
  EXPECT_EQ(first.span, 1);
  EXPECT_EQ(first.ms, 4000.0);  // 4096 tokens / 1,024 tokens/s
  EXPECT_EQ(log->iterations[1].span, 9);
  EXPECT_EQ(log->iterations[1].ms, 1000.0);
  const Iteration& resumed = log->iterations[2];
  EXPECT_EQ(resumed.step, 20);
  EXPECT_EQ(resumed.loss, 6.9);  // the resumed run's, line 9
  EXPECT_EQ(resumed.line, 9);
  EXPECT_EQ(resumed.span, 5);  // steps 16-20
  EXPECT_EQ(resumed.ms, 2000.0);
  EXPECT_EQ(resumed.grad_norm, 1.0);
  EXPECT_EQ(resumed.tokens_per_device_per_s, 2048.0);
  EXPECT_EQ(log->iterations[3].span, 10);
  EXPECT_EQ(log->peak_memory_bytes, 4.5 * 1024 * 1024 * 1024);
}

TEST(Torchtitan, RanksColorsValidationAndTheParallelismLine) {
  // Two ranks print every line, in color (ESC[..m; the registry's Uncoloured), rank 1's "Training
  // starts" after rank 0's step 1 (no new run); rank 1's step 2 differs in tps only. The mesh line
  // of 2025-10 on: pp 2 x dp_shard 2 x cp 2 x tp 2 = 16 devices, dp 2. Global batch 8 x sequence
  // length 4096 / 16 = 2048 tokens per device per step.
  const std::string text =
      "[rank0]:[titan] 2026-03-01 10:00:00,000 - root - INFO - Building device mesh with "
      "parallelism: pp=2, dp_replicate=1, dp_shard=2, cp=2, tp=2, ep=1, etp=1\n"
      "[rank0]:[titan] 2026-03-01 10:00:01,000 - root - INFO - Trainer is initialized with local "
      "batch size 4, global batch size 8, gradient accumulation steps 1, sequence length 4096, "
      "total steps 2 (warmup 1)\n"
      "[rank0]:[titan] 2026-03-01 10:00:01,500 - root - INFO - Training starts at step 1\n"
      "[rank0]:[titan] 2026-03-01 10:00:02,000 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: "
      "11.00000  \x1b[38;2;180;60;0mgrad_norm:  3.0000  \x1b[36mmemory: 20.00GiB(25.00%)  "
      "\x1b[34mtps: 512  \x1b[36mtflops: 1.00  \x1b[35mmfu: N/A\x1b[39m\n"
      "[rank1]:[titan] 2026-03-01 10:00:01,501 - root - INFO - Training starts at step 1\n"
      "[rank1]:[titan] 2026-03-01 10:00:02,000 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: "
      "11.00000  \x1b[38;2;180;60;0mgrad_norm:  3.0000  \x1b[36mmemory: 21.00GiB(26.25%)  "
      "\x1b[34mtps: 512  \x1b[36mtflops: 1.00  \x1b[35mmfu: N/A\x1b[39m\n"
      "[rank0]:[titan] 2026-03-01 10:00:03,000 - root - INFO - \x1b[31mstep:  2  \x1b[32mloss: "
      "10.00000  \x1b[38;2;180;60;0mgrad_norm:  2.0000  \x1b[36mmemory: 20.00GiB(25.00%)  "
      "\x1b[34mtps: 2,048  \x1b[36mtflops: 4.00  \x1b[35mmfu: N/A\x1b[39m\n"
      "[rank1]:[titan] 2026-03-01 10:00:03,000 - root - INFO - \x1b[31mstep:  2  \x1b[32mloss: "
      "10.00000  \x1b[38;2;180;60;0mgrad_norm:  2.0000  \x1b[36mmemory: 20.00GiB(25.00%)  "
      "\x1b[34mtps: 2,047  \x1b[36mtflops: 4.00  \x1b[35mmfu: N/A\x1b[39m\n"
      "[rank0]:[titan] 2026-03-01 10:00:04,000 - root - INFO - \x1b[33mvalidate step:  2  "
      "\x1b[32mloss:  9.5000  \x1b[36mmemory: 20.00GiB(25.00%)  \x1b[34mtps: 9,000\x1b[39m\n"
      "[rank1]:[titan] 2026-03-01 10:00:04,000 - root - INFO - \x1b[33mvalidate step:  2  "
      "\x1b[32mloss:  9.5000  \x1b[36mmemory: 20.00GiB(25.00%)  \x1b[34mtps: 9,001\x1b[39m\n";
  // Through the registry, which takes the colour codes out for every format.
  Result<ParsedLog> log = FindLogParser("auto")->parse(text, "x.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->format, "torchtitan");
  EXPECT_EQ(FactOf(*log, "devices"), 16);
  EXPECT_EQ(FactOf(*log, "dp"), 2);
  EXPECT_EQ(FactOf(*log, "pp"), 2);
  ASSERT_EQ(log->iterations.size(), 2u);
  EXPECT_EQ(log->iterations[1].line, 7);  // rank 0's, the first printed
  EXPECT_EQ(log->iterations[1].tokens_per_device_per_s, 2048.0);
  EXPECT_EQ(log->iterations[1].ms, 1000.0);
  EXPECT_EQ(log->iterations[1].samples, 8.0);
  EXPECT_EQ(log->iterations[1].grad_norm, 2.0);
  EXPECT_EQ(log->restarts, 0);
  EXPECT_EQ(log->peak_memory_bytes, 21.0 * 1024 * 1024 * 1024);  // rank 1's, line 6
  ASSERT_EQ(log->evals.size(), 1u);
  EXPECT_EQ(log->evals[0].step, 2);
  EXPECT_EQ(log->evals[0].value, 9.5);
  EXPECT_NE(std::find(log->notes.begin(), log->notes.end(),
                      "x.log:6: 2 records of steps already read (other ranks' lines) left out: "
                      "the first printed is kept"),
            log->notes.end());
}

TEST(Torchtitan, PipelinePlaceholderLossAndMemoryNotKept) {
  // Pipeline parallelism, LOG_RANK=0,3: rank 0 (first stage) prints the placeholder loss
  // (-1.0000; -2.00000 once summed over 2 data-parallel ranks, 2026), rank 3 (last stage) the
  // loss. Step 1: rank 0's line first, rank 3's gives the loss; step 2: rank 3's first.
  // Step 3 has rank 0's line only: no loss. Every memory is 0.00GiB: nothing measured.
  const std::string text =
      "[rank0]:[titan] 2026-03-01 10:00:02,000 - root - INFO - step:  1  loss: -1.00000  "
      "grad_norm:  3.0000  memory:  0.00GiB(0.00%)  tps: 512  tflops: 1.00  mfu: 0.10%\n"
      "[rank3]:[titan] 2026-03-01 10:00:02,000 - root - INFO - step:  1  loss: 11.00000  "
      "grad_norm:  3.0000  memory:  0.00GiB(0.00%)  tps: 512  tflops: 1.00  mfu: 0.10%\n"
      "[rank3]:[titan] 2026-03-01 10:00:03,000 - root - INFO - step:  2  loss: 10.00000  "
      "grad_norm:  2.0000  memory:  0.00GiB(0.00%)  tps: 2,048  tflops: 4.00  mfu: 0.40%\n"
      "[rank0]:[titan] 2026-03-01 10:00:03,000 - root - INFO - step:  2  loss: -2.00000  "
      "grad_norm:  2.0000  memory:  0.00GiB(0.00%)  tps: 2,048  tflops: 4.00  mfu: 0.40%\n"
      "[rank0]:[titan] 2026-03-01 10:00:04,000 - root - INFO - step:  3  loss: -1.00000  "
      "grad_norm:  2.0000  memory:  0.00GiB(0.00%)  tps: 2,048  tflops: 4.00  mfu: 0.40%\n";
  Result<ParsedLog> log = ParseAutoLog(text, "x.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->format, "torchtitan");
  ASSERT_EQ(log->iterations.size(), 3u);
  EXPECT_EQ(log->iterations[0].line, 1);
  EXPECT_EQ(log->iterations[0].loss, 11.0);  // rank 3's, line 2
  EXPECT_EQ(log->iterations[1].loss, 10.0);
  EXPECT_FALSE(log->iterations[2].loss);
  EXPECT_EQ(log->iterations[2].tokens_per_device_per_s, 2048.0);
  EXPECT_FALSE(log->peak_memory_bytes);
  auto has_note = [&](std::string_view part) {
    return std::any_of(log->notes.begin(), log->notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(has_note("x.log:1: 3 line(s) print a negative loss"));
  EXPECT_TRUE(has_note("1 record(s) have no loss: no last-stage rank's line for their step"));
  EXPECT_TRUE(has_note("every 'memory:' is 0.00GiB"));
}

TEST(Torchtitan, WpsLinesOf2024AverageTheirLoss) {
  // train.py before November 2024 printed `wps` (the same per-device rate) and the mean loss of
  // the steps since the previous line (losses_since_last_log, until 2fa6d83).
  Result<ParsedLog> log = ParseAutoLog(
      "[rank0]:2024-10-01 10:00:00,000 - root - INFO - step:  1  loss: 10.8000  memory:  "
      "5.70GiB(6.00%)  wps: 1,234  mfu: 0.50%\n"
      "[rank0]:2024-10-01 10:00:10,000 - root - INFO - step: 10  loss:  9.1000  memory:  "
      "6.20GiB(6.50%)  wps: 5,678  mfu: 2.50%\n",
      "x.log");
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->format, "torchtitan");
  ASSERT_EQ(log->iterations.size(), 2u);
  EXPECT_EQ(log->iterations[1].loss, 9.1);
  EXPECT_EQ(log->iterations[1].span, 9);
  EXPECT_EQ(log->iterations[1].tokens_per_device_per_s, 5678.0);
  EXPECT_EQ(log->peak_memory_bytes, 6.2 * 1024 * 1024 * 1024);
  EXPECT_NE(std::find(log->notes.begin(), log->notes.end(),
                      "x.log:1: 'wps' lines (torchtitan before November 2024): each record's loss "
                      "is the mean over the steps since the previous line"),
            log->notes.end());
}

TEST(Torchtitan, MfuPerRecordAndWhatTheLinesSayOfIt) {
  // Three lines: a number, `N/A`, a number past 100% after get_peak_flops' fallback warning and
  // a Float8 converter's line (torchtitan before f113706 printed a number with Float8 too).
  const std::string log =
      "[titan] 2025-05-13 18:27:50,000 - root - WARNING - Peak flops undefined for: NVIDIA "
      "B200, fallback to A100\n"
      "[titan] 2025-05-13 18:27:50,001 - root - INFO - Peak FLOPS used for computing MFU: "
      "3.120e+14\n"
      "[titan] 2025-05-13 18:27:51,000 - root - INFO - Float8 training active with recipe "
      "rowwise\n"
      "[titan] 2025-05-13 18:27:58,957 - root - INFO - step:  1  loss: 12.2382  memory: "
      "30.54GiB(17.12%)  tps: 691  tflops: 40.00  mfu: 12.82%\n"
      "[titan] 2025-05-13 18:28:00,000 - root - INFO - step:  2  loss: 11.0000  memory: "
      "30.54GiB(17.12%)  tps: 9,000  tflops: 500.00  mfu: N/A\n"
      "[titan] 2025-05-13 18:28:05,743 - root - INFO - step: 10  loss:  9.8639  memory: "
      "38.04GiB(21.32%)  tps: 10,866  tflops: 629.32  mfu: 201.71%```\n";
  Result<ParsedLog> r = ParseTorchtitanLog(log, "x.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->iterations.size(), 3u);
  EXPECT_DOUBLE_EQ(*r->iterations[0].mfu, 0.1282);
  EXPECT_FALSE(r->iterations[1].mfu);               // `N/A`
  EXPECT_DOUBLE_EQ(*r->iterations[2].mfu, 2.0171);  // the markdown fence after `%` is not read
  EXPECT_FALSE(r->stated_mfu);  // a window's figure is records_mfu.h's, where the warm-up is known
  auto note = [&](std::string_view part) {
    return std::any_of(r->notes.begin(), r->notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(note("x.log:5: 1 training line(s) print 'mfu: N/A'"));
  EXPECT_TRUE(note("x.log:2: torchtitan's mfu divides by 312 TFLOP/s per device"));
  EXPECT_TRUE(note(", 2 a number: only those give the stated MFU"));
  EXPECT_TRUE(note("x.log:1: torchtitan's peak table does not know the device ('NVIDIA B200')"));
  EXPECT_TRUE(note("x.log:6: mfu 201.71% is above 100%"));
  EXPECT_TRUE(note("x.log:3: Float8/MX layers and a numeric mfu"));

  Result<ParsedLog> bad = ParseTorchtitanLog(
      "[titan] 2026-03-01 10:00:02,000 - root - INFO - step:  1  loss:  9.00000  grad_norm:  "
      "1.0000  memory:  1.00GiB(1.00%)  tps: 1,000  tflops: 1.00  mfu: high\n",
      "x.log");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "x.log:1: torchtitan's 'mfu' is 'high', not a percentage or N/A");

  // This fuzzing round (a byte of the device's name that is no UTF-8, reduced): the note quoted
  // the name's raw bytes, and writing metrics.json (which holds the notes) threw nlohmann's
  // type_error 316.
  r = ParseTorchtitanLog(
      "[titan] 2025-05-13 18:27:50,000 - root - WARNING - Peak flops undefined for: NVIDIA "
      "B\xb1"
      "00, fallback to A100\n"
      "[titan] 2025-05-13 18:27:58,957 - root - INFO - step:  1  loss: 12.2382  memory: "
      "30.54GiB(17.12%)  tps: 691  tflops: 40.00  mfu: 12.82%\n",
      "x.log");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NO_THROW(nlohmann::json(r->notes).dump());
  EXPECT_TRUE(
      note("x.log:1: torchtitan's peak table does not know the device ('NVIDIA "
           "B\xef\xbf\xbd"
           "00')"));
}

TEST(Torchtitan, MfuOverRecordsWeighsEachRecordByItsTime) {
  // Steps 1 (warm-up), 2-10 at 40% (span 9), 11-20 at 20% (span 10), 21-30 N/A: the window past
  // one warm-up step spends 9 / 0.4 + 10 / 0.2 = 72.5 step-times for 19 steps.
  std::vector<Iteration> its(4);
  const int64_t steps[] = {1, 10, 20, 30}, spans[] = {1, 9, 10, 10};
  for (size_t i = 0; i < its.size(); ++i) {
    its[i].step = steps[i];
    its[i].span = spans[i];
    its[i].line = static_cast<int64_t>(i) + 1;
  }
  its[0].mfu = 0.1;
  its[1].mfu = 0.4;
  its[2].mfu = 0.2;
  std::optional<RecordsMfu> w = MfuOverRecords(its, 1);
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->value, 19 / (9 / 0.4 + 10 / 0.2));
  EXPECT_EQ(w->first_step, 2);
  EXPECT_EQ(w->last_step, 20);
  EXPECT_EQ(w->records, 2);
  EXPECT_EQ(w->left_out, 1);
  EXPECT_EQ(w->line, 3);
  // A warm-up of 5 leaves out the record of steps 2-10 whole (its span reaches into it).
  w = MfuOverRecords(its, 5);
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->value, 0.2);
  EXPECT_EQ(w->first_step, 11);
  EXPECT_FALSE(MfuOverRecords(its, 20));  // only step 21-30's N/A is left
}

TEST(Torchtitan, BadInputNamesTheLine) {
  constexpr std::string_view kOk =
      "[titan] 2026-03-01 10:00:02,000 - root - INFO - step:  1  loss:  9.00000  grad_norm:  "
      "1.0000  memory:  1.00GiB(1.00%)  tps: 1,000  tflops: 1.00  mfu: 1.00%\n";
  Result<ParsedLog> loss = ParseTorchtitanLog(
      std::string(kOk) +
          "[titan] 2026-03-01 10:00:03,000 - root - INFO - step:  2  loss:  abc  grad_norm:  "
          "1.0000  memory:  1.00GiB(1.00%)  tps: 1,000  tflops: 1.00  mfu: 1.00%\n",
      "x.log");
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.status().message(), "x.log:2: torchtitan's 'loss' is 'abc', not a number");
  Result<ParsedLog> memory = ParseTorchtitanLog(
      std::string(kOk) +
          "[titan] 2026-03-01 10:00:03,000 - root - INFO - step:  2  loss:  8.00000  grad_norm:  "
          "1.0000  memory:  1.00MiB(1.00%)  tps: 1,000  tflops: 1.00  mfu: 1.00%\n",
      "x.log");
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.status().message(),
            "x.log:2: torchtitan's 'memory' is '1.00MiB(1.00%)', not a number");
  Result<ParsedLog> mesh = ParseTorchtitanLog(
      "[titan] 2026-03-01 10:00:00,000 - root - INFO - Building device mesh with parallelism: "
      "pp=1, dp_replicate=1, dp_shard=x, cp=1, tp=1, ep=1\n" +
          std::string(kOk),
      "x.log");
  ASSERT_FALSE(mesh.ok());
  EXPECT_EQ(mesh.status().message(), "x.log:1: the device mesh line gives no degree 'dp_shard'");
  Result<ParsedLog> batch = ParseTorchtitanLog(
      "[titan] 2026-03-01 10:00:00,000 - root - INFO - Trainer is initialized with local batch "
      "size 8, global batch size ?, sequence length 2048, total steps 10 (warmup 2)\n" +
          std::string(kOk),
      "x.log");
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().message(),
            "x.log:1: 'global batch size' is followed by '?', not a number");
  Result<ParsedLog> only_eval = ParseTorchtitanLog(
      "[titan] 2026-01-16 02:42:36,857 - root - INFO - validate step:  1  loss: 12.4699  memory: "
      "69.81GiB(88.17%)  tps: 74,599\n",
      "x.log");
  ASSERT_FALSE(only_eval.ok());
  EXPECT_EQ(only_eval.status().message().rfind(
                "x.log: no torchtitan training lines ('step: N  loss: X  ...  memory: M "
                "GiB(P%)  tps: T  ...') in 1 lines (only 'validate step' evaluation lines)",
                0),
            0u)
      << only_eval.status().message();
  // A last line cut off mid-way: its unterminated tps is left out, the complete fields kept.
  Result<ParsedLog> cut = ParseTorchtitanLog(
      std::string(kOk) +
          "[titan] 2026-03-01 10:00:03,000 - root - INFO - step:  2  loss:  8.00000  grad_norm:  "
          "1.0000  memory:  1.00GiB(1.00%)  tps: 1,0",
      "x.log");
  ASSERT_TRUE(cut.ok()) << cut.status().message();
  ASSERT_EQ(cut->iterations.size(), 2u);
  EXPECT_EQ(cut->iterations[1].loss, 8.0);
  EXPECT_FALSE(cut->iterations[1].tokens_per_device_per_s);
}

// A format that prints no count of NaN steps (here torchtitan, every 10 steps, then every step):
// each record with a NaN or Inf loss counts one, and the note says the spanning one's count is a
// lower bound; Megatron's own count is not counted again (its lines print `number of nan
// iterations`).
TEST(Registry, NonFiniteLossesAreNanIterationsInEveryFormat) {
  const std::string titan =
      "[titan] 2025-06-16 22:30:50,322 - root - INFO - step: 10  loss:  6.1384  memory: "
      "49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%\n"
      "[titan] 2025-06-16 22:31:04,970 - root - INFO - step: 20  loss:     nan  memory: "
      "49.66GiB(52.28%)  tps: 5,593  tflops: 323.92  mfu: 32.75%\n"
      "[titan] 2025-06-16 22:31:18,934 - root - INFO - step: 21  loss:     inf  memory: "
      "49.66GiB(52.28%)  tps: 5,868  tflops: 339.82  mfu: 34.36%\n";
  Result<ParsedLog> t = FindLogParser("torchtitan")->parse(titan, "t.log");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->iterations.size(), 3u);
  EXPECT_EQ(t->iterations[0].nan, 0);
  EXPECT_EQ(t->iterations[1].nan, 1);  // step 20, spanning 11-20
  EXPECT_EQ(t->iterations[2].nan, 1);  // step 21
  bool noted = false;
  for (const std::string& n : t->notes)
    noted = noted || n == "loss: 2 record(s) from t.log:2 (step 20) have a NaN or Inf loss: "
                          "counted as NaN iterations, one each (1 of them span several steps "
                          "whose losses the log does not show one by one: a lower bound)";
  EXPECT_TRUE(noted);
  const std::string megatron =
      " iteration        1/      10 | elapsed time per iteration (ms): 100.0 | learning rate: "
      "1.000E-04 | global batch size:     8 | lm loss: nan | loss scale: 1.0 | number of skipped "
      "iterations:   0 | number of nan iterations:   1 |\n";
  Result<ParsedLog> m = FindLogParser("megatron")->parse(megatron, "m.log");
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->iterations.size(), 1u);
  EXPECT_EQ(m->iterations[0].nan, 1);
  for (const std::string& n : m->notes) EXPECT_EQ(n.find("counted as NaN iterations"), n.npos) << n;
}

TEST(Registry, FormatsByName) {
  ASSERT_NE(FindLogParser("megatron"), nullptr);
  EXPECT_EQ(FindLogParser("flagscale")->parse, FindLogParser("megatron")->parse);
  EXPECT_EQ(FindLogParser("deepspeed")->default_warmup_steps, 2);
  EXPECT_EQ(FindLogParser("megatron")->default_warmup_steps, 1);
  EXPECT_EQ(FindLogParser("nemo")->default_warmup_steps, 1);
  EXPECT_EQ(FindLogParser("nemo2"), nullptr);
  EXPECT_EQ(FindLogParser("paddle")->default_warmup_steps, 10);
  EXPECT_EQ(FindLogParser("torchtitan")->default_warmup_steps, 1);
  EXPECT_EQ(FindLogParser("torchtune")->default_warmup_steps, 1);
  EXPECT_EQ(FindLogParser("nanotron")->default_warmup_steps, 1);
  EXPECT_EQ(FindLogParser("maxtext")->default_warmup_steps, 3);
  EXPECT_EQ(LogParserNames(),
            "auto, deepspeed, flagperf, flagscale, litgpt, maxtext, megatron, mllog, nanotron, "
            "nemo, paddle, torchtitan, torchtune, trainer");
}

}  // namespace
}  // namespace bm::logparse
