// PaddleNLP's step lines, in its two shapes:
//
// the Trainer (paddlenlp/trainer/trainer.py `_maybe_log_save_evaluate`, every
// logging_steps; speed_metrics("interval", ...) over the interval's steps):
//   [2025-05-18 10:13:15,607] [    INFO] - loss: 12.05887604, learning_rate: 3e-06,
//   global_step: 2, current_memory_allocated: 7.54, ..., max_memory_reserved: 12.48,
//   interval_runtime: 0.2556, interval_samples_per_second: 3.913,
//   interval_tokens_per_second_per_device: 4006.9441, ..., interval_steps_per_second: 3.913,
//   progress_or_epoch: 0.0                                                    (one line)
// and the model zoo's run_pretrain.py (GPT-3 and others, every logging_freq):
//   global step 10, epoch: 0, batch: 9, loss: 9.871234561, avg_reader_cost: 0.00012 sec,
//   avg_batch_cost: 0.51234 sec, speed: 1.95 step/s, ips_total: 63963 tokens/s,
//   ips: 7995 tokens/s, learning rate: 2.50000e-06                             (one line)
// or, in ERNIE-1.0's run_pretrain.py (speed = steps/s over the logging_freq steps, ips =
// speed x global_batch_size):
//   global step 2, loss: 6.191119, lm_loss: 5.423231, sop_loss: 0.767889, speed: 3.45 steps/s,
//   ips: 27.60 seqs/s, learning rate: 4.00000e-07, loss_scaling: 1024.00, ... (one line)
// or PaddleMIX's benchmark line (avg_batch_cost = 1 / interval_steps_per_second, avg_samples one
// device's batch, memory in MiB):
//   global step 95 / 22140, loss: 1.780640, avg_reader_cost: 0.00027 sec, avg_batch_cost: 0.67439
//   sec, avg_samples: 64.00000, ips: 94.90068 sample/sec, max_mem_reserved: 26397 MB, ... (one
//   line)
//
// ERNIEKit's Trainer (PaddlePaddle/ERNIE erniekit/train/*/pretraining_trainer.py) prints the first
// shape with speed_metrics("global", ...) over the interval (total batch x steps), memory as
// max_mem_reserved_gb (/ 2^30), loss_scale and tokens_per_sec_per_card. PaddleNLP's Trainer of 2022
// (trainer_base.py) passed one device's batch x accumulation as the interval's samples, so its
// ratio is batch / span: the `Total train batch size (...) = B` line, where there is one, gives the
// batch (a note when the ratio disagrees). The Trainer restarts the interval's clock before it
// evaluates and saves: an eval_runtime between two records is taken out of the next one's time.
//
// Per record: the step, the loss (the interval's mean), lr, the time per step
// (1 / interval_steps_per_second, or avg_batch_cost), the samples per step
// (interval_samples_per_second over interval_steps_per_second), the token rate
// as printed: per device (interval_tokens_per_second_per_device) or over all
// devices (ips_total; `ips` in tokens/s is not read, since some scripts leave it undivided
// by the ranks). ERNIE's line gives the time per step as 1 / speed and the samples per step
// as ips / speed (both printed to two decimals: the samples are taken, rounded to a whole
// sequence, only where that rounding cannot be off by one). Memory: the largest max_memory_reserved
// (GiB: PaddleNLP divides by 2^30), else max_memory_allocated. A record spans the steps since the
// previous one. The Trainer's evaluation line (`eval_loss: 0.8164, ..., eval_runtime: 54.9586,
// ..., epoch: 0.0163`, logged by evaluate() right after the step's record in the same
// _maybe_log_save_evaluate) gives an eval at that record's step, when its epoch is the record's
// (else at step 0: not known). With fp16 loss scaling the Trainer warns `optimizer not run,
// scale_before: S, scale_after: S/2` for each step whose gradients overflowed (trainer.py
// `_inner_training_loop`, before that step's record): those steps count as the next record's
// skipped steps. The closing `train_runtime: 158.453, train_samples_per_second: ..., train_loss:
// ...` (speed_metrics("train", ...) over the whole loop) gives the run's wall time. PaddleFormers'
// trainer (and ERNIEKit's) times a logged step's checkpoint save (`save_ckpt_time_sec: 11.34,
// global_save_step: 200, ...`) and restarts the clock after it: the next record is left as is.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// "global_step: 12" (Trainer) or "global step 12," (model zoo): 12.
std::optional<int64_t> PaddleStep(std::string_view line, bool* trainer_shape) {
  if (std::optional<double> n = NumberAfter(line, "global_step", ":")) {
    *trainer_shape = true;
    return WholeCount(*n);
  }
  size_t at = FindNoCase(line, "global step ");
  if (at == std::string_view::npos) return std::nullopt;
  *trainer_shape = false;
  size_t end = 0;
  std::string_view rest = line.substr(at + 12);
  std::optional<double> n = LeadingNumber(rest, &end);
  if (!n) return std::nullopt;
  // PaddleMIX's benchmark line names the step of max_steps: "global step 95 / 22140,".
  if (size_t slash = rest.find_first_not_of(' ', end);
      slash != std::string_view::npos && rest[slash] == '/') {
    std::string_view total = rest.substr(slash + 1);
    total.remove_prefix(std::min(total.find_first_not_of(' '), total.size()));
    size_t total_end = 0;
    if (!LeadingNumber(total, &total_end)) return std::nullopt;
    rest = total;
    end = total_end;
  }
  if (end >= rest.size() || rest[end] != ',') return std::nullopt;
  return WholeCount(*n);
}

