// DeepSpeed's log lines (deepspeed/runtime/engine.py `_report_progress`,
// deepspeed/utils/timer.py `ThroughputTimer.stop`, every `steps_per_print`
// steps), the loss lines training scripts print beside them, the Hugging
// Face Trainer's log dicts (rules/logparse/trainer_dicts.h), and DeepSpeed's
// configuration print at start-up:
//
//   [2024-03-05 10:12:33,456] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0,
//     lr=[9.99e-05], mom=[(0.9, 0.95)]
//   [2024-03-05 10:12:33,457] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10,
//     RunningAvgSamplesPerSec=7.95, CurrSamplesPerSec=8.01, MemAllocated=15.2GB,
//     MaxMemAllocated=28.4GB
//   Step 10/1000, Loss: tensor(7.1234, device='cuda:0', grad_fn=<DivBackward0>)
//   [INFO] [config.py:988:print]   train_batch_size ............. 8
//
// A pipeline-parallel engine (PipelineEngine.train_batch) prints its own line after the step's
// `step=N` line, `steps: N loss: 1.9161 iter time (s): 0.580 samples/sec: 441.545`: N's loss (that
// step's batch only), and the time per step averaged since the last print (ms = 1000 x it) with
// train_batch_size over it. It is a print(), so DeepSpeed >= 0.17's WARNING level, which hides
// the `step=` lines, keeps it.
// The timer line's older shapes name no global step: `0/20,
// RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...` (July 2022 to 0.7.x) and
// `0/40, SamplesPerSec=..., MemAllocated=...` (before; SamplesPerSec is then
// the running average, and 0/N counts the epoch's steps). Such a line belongs
// to the step of the engine's `step=N` line before it, else to N.
// A loss line is any other line with a step ("step 10", "Step 10/1000",
// "step=10", "global_step: 10") and a loss ("loss: 2.3", "Loss=2.3",
// "loss: tensor(2.3"), case-insensitive: the first of each, except that a global step wins over
// any other step of the line (a script's `Epoch 0, Step 9, Global Step 10, Loss: x`, whose Step
// counts the epoch's batches from 0 and whose Global Step the optimizer's steps); a loss line
// without a step ("[Rank 0] Loss: 10.8766", DeepSpeedExamples' HelloDeepSpeed)
// belongs to the engine's last `step=N` line when that step has no loss yet
// and the loss is the message's first key (DeepSpeed-Chat's evaluation print
// "chosen: x, rejected: y, loss: z", step2_dpo_finetuning/main.py, is not a
// training loss), and no bracket of counters comes just before it (PyTorch's CIFAR-10
// tutorial print "[2,  3000] loss: 1.203", epoch and batch in epoch, which DeepSpeedExamples'
// cifar10_deepspeed.py keeps: left out, with a note). "loss" is a name: not act_loss, nor a metric
// in another's namespace (veRL's PPO line `step:34 - ... - actor/loss:0.04 - ...`: an RL step's
// actor objective), except train/ (veRL's SFT line `step:1 - train/loss:0.8078 - ...`). A loss
// whose line names an evaluation before it (torchtitan's `validate step: 1  loss: 12.4699`,
// "Validation Loss: 3.1") is no training loss: left out, with a note. Steps are 1-based: the
// engine's start-up `step=0` line makes no record; loss lines whose first is at step 0 count from 0
// (a script's `enumerate`), and each is read as the step after its number. `skipped` is DeepSpeed's
// running count; a record gets the increase since the previous progress line (the first line's
// whole count only when its record reaches back to step 1: an excerpt from mid-run does not say
// where the earlier skips fell); in a log without them, each fp16 overflowed step ("[deepspeed]
// OVERFLOW! Rank 0 Skipping step.", without ZeRO "[Rank 0] Overflow detected. Skipping step." or
// every rank's "[deepspeed] fp16 dynamic loss scale overflow! Skipping step.",
// rules/logparse/deepspeed_overflow.h) is a skipped step of the first record after it. A `step=N`
// line right after one for the same N is a second engine's (DeepSpeed-Chat step 3 runs an actor and
// a critic engine, each with its own count): the first is kept. DeepSpeed-Chat's PPO lines, `epoch:
// 0|step: S|ppo_ep: 1|act_loss: x|cri_loss: y|...` (step3_rlhf_finetuning/main.py), give nothing,
// with a note: S counts prompt batches from 0 (enumerate), each trained for ppo_epochs x its
// experience batches optimizer steps of both engines, and act_loss is the actor's PPO policy loss
// averaged over them. Every rank may print the timer line: per step, the first value of each field
// wins. RunningAvgSamplesPerSec at the last report is DeepSpeed's own average over every step after
// its first two (ThroughputTimer start_step = 2): the trainer average. From 0.17 DeepSpeed logs at
// WARNING and steps_per_print is None by default, so a default run prints none of its own lines:
// only the Trainer's dicts are left, timed by the closing train_samples_per_second. A script may
// number its loss lines with its own counter: SLAM-LLM's "Training Epoch: 1/10, step 1100 lr ...
// completed (loss: x, ...)" counts micro-batches (deepspeed_utils.py,
// `enumerate(train_dataloader)`), so under gradient accumulation its step runs ahead of the
// engine's (`step=600`, `micro_step=1200/global_step=600`). A counter of each epoch's batches
// (TRACE's `Epoch 2, Step 0, Loss: x`, starting again in every epoch) gives no optimizer step after
// its first epoch: from the first loss line whose epoch is later and whose step is not past the
// last one, the loss lines are left out, with a note. When most engine step lines that follow a
// loss line show a step below that loss line's, the loss lines are not numbered by optimizer steps:
// their losses are left out, with a note. Precision: `bfloat16_enabled` / `fp16_enabled` (before
// 0.17.1), `bfloat16_config ... enabled=True` / `float16_config ... enabled=True` (after).
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rules/logparse/deepspeed_flops_profile.h"
#include "rules/logparse/deepspeed_overflow.h"
#include "rules/logparse/deepspeed_progress.h"
#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/trainer_dicts.h"
#include "rules/logparse/wrapped_lines.h"

