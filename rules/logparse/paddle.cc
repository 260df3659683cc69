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
// previous one.
#include <fmt/format.h>

#include <cmath>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// "global_step: 12" (Trainer) or "global step 12," (model zoo): 12.
std::optional<double> PaddleStep(std::string_view line, bool* trainer_shape) {
  if (std::optional<double> n = NumberAfter(line, "global_step", ":")) {
    *trainer_shape = true;
    return n;
  }
  size_t at = FindNoCase(line, "global step ");
  if (at == std::string_view::npos) return std::nullopt;
  *trainer_shape = false;
  size_t end = 0;
  std::string_view rest = line.substr(at + 12);
  std::optional<double> n = LeadingNumber(rest, &end);
  if (!n || end >= rest.size() || rest[end] != ',') return std::nullopt;
  return n;
}

// The model zoo's shape names its rate as ips_total (tokens/s) or, ERNIE's, as
// `speed: S steps/s, ips: I seqs/s`.
bool HasZooRate(std::string_view line) {
  return FindNoCase(line, "ips_total") != std::string_view::npos ||
         (FindNoCase(line, "steps/s") != std::string_view::npos &&
          FindNoCase(line, "seqs/s") != std::string_view::npos);
}

}  // namespace

bool IsPaddleStepLine(std::string_view line) {
  bool trainer_shape = false;
  if (!PaddleStep(line, &trainer_shape)) return false;
  return trainer_shape ? FindNoCase(line, "interval_runtime") != std::string_view::npos
                       : HasZooRate(line);
}

Result<ParsedLog> ParsePaddleLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "paddle";
  double peak_gib = -1;
  bool reserved = false;
  Status error = Status::Ok();
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    bool trainer_shape = false;
    std::optional<double> step = PaddleStep(line, &trainer_shape);
    if (!step) return;
    std::optional<double> loss = NumberAfter(line, "loss", ":");
    const bool has_rate = trainer_shape
                              ? FindNoCase(line, "interval_runtime") != std::string_view::npos
                              : HasZooRate(line);
    if (!loss && !has_rate) return;  // another line that names a global step
    Iteration it;
    it.step = static_cast<int64_t>(*step);
    it.line = no;
    it.loss = loss;
    if (trainer_shape) {
      it.lr = NumberAfter(line, "learning_rate", ":");
      std::optional<double> sps = NumberAfter(line, "interval_steps_per_second", ":");
      std::optional<double> samples_ps = NumberAfter(line, "interval_samples_per_second", ":");
      if (sps && *sps > 0) {
        it.ms = 1000.0 / *sps;
        if (samples_ps) it.samples = *samples_ps / *sps;
      }
      it.tokens_per_device_per_s = NumberAfter(line, "interval_tokens_per_second_per_device", ":");
      std::optional<double> gib = NumberAfter(line, "max_memory_reserved", ":");
      if (gib) {
        reserved = true;
      } else if (!reserved) {
        gib = NumberAfter(line, "max_memory_allocated", ":");
      }
      if (gib && *gib > peak_gib) peak_gib = *gib;
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
    }
    AddIteration(log.iterations, it, &log.restarts);
  });
  BM_TRY(error);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no PaddleNLP step lines ('loss: X, ..., global_step: N, ..., "
                  "interval_runtime: S, ...' or 'global step N, ..., loss: X, ..., ips_total: T "
                  "tokens/s, ...') in {} lines{}",
                  name, log.lines, OtherFormatHint(text, "paddle"));
  }
  FillSpansFromGaps(log.iterations);
  if (peak_gib >= 0) {
    log.peak_memory_bytes = peak_gib * 1024.0 * 1024.0 * 1024.0;
    log.memory_source = reserved ? "max_memory_reserved (PaddleNLP Trainer)"
                                 : "max_memory_allocated (PaddleNLP Trainer)";
  }
  return log;
}

}  // namespace bm::logparse