// The model zoo's memory with its unit, in GiB: PaddleMIX's `max_mem_reserved: 26397 MB`
// (`max_memory_reserved() // (1024 ** 2)`) or `... GB`.
std::optional<double> ZooMemoryGib(std::string_view line, std::string_view key) {
  size_t at = FindKeyValue(line, key, ":");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at);
  rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  size_t end = 0;
  std::optional<double> n = LeadingNumber(rest, &end);
  if (!n) return std::nullopt;
  std::string_view unit = Trim(rest.substr(end, 3));
  if (unit == "MB") return *n / 1024.0;
  if (unit == "GB") return *n;
  return std::nullopt;
}

// The model zoo's shape names its rate as ips_total (tokens/s) or, ERNIE's, as
// `speed: S steps/s, ips: I seqs/s`, or times its step as avg_batch_cost (PaddleMIX's).
bool HasZooRate(std::string_view line) {
  return FindNoCase(line, "ips_total") != std::string_view::npos ||
         FindKeyValue(line, "avg_batch_cost", ":") != std::string_view::npos ||
         (FindNoCase(line, "steps/s") != std::string_view::npos &&
          FindNoCase(line, "seqs/s") != std::string_view::npos);
}

// The Trainer's shape names its interval's time as interval_runtime (PaddleNLP) or, ERNIEKit's,
// as global_runtime next to tokens_per_sec_per_card.
bool HasTrainerRate(std::string_view line) {
  return FindNoCase(line, "interval_runtime") != std::string_view::npos ||
         FindNoCase(line, "global_runtime") != std::string_view::npos ||
         FindNoCase(line, "tokens_per_sec_per_card") != std::string_view::npos;
}

// The number after "NAME = " in the Trainer's "***** Running training *****" block
// ("  Total train batch size (w. parallel, distributed & accumulation) = 8").
std::optional<double> SummaryValue(std::string_view line, std::string_view name) {
  size_t at = line.find(name);
  if (at == std::string_view::npos) return std::nullopt;
  size_t eq = line.find(" = ", at + name.size());
  if (eq == std::string_view::npos) return std::nullopt;
  std::string_view value = Trim(line.substr(eq + 3));
  size_t end = 0;  // the ERNIEKit trainer prints it with thousands separators
  std::optional<double> v = GroupedNumber(value, &end);
  if (!v || end != value.size()) return std::nullopt;
  return v;
}

}  // namespace

bool IsPaddleStepLine(std::string_view line) {
  bool trainer_shape = false;
  if (!PaddleStep(line, &trainer_shape)) return false;
  return trainer_shape ? HasTrainerRate(line) : HasZooRate(line);
}