namespace bm::logparse {
namespace {

bool WordStart(std::string_view line, size_t at) {
  return at == 0 ||
         !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
}

// The integer a counter's name ending at `p` gives: spaces or quotes, '=' or ':', spaces or
// quotes, then the integer (a number ending in a digit).
std::optional<double> CountAfter(std::string_view line, size_t p) {
  auto skip = [&](size_t q) {
    while (q < line.size() && (line[q] == ' ' || line[q] == '\'' || line[q] == '"')) ++q;
    return q;
  };
  p = skip(p);
  if (p < line.size() && (line[p] == '=' || line[p] == ':')) p = skip(p + 1);
  size_t end = 0;
  std::string_view rest = line.substr(p);
  std::optional<double> n = LeadingNumber(rest, &end);
  if (n && end > 0 && std::isdigit(static_cast<unsigned char>(rest[end - 1]))) return n;
  return std::nullopt;
}

// The counter `word` of a line ("step", "epoch") as a word, or "global_step" (not "micro_step",
// not "steps_per_print"), then its integer (CountAfter): the first such counter.
std::optional<double> CounterNumber(std::string_view line, std::string_view word) {
  for (size_t at = FindNoCase(line, word); at != std::string_view::npos;
       at = FindNoCase(line, word, at + 1)) {
    const bool global = word == "step" && at >= 7 && line.substr(at - 7, 7) == "global_";
    if (!WordStart(line, at) && !global) continue;
    if (std::optional<double> n = CountAfter(line, at + word.size())) return n;
  }
  return std::nullopt;
}

// The global step a line names, "Global Step 10" or "global_step=10" (any case), as a word:
// nullopt when it names none.
std::optional<double> GlobalStepNumber(std::string_view line) {
  constexpr std::string_view kGlobal = "global";
  constexpr std::string_view kStep = "step";
  for (size_t at = FindNoCase(line, kGlobal); at != std::string_view::npos;
       at = FindNoCase(line, kGlobal, at + 1)) {
    const size_t step_at = at + kGlobal.size() + 1;
    if (!WordStart(line, at) || step_at + kStep.size() > line.size() ||
        (line[step_at - 1] != ' ' && line[step_at - 1] != '_') ||
        FindNoCase(line.substr(step_at, kStep.size()), kStep) != 0)
      continue;
    if (std::optional<double> n = CountAfter(line, step_at + kStep.size())) return n;
  }
  return std::nullopt;
}

// A loss line's step: its global step where it names one (a script's `Epoch 0, Step 9, Global
// Step 10, Loss: x` numbers the epoch's batches from 0 as Step), else its first step counter.
std::optional<double> StepNumber(std::string_view line) {
  if (std::optional<double> global = GlobalStepNumber(line)) return global;
  return CounterNumber(line, "step");
}

const char* const kFacts[][2] = {
    {"train_batch_size", "gbs"},
    {"train_micro_batch_size_per_gpu", "lbs"},
    {"gradient_accumulation_steps", "gas"},
    {"world_size", "dp"},
};

const char* const kPrecisions[][2] = {
    {"bfloat16_enabled", "bf16"}, {"bf16_enabled", "bf16"},   {"fp16_enabled", "fp16"},
    {"bfloat16_config", "bf16"},  {"float16_config", "fp16"},
};

// "True" (the *_enabled lines) or a config object printed as
// "enabled=True immediate_grad_update=False ..." (the *_config lines).
bool Enabled(std::string_view value) {
  return value == "True" || value.rfind("enabled=True", 0) == 0;
}

// The old timer line's "E/N, " before `key`: N, or nullopt.
std::optional<double> EpochStep(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos || at < 4 || line.substr(at - 2, 2) != ", ") return std::nullopt;
  size_t slash = line.rfind('/', at);
  if (slash == std::string_view::npos) return std::nullopt;
  return ParseNumber(line.substr(slash + 1, at - 2 - slash - 1));
}

// Whether the name before the '/' ending at `at` is "train" (veRL's SFT trainer prints
// `step:1 - train/loss:0.8078 - ...`): the training loss's own namespace.
bool TrainNamespace(std::string_view line, size_t at) {
  constexpr std::string_view kTrain = "train/";
  if (at < kTrain.size() || FindNoCase(line.substr(at - kTrain.size(), kTrain.size()), kTrain) != 0)
    return false;
  return NameStartsAt(line, at - kTrain.size());
}

// Where "loss" starts as a name (not act_loss, train_loss, veRL's PPO actor/loss or its val/loss:
// NameStartsAt; train/loss is) followed by spaces or quotes and ':' or '=', case-insensitive; npos
// if nowhere.
size_t LossKey(std::string_view line) {
  for (size_t at = FindNoCase(line, "loss"); at != std::string_view::npos;
       at = FindNoCase(line, "loss", at + 1)) {
    if (!NameStartsAt(line, at) && !TrainNamespace(line, at)) continue;
    size_t p = at + 4;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\'' || line[p] == '"')) ++p;
    if (p < line.size() && (line[p] == ':' || line[p] == '=')) return at;
  }
  return std::string_view::npos;
}

// Whether the words before `at` name an evaluation (torchtitan's "validate step: 1  loss: 12.4699",
// a script's "Validation Loss: 2.3"): its loss is not a training loss.
bool EvalBefore(std::string_view line, size_t at) {
  static constexpr std::string_view kWords[] = {"val",        "valid", "validate", "validation",
                                                "validating", "eval",  "evaluate", "evaluation",
                                                "evaluating", "test",  "testing"};
  size_t p = 0;
  while (p < at) {
    while (p < at && !std::isalpha(static_cast<unsigned char>(line[p]))) ++p;
    size_t end = p;
    while (end < at && std::isalpha(static_cast<unsigned char>(line[end]))) ++end;
    std::string word(line.substr(p, end - p));
    for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::string_view w : kWords)
      if (word == w) return true;
    p = end;
  }
  return false;
}

// The value after the whole-word loss key at `at` ("loss: tensor(2.3", "Loss=2.3").
std::optional<double> LossValue(std::string_view line, size_t at) {
  return NumberAfter(line.substr(at), "loss", "=:");
}

// A key before `at` in the message: a name ending in a letter, then ':' or '='
// ("chosen: 0.0, rejected: 0.0, loss: ..."). The message starts after the
// last ']' before `at`, so a prefix ("[Rank 0]", "__main__:log_dist:54 - [Rank 0]")
// and a timestamp's digits before ':' are not keys.
bool KeyBefore(std::string_view line, size_t at) {
  size_t start = line.rfind(']', at);
  start = start == std::string_view::npos ? 0 : start + 1;
  for (size_t p = start; p < at; ++p) {
    if (line[p] != ':' && line[p] != '=') continue;
    size_t q = p;
    while (q > start && line[q - 1] == ' ') --q;
    if (q > start && std::isalpha(static_cast<unsigned char>(line[q - 1]))) return true;
  }
  return false;
}