Result<ParsedLog> ParsePaddleLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "paddle";
  double peak_gib = -1;
  bool reserved = false;
  const char* peak_source = "";
  Status error = Status::Ok();
  std::optional<double> gbs, lbs, gas;  // the "***** Running training *****" block
  std::optional<double> eval_s;         // an evaluation since the last record (eval_runtime)
  std::optional<double> last_epoch;     // the last record's epoch (progress_or_epoch)
  int64_t eval_line = 0, save_line = 0;
  int64_t not_run = 0;     // `optimizer not run` warnings since the last record
  std::string batch_note;  // the first record whose printed ratio disagrees with gbs
  std::vector<std::string> time_notes;
  // A complete "key: value," field of a recognised line whose value is not a number.
  auto field = [&](std::string_view line, int64_t no, std::string_view key) {
    std::optional<double> n = NumberAfter(line, key, ":");
    if (n || !error.ok()) return n;
    size_t p = FindKeyValue(line, key, ":");
    if (p == std::string_view::npos) return n;
    std::string_view rest = line.substr(p);
    size_t comma = rest.find(',');
    if (comma == std::string_view::npos) return n;  // a cut-off last line: left out
    error = Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is '{}', not a number", name, no, key,
                   Trim(rest.substr(0, comma)));
    return n;
  };
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    bool trainer_shape = false;
    std::optional<int64_t> step = PaddleStep(line, &trainer_shape);
    if (!step) {
      constexpr std::string_view kTotal =
          "Total train batch size (w. parallel, distributed & accumulation)";
      if (line.find(kTotal) != std::string_view::npos) {
        gbs = SummaryValue(line, kTotal);
        if (!gbs || *gbs <= 0) {
          error =
              Errorf(ErrorCode::kCorrupt, "{}:{}: 'Total train batch size' is '{}', not a number",
                     name, no, Trim(line.substr(line.rfind('=') + 1)));
          return;
        }
        SetFact(log, "gbs", *gbs, no);
      } else if (line.find("Instantaneous batch size per device") != std::string_view::npos) {
        lbs = SummaryValue(line, "Instantaneous batch size per device");
        if (lbs && *lbs > 0) SetFact(log, "lbs", *lbs, no);
      } else if (line.find("Gradient Accumulation steps") != std::string_view::npos) {
        gas = SummaryValue(line, "Gradient Accumulation steps");
        if (gas && *gas > 0) SetFact(log, "gas", *gas, no);
      } else if (FindKeyValue(line, "train_runtime", ":") != std::string_view::npos &&
                 FindKeyValue(line, "train_samples_per_second", ":") != std::string_view::npos) {
        log.wall_s = field(line, no, "train_runtime");  // the closing speed_metrics("train", ...)
      } else if (FindKeyValue(line, "eval_runtime", ":") != std::string_view::npos) {
        eval_s = field(line, no, "eval_runtime");
        eval_line = no;
        if (std::optional<double> loss = field(line, no, "eval_loss")) {
          std::optional<double> epoch = NumberAfter(line, "epoch", ":");
          const bool at_last =
              !log.iterations.empty() && (!epoch || !last_epoch || *epoch == *last_epoch);
          log.evals.push_back({at_last ? log.iterations.back().step : 0, *loss, no});
          log.eval_what = "the PaddleNLP Trainer's eval_loss";
        }
      } else if (line.find("Saving model checkpoint to") != std::string_view::npos) {
        save_line = no;
      } else if (FindKeyValue(line, "save_ckpt_time_sec", ":") != std::string_view::npos) {
        // PaddleFormers' (and ERNIEKit's) trainer times the save of a logged step and then restarts
        // the interval's clock: the next record holds neither that save nor the evaluation before.
        eval_s.reset();
        eval_line = save_line = 0;
      } else if (line.find("optimizer not run, scale_before") != std::string_view::npos) {
        ++not_run;
      }
      return;
    }
    std::optional<double> loss = NumberAfter(line, "loss", ":");
    const bool has_rate = trainer_shape ? HasTrainerRate(line) : HasZooRate(line);
    if (!loss && !has_rate) return;  // another line that names a global step
    Iteration it;
    it.step = *step;
    it.line = no;
    it.loss = loss;
    if (trainer_shape) {
      it.lr = NumberAfter(line, "learning_rate", ":");
      // PaddleNLP: interval_*; ERNIEKit: global_* over the same interval (speed_metrics("global",
      // ...) since the last log).
      const bool interval = FindNoCase(line, "interval_runtime") != std::string_view::npos;
      const std::string_view prefix = interval ? "interval" : "global";
      std::optional<double> sps = field(line, no, fmt::format("{}_steps_per_second", prefix));
      std::optional<double> samples_ps =
          field(line, no, fmt::format("{}_samples_per_second", prefix));
      std::optional<double> runtime = field(line, no, fmt::format("{}_runtime", prefix));
      // The steps of the interval, when runtime x steps/s is a whole number (both rounded).
      std::optional<double> steps;
      if (runtime && sps && *sps > 0) {
        const double n = std::round(*runtime * *sps);
        if (n >= 1 && std::abs(*runtime * *sps - n) < 0.05 * n) steps = n;
      }
      if (sps && *sps > 0) {
        // ERNIEKit prints steps/s to 4 decimals of a slow step (0.0095): its runtime is closer.
        it.ms = !interval && steps ? *runtime * 1000.0 / *steps : 1000.0 / *sps;
        if (eval_s && runtime && *runtime > *eval_s) {
          // The Trainer restarts the interval's clock before it evaluates and saves.
          it.ms = *it.ms * (1.0 - *eval_s / *runtime);
          time_notes.push_back(fmt::format(
              "{}:{}: the record at step {} leaves out the evaluation before it (line {}, "
              "eval_runtime {} s, inside its {}_runtime {} s){}",
              name, no, it.step, eval_line, *eval_s, prefix, *runtime,
              save_line > 0 ? fmt::format("; the checkpoint save at line {} is not timed by the "
                                          "log and stays in its time",
                                          save_line)
                            : ""));
        } else if (eval_line > 0 || save_line > 0) {
          time_notes.push_back(fmt::format(
              "{}:{}: the record at step {} includes the {} at line {} in its time (the log does "
              "not time it)",
              name, no, it.step, eval_line > 0 ? "evaluation" : "checkpoint save",
              eval_line > 0 ? eval_line : save_line));
        }
        if (samples_ps) {
          const double ratio = *samples_ps / *sps;
          if (gbs) {
            it.samples = gbs;
            if (std::abs(ratio - *gbs) > 0.01 * *gbs && batch_note.empty()) {
              const double per_device = lbs.value_or(0) * gas.value_or(1);
              const bool old = steps && per_device > 0 &&
                               std::abs(ratio * *steps - per_device) < 0.01 * per_device;
              batch_note = fmt::format(
                  "{}:{}: {}_samples_per_second / {}_steps_per_second is {:.4g} samples per step, "
                  "not the total train batch size {} (line {}){}; the batch is taken from that "
                  "line",
                  name, no, prefix, prefix, ratio, *gbs, log.facts["gbs"].line,
                  old ? fmt::format(": it is one device's batch x accumulation ({}) over the "
                                    "interval's {} steps, as PaddleNLP's Trainer of 2022 "
                                    "(trainer_base.py) computed it",
                                    per_device, *steps)
                      : "");
            }
          } else if (interval) {
            // The Trainer's interval samples are the total train batch x the steps: the ratio is
            // that batch, off a whole one only by the rounding of the two rates (4 decimals since
            // 2024: 5.4236 / 0.6779 = 8.0006). PaddleNLP 2.4's own ratio can be a fraction (one
            // device's batch over the steps): that stays.
            const double whole = std::round(ratio);
            const double rounding = (0.00005 / *sps + 0.00005 / *samples_ps) * ratio;
            it.samples = whole >= 1 && std::abs(ratio - whole) <= rounding ? whole : ratio;
          } else if (*samples_ps > 0 && (0.00005 / *sps + 0.00005 / *samples_ps) * ratio < 0.5) {
            it.samples = std::round(ratio);  // both printed to 4 decimals: a whole sequence
          }
        }
      }
      it.tokens_per_device_per_s = field(line, no, "interval_tokens_per_second_per_device");
      if (!it.tokens_per_device_per_s)
        it.tokens_per_device_per_s = field(line, no, "tokens_per_sec_per_card");
      it.loss_scale = field(line, no, "loss_scale");
      // The reserved figure where the log prints one, else the allocated one.
      const char* source = "max_memory_reserved (PaddleNLP Trainer)";
      std::optional<double> gib = field(line, no, "max_memory_reserved");
      if (!gib) {
        gib = field(line, no, "max_mem_reserved_gb");
        source = "max_mem_reserved_gb (ERNIEKit)";
      }
      if (gib) {
        if (!reserved) peak_gib = -1;  // an allocated peak read before gives way
        reserved = true;
      } else if (!reserved) {
        gib = field(line, no, "max_memory_allocated");
        source = "max_memory_allocated (PaddleNLP Trainer)";
        if (!gib) {
          gib = field(line, no, "max_mem_allocated_gb");
          source = "max_mem_allocated_gb (ERNIEKit)";
        }
      }
      if (gib && *gib > peak_gib) {
        peak_gib = *gib;
        peak_source = source;
      }
    } else {
      it.lr = NumberAfter(line, "learning rate", ":");
      if (std::optional<double> s = NumberAfter(line, "avg_batch_cost", ":")) it.ms = *s * 1000.0;
      it.tokens_per_s = NumberAfter(line, "ips_total", ":");
      std::optional<double> speed = NumberAfter(line, "speed", ":");
      std::optional<double> ips = NumberAfter(line, "ips", ":");
      if (!it.tokens_per_s && speed && *speed > 0 && ips && *ips > 0 &&
          FindNoCase(line, "seqs/s") != std::string_view::npos) {  // ERNIE's line
        if (!it.ms) it.ms = 1000.0 / *speed;
        const double samples = *ips / *speed;  // each printed to 0.01: bound the rounding
        if ((0.005 / *speed + 0.005 / *ips) * samples < 0.5) it.samples = std::round(samples);
      }
      // PaddleMIX's avg_samples is one device's batch (its train_batch_size): not read.
      const char* source = "max_mem_reserved (PaddleMIX)";
      std::optional<double> gib = ZooMemoryGib(line, "max_mem_reserved");
      if (gib) {
        if (!reserved) peak_gib = -1;
        reserved = true;
      } else if (!reserved) {
        gib = ZooMemoryGib(line, "max_mem_allocated");
        source = "max_mem_allocated (PaddleMIX)";
      }
      if (gib && *gib > peak_gib) {
        peak_gib = *gib;
        peak_source = source;
      }
    }
    it.skipped = not_run;
    not_run = 0;
    eval_s.reset();
    eval_line = save_line = 0;
    last_epoch = NumberAfter(line, "progress_or_epoch", ":");  // the Trainer's
    if (!last_epoch) last_epoch = NumberAfter(line, "epoch", ":");
    AddIteration(log.iterations, it, &log.restarts);
  });
  BM_TRY(error);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no PaddleNLP step lines ('loss: X, ..., global_step: N, ..., "
                  "interval_runtime: S, ...', ERNIEKit's '..., global_step: N, ..., "
                  "global_runtime: S, ...' or 'global step N, ..., loss: X, ..., ips_total: T "
                  "tokens/s, ...') in {} lines{}",
                  name, log.lines, OtherFormatHint(text, "paddle"));
  }
  FillSpansFromGaps(log.iterations);
  for (Iteration& it : log.iterations)
    it.skipped = std::min(it.skipped, it.span);  // a repeated warning
  if (!batch_note.empty()) log.notes.push_back(batch_note);
  for (std::string& n : time_notes) log.notes.push_back(std::move(n));
  if (peak_gib >= 0) {
    log.peak_memory_bytes = peak_gib * 1024.0 * 1024.0 * 1024.0;
    log.memory_source = peak_source;
  }
  DataParallelFromTotalBatch(log, name);  // the summary states no device count
  return log;
}

}  // namespace bm::logparse