// A loss printed without a step: "[Rank 0] Loss: 10.8766" (HelloDeepSpeed's
// training print), when the loss is the message's first key. DeepSpeed-Chat's
// evaluation print "chosen: 0.0, rejected: 0.0, loss: 0.6934"
// (step2_dpo_finetuning/main.py, after "***** Evaluating rewards") puts its
// eval loss third: not a training loss.
std::optional<double> StepLessLoss(std::string_view line) {
  size_t at = LossKey(line);
  if (at == std::string_view::npos || KeyBefore(line, at) || EvalBefore(line, at))
    return std::nullopt;
  return LossValue(line, at);
}

// PyTorch's CIFAR-10 tutorial print, which DeepSpeedExamples' cifar10_deepspeed.py keeps:
// `print("[%d, %5d] loss: %.3f" % (epoch + 1, i + 1, running_loss / N))`, "[2,  3000] loss:
// 1.203": its own epoch and batch-in-epoch counters in the bracket before the loss, the mean of
// the last N batches; not at the engine's last step.
bool EpochBatchLoss(std::string_view line) {
  const size_t at = LossKey(line);
  if (at == std::string_view::npos) return false;
  const size_t close = line.rfind(']', at);
  const size_t open = close == std::string_view::npos ? close : line.rfind('[', close);
  if (open == std::string_view::npos || !Trim(line.substr(close + 1, at - close - 1)).empty())
    return false;
  const std::string_view inside = line.substr(open + 1, close - open - 1);
  const size_t comma = inside.find(',');
  return comma != std::string_view::npos && !Trim(inside.substr(0, comma)).empty() &&
         !Trim(inside.substr(comma + 1)).empty() &&
         inside.find_first_not_of("0123456789, ") == std::string_view::npos;
}

// PipelineEngine.train_batch's print (deepspeed/runtime/pipe/engine.py, rank 0, every
// steps_per_print steps), "steps: 110 loss: 1.9161 iter time (s): 0.580 samples/sec: 441.545"
// (from 2024 with `name: value ` of further losses before "iter time"): the step (global_steps,
// after it), the loss of that step's batch (agg_train_loss, its micro-batches' mean), the seconds
// per step since the last print (the train_batch timer's elapsed(reset=True) / steps_per_print)
// and train_batch_size over them.
struct PipeProgress {
  int64_t step = 0;
  double loss = 0;
  double ms = 0;
  std::optional<double> samples_per_s;
};
std::optional<PipeProgress> PipeLine(std::string_view line) {
  constexpr std::string_view kSteps = "steps: ";
  const size_t at = line.find(kSteps);
  if (at == std::string_view::npos || (at > 0 && line[at - 1] != ' ')) return std::nullopt;
  std::string_view rest = line.substr(at + kSteps.size());
  size_t end = 0;
  std::optional<int64_t> step = WholeCount(LeadingNumber(rest, &end));
  if (!step || !rest.substr(end).starts_with(" loss: ")) return std::nullopt;
  std::optional<double> loss = NumberAfter(rest, "loss", ":");
  std::optional<double> secs = NumberAfter(rest, "iter time (s)", ":");
  if (!loss || !secs) return std::nullopt;
  return PipeProgress{*step, *loss, *secs * 1000.0, NumberAfter(rest, "samples/sec", ":")};
}

// A step a line gives and where.
struct StepAt {
  int64_t step = 0;
  int64_t line = 0;
};

// The first loss line whose step runs ahead of the engine's next step line, when most engine
// step lines that follow a loss line do (see the top); nullopt otherwise. Both in line order.
std::optional<std::pair<StepAt, StepAt>> LossStepsAhead(const std::vector<StepAt>& losses,
                                                        const std::vector<StepAt>& engine) {
  std::optional<std::pair<StepAt, StepAt>> first;
  int pairs = 0, ahead = 0;
  size_t l = 0;
  for (const StepAt& e : engine) {
    // The last loss line before this engine line and after the previous one.
    std::optional<StepAt> last;
    while (l < losses.size() && losses[l].line < e.line) last = losses[l++];
    if (!last) continue;
    ++pairs;
    if (last->step <= e.step) continue;
    ++ahead;
    if (!first) first = std::pair{*last, e};
  }
  if (ahead * 2 <= pairs) return std::nullopt;
  return first;
}

}  // namespace

bool IsDeepSpeedLine(std::string_view line) {
  if (line.find("RunningAvgSamplesPerSec=") != std::string_view::npos) return true;
  // The engine's wall_clock_breakdown timers (engine.py, `self.timers.log` of its
  // FORWARD_MICRO_TIMER
  // ... names, and of fwd/bwd/step at steps_per_print): `time (ms) | fwd_microstep: 654.24 | ...`,
  // a script's own loss lines beside them when steps_per_print prints nothing else.
  if (line.find("time (ms) | fwd_microstep: ") != std::string_view::npos ||
      line.find("time (ms) | optimizer_allgather: ") != std::string_view::npos)
    return true;
  if (PipeLine(line) || IsDeepSpeedOverflowLine(line)) return true;
  if (line.find(", SamplesPerSec=") != std::string_view::npos)
    return EpochStep(line, "SamplesPerSec=").has_value();
  return ReadDeepSpeedProgress(line) && line.find("lr=") != std::string_view::npos;
}

Result<ParsedLog> ParseDeepSpeedLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "deepspeed";
  std::map<int64_t, Iteration> steps;
  int64_t last_skipped_total = 0;
  StepAt first_skipped{0, 0};  // the first step line's step and line, when its count is > 0
  int64_t first_skipped_total = 0, step_lines = 0;
  double peak_gb = -1;
  std::optional<int64_t> engine_step;  // the last `step=N` line's N
  int64_t ppo_line = 0;                // DeepSpeed-Chat's first PPO line, left out
  int64_t epoch_batch_line = 0;        // the first "[E, N] loss: x" line, left out
  int64_t eval_line = 0;               // the first evaluation's "validate step: N  loss: x" line
  TrainerDictReader dicts;
  std::vector<StepAt> engine_lines, loss_lines;  // for LossStepsAhead
  DeepSpeedOverflows overflows;                  // the loss scale's skipped steps
  FlopsProfileReader profile;                    // the flops profiler's summary
  std::map<int64_t, bool> loss_line_steps;       // step -> whether its loss line made the record
  int64_t zero_based_line = 0;                   // a first loss line at step 0
  std::optional<double> last_loss_epoch;         // the last loss line's epoch, when it names one
  int64_t epoch_counter_line =
      0;  // the first loss line whose epoch restarts its step, and that step
  int64_t epoch_counter_step = 0;
  auto at_step = [&](int64_t step, int64_t line) -> Iteration& {
    Iteration& it = steps[step];
    if (it.line == 0) {
      it.step = step;
      it.line = line;
    }
    return it;
  };
  auto set = [](std::optional<double>& field, std::optional<double> v) {
    if (!field && v) field = v;
  };
  // A timer line: its step's rate, the running average, the memory.
  auto timer = [&](std::string_view line, int64_t no, int64_t step, const char* avg_key,
                   const char* what) {
    Iteration& it = at_step(step, no);
    set(it.samples_per_s, NumberAfter(line, "CurrSamplesPerSec", "="));
    std::optional<double> avg = NumberAfter(line, avg_key, "=");
    if (avg && std::isfinite(*avg) && *avg > 0 &&
        (!log.trainer_average || log.trainer_average->through_step < step)) {
      TrainerAverage a;
      a.samples_per_s = avg;
      a.excluded_steps = 2;
      a.through_step = step;
      a.line = no;
      a.what = what;
      log.trainer_average = a;
    }
    std::optional<double> gb = NumberAfter(line, "MaxMemAllocated", "=");
    if (gb && *gb > peak_gb) peak_gb = *gb;
  };
  Status error = Status::Ok();
  // A Trainer dict a terminal copy hard-wrapped is read joined (trainer_dicts.h).
  bool failed = false;
  const UnwrappedRead read = ForEachUnwrappedLine(
      text, TrainerDictCompletion, StopsTrainerDictPieces,
      [&](std::string_view line, int64_t no) {
        dicts.ReadBar(line, no);  // the Trainer's bar (trainer_dicts.h)
        if (overflows.Read(line, no)) return;
        // The flops profiler's summary: its lines name a step and numbers but are no record.
        Result<bool> summary = profile.Read(line, no, name);
        if (!summary.ok() || *summary) {
          if (!summary.ok()) {
            error = summary.status();
            failed = true;
          }
          return;
        }
        if (std::optional<int64_t> n = OverflowOptimizerStep(line)) {
          engine_lines.push_back({*n, no});  // an optimizer step count, for LossStepsAhead
          return;
        }
        if (line.find("RunningAvgSamplesPerSec=") != std::string_view::npos) {
          std::optional<int64_t> step = WholeCount(NumberAfter(line, "global_step", "="));
          if (!step) step = WholeCount(EpochStep(line, "RunningAvgSamplesPerSec="));
          if (!step) return;
          const int64_t s = line.find("global_step") == std::string_view::npos && engine_step
                                ? *engine_step
                                : *step;
          if (line.find("global_step") != std::string_view::npos) engine_lines.push_back({s, no});
          timer(line, no, s, "RunningAvgSamplesPerSec",
                "DeepSpeed's RunningAvgSamplesPerSec (ThroughputTimer, steps after the first 2)");
          return;
        }
        if (line.find(", SamplesPerSec=") != std::string_view::npos) {
          std::optional<int64_t> step = WholeCount(EpochStep(line, "SamplesPerSec="));
          if (!step) return;
          timer(line, no, engine_step.value_or(*step), "SamplesPerSec",
                "DeepSpeed's SamplesPerSec (ThroughputTimer before 0.7: the running average of the "
                "steps after the first 2)");
          return;
        }
        if (line.find(", skipped=") != std::string_view::npos) {
          std::optional<DeepSpeedProgress> progress = ReadDeepSpeedProgress(line);
          if (!progress) return;
          const int64_t n = progress->step;
          if (n <= 0) return;  // the engine's start-up print (step=0), before any optimizer step
          // A second engine's line for the same step (DeepSpeed-Chat's PPO critic after its
          // actor): its own running count, not this run's; the first line's count is kept.
          if (engine_step == n) return;
          engine_step = n;
          engine_lines.push_back({n, no});
          dicts.SawStep(n);
          Iteration& it = at_step(n, no);
          set(it.lr, NumberAfter(line, "lr", "="));
          const int64_t total = progress->skipped;
          if (++step_lines == 1 && total > 0) {
            first_skipped = {n, no};
            first_skipped_total = total;
          }
          if (total >= last_skipped_total) it.skipped = total - last_skipped_total;
          last_skipped_total = total;
          return;
        }
        if (std::optional<PipeProgress> p = PipeLine(line)) {
          if (p->step <= 0) return;
          Iteration& it = at_step(p->step, no);
          set(it.loss, p->loss);
          set(it.ms, p->ms);
          set(it.samples_per_s, p->samples_per_s);
          return;
        }
        for (const auto& f : kFacts) {
          if (std::optional<std::string_view> v = DottedArg(line, f[0])) {
            if (std::optional<double> n = ParseNumber(*v)) SetFact(log, f[1], *n, no);
            return;
          }
        }
        for (const auto& p : kPrecisions) {
          if (std::optional<std::string_view> v = DottedArg(line, p[0])) {
            if (Enabled(*v) && log.precision.empty()) {
              log.precision = p[1];
              log.precision_line = no;
            }
            return;
          }
        }
        Result<bool> dict = dicts.ReadLine(line, no, name, steps, log);
        if (!dict.ok()) {
          error = dict.status();
          failed = true;
          return;
        }
        if (*dict) return;
        if (dicts.ReadResume(line, no, steps, log) || dicts.ReadSetting(line)) return;
        if (line.find("Saving model checkpoint to ") != std::string_view::npos) dicts.SawSave(no);
        std::optional<double> step = StepNumber(line);
        if (!step) {
          if (EpochBatchLoss(line)) {
            if (!epoch_batch_line) epoch_batch_line = no;
            return;
          }
          std::optional<double> loss = StepLessLoss(line);
          if (loss && engine_step && !at_step(*engine_step, no).loss)
            at_step(*engine_step, no).loss = loss;
          return;
        }
        if (line.find("|act_loss: ") != std::string_view::npos) {
          if (!ppo_line) ppo_line = no;
          return;
        }
        size_t at = LossKey(line);
        if (at != std::string_view::npos && EvalBefore(line, at)) {
          if (!eval_line) eval_line = no;
          return;
        }
        std::optional<double> loss =
            at == std::string_view::npos ? std::nullopt : LossValue(line, at);
        const std::optional<int64_t> whole = WholeCount(*step);
        if (!loss || !whole || epoch_counter_line) return;
        // A step counter that starts again in a later epoch (TRACE's `Epoch 2, Step 0, Loss: x`, an
        // `enumerate` over each epoch's batches) is the epoch's own: the optimizer steps of this
        // line and the ones after are not known.
        std::optional<double> epoch = CounterNumber(line, "epoch");
        if (epoch && last_loss_epoch && *epoch > *last_loss_epoch && !loss_lines.empty() &&
            *step + (zero_based_line ? 1 : 0) <= loss_lines.back().step) {
          epoch_counter_line = no;
          epoch_counter_step = *whole;
          return;
        }
        if (epoch) last_loss_epoch = epoch;
        // A first loss line at step 0 (TUNiB's tutorial: `print(f"step:{i}, loss:{loss}")` over
        // `enumerate(data_loader)`) numbers from 0: its steps are one below the optimizer's.
        if (*step == 0 && loss_lines.empty() && !zero_based_line) zero_based_line = no;
        if (*step == 0 && !zero_based_line) return;
        const int64_t n = *whole + (zero_based_line ? 1 : 0);
        const bool created = steps.count(n) == 0;
        Iteration& it = at_step(n, no);
        if (!it.loss) loss_line_steps.emplace(n, created);
        set(it.loss, loss);
        loss_lines.push_back({n, no});
      },
      &failed, kTrainerDictPieces);
  log.lines = read.lines;
  BM_TRY(error);
  if (read.joined > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} Trainer dict(s) hard-wrapped over several lines (a terminal copy) read joined",
        name, read.first_joined, read.joined));
  }
  if (zero_based_line) {
    log.notes.push_back(fmt::format(
        "{}:{}: the loss lines count steps from 0 (their first is step 0): each is read as the "
        "optimizer step after its number",
        name, zero_based_line));
  }
  std::string counter_note;  // for the error below: the loss lines' own counter
  if (std::optional<std::pair<StepAt, StepAt>> ahead = LossStepsAhead(loss_lines, engine_lines)) {
    for (auto [n, created] : loss_line_steps) {
      Iteration& it = steps[n];
      it.loss.reset();
      if (created && !it.lr && !it.samples_per_s && it.skipped == 0) steps.erase(n);
    }
    log.notes.push_back(fmt::format(
        "{}:{}: the loss lines number their steps with the script's own counter, not the "
        "optimizer's: step {} there, yet DeepSpeed's next count of optimizer steps ({}:{}, a "
        "step line or an fp16 'Grad overflow on iteration N') is step {} (micro-batches under "
        "gradient accumulation count ahead); their losses are left out",
        name, ahead->first.line, ahead->first.step, name, ahead->second.line, ahead->second.step));
    counter_note = fmt::format(
        "; its loss lines count the script's own steps, not the optimizer's (line {}: step {}, "
        "yet line {} counts optimizer step {}), and are left out",
        ahead->first.line, ahead->first.step, ahead->second.line, ahead->second.step);
  }
  dicts.Finish(name, steps, log);  // steps the dicts' epochs or anchors give (trainer_dicts.h)
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no DeepSpeed step lines ('step=N, skipped=K, lr=[...]', "
                  "'global_step=N, RunningAvgSamplesPerSec=...'), loss lines ('step N ... "
                  "loss: X') or Trainer log dicts ('{{'loss': X, ...}}') in {} lines{}{}",
                  name, log.lines, OtherFormatHint(text, "deepspeed"), counter_note);
  }
  FillSpansFromGaps(log.iterations);
  dicts.InferUnstatedResume(name, log);  // the Trainer's closing dict (trainer_dicts.h)
  dicts.TokensFromCounts(name, log);     // TRL's num_tokens (trainer_num_tokens.cc)
  dicts.TimeFromElapsed(name, log);      // ms-swift's elapsed time (trainer_elapsed.h)
  // Without progress lines, the overflow lines are the skipped steps (their running count
  // says the same where there are).
  if (step_lines == 0) overflows.Count(name, log);
  // The first step line's count runs from the run's start: its record holds it only when the
  // record reaches back to step 1 (an excerpt from mid-run: they fell somewhere before).
  for (Iteration& it : log.iterations) {
    if (first_skipped.line == 0 || it.step != first_skipped.step || it.span >= it.step) continue;
    it.skipped = 0;
    log.notes.push_back(fmt::format(
        "{}:{}: skipped={} counts the run's skipped steps from its start, and the log begins "
        "after step 1: not attributed to the steps it shows",
        name, first_skipped.line, first_skipped_total));
  }
  if (epoch_batch_line) {
    log.notes.push_back(fmt::format(
        "{}:{}: '[epoch, batch] loss: x' lines (PyTorch's CIFAR-10 tutorial print: the mean over "
        "the last batches, numbered by the script's epoch and batch in epoch) left out: they are "
        "not at DeepSpeed's step lines",
        name, epoch_batch_line));
  }
  if (epoch_counter_line) {
    log.notes.push_back(fmt::format(
        "{}:{}: the loss lines count their steps within each epoch (a later epoch starts again "
        "at step {}): the optimizer steps of this line and those after are not known, their "
        "losses are left out",
        name, epoch_counter_line, epoch_counter_step));
  }
  if (eval_line) {
    log.notes.push_back(fmt::format(
        "{}:{}: loss lines of an evaluation ('validate step: N  loss: x') left out: not a "
        "training loss",
        name, eval_line));
  }
  if (ppo_line) {
    log.notes.push_back(fmt::format(
        "{}:{}: DeepSpeed-Chat PPO lines ('epoch: E|step: S|ppo_ep: P|act_loss: x|cri_loss: "
        "y|...') left out: S counts prompt batches from 0, each trained ppo_epochs x its "
        "experience "
        "batches optimizer steps of both engines, and act_loss is the actor's PPO policy loss, "
        "not a training loss",
        name, ppo_line));
  }
  if (peak_gb >= 0) {
    log.peak_memory_bytes = peak_gb * 1024.0 * 1024.0 * 1024.0;
    log.memory_source = "MaxMemAllocated (DeepSpeed ThroughputTimer)";
  }
  // The Trainer dicts' memory (axolotl, ms-swift) when DeepSpeed's is absent.
  dicts.ReportMemory(name, log);
  profile.Report(name, log);  // the flops profiler's FLOPS per GPU (deepspeed_flops_profile.h)
  return log;
}

}  // namespace bm::logparse
