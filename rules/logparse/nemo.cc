// NeMo 2's (and BioNeMo 2's) training lines, as the Lightning callback
// nemo/lightning/pytorch/callbacks/progress_printer.py `ProgressPrinter`
// prints them every `log_interval` steps:
//
//   Training epoch 0, iteration 45/99 | lr: 6.897e-06 | global_batch_size: 128 |
//   global_step: 45 | max_memory_reserved: 127785762816 | max_memory_allocated: ... |
//   reduced_train_loss: 11.96 | train_step_timing in s: 6.08 | TFLOPS_per_GPU: 1.249e+03 |
//   consumed_samples: 5888                                           (one line)
//
// The fields are what the step logged to Lightning, in `name: value` with
// four significant digits (`{val:.4}`, a whole float as an integer), and no
// `|` after the last. Their sources in NeMo (8cfedd7, September 2025):
// `global_step` is trainer.global_step in MegatronStrategy.training_step,
// before the optimizer step, so 0-based: the line is optimizer step
// global_step + 1 (consumed_samples, from MegatronDataSampler after the step,
// is (global_step + 1) × global_batch_size: 5888 = 46 × 128); `iteration N/M`
// is the completed-step count minus 1 (since 13ad2da, August 2024), the same
// number. `reduced_train_loss` is the step's loss; `train_step_timing in s` is
// TimingCallback's time from the batch's start to its end (nemo/utils/
// exp_manager.py), in seconds; `max_memory_reserved` (with
// NEMO_LOG_MEMORY_USAGE / log_memory_usage) is torch.cuda.max_memory_reserved()
// of the printing rank's device, in bytes; only global rank 0 prints
// (Lightning's ProgressBar.setup disables the bar on the other ranks).
// Every number except global_step is the mean over the log_interval steps
// since the previous line (the printer sums and divides by log_interval), so
// a record's span is the gap to the previous line; max_memory_reserved is
// then a mean of a running maximum, at most the peak. Before 710a3e2 (June 2025)
// MegatronStrategy logged the same torch.cuda.max_memory_reserved() as
// `peak_memory_usage` (beside `memory_allocated`, the current figure, not read).
// `tokens_per_sec_per_gpu` (TimingCallback with log_tokens_per_sec, from f0bf77b,
// January 2025: global batch x the batch's sequence length / world size / the step's
// time) is read as the printed per-device token rate. Other fields (val_loss
// carried from the last validation, TFLOPS_per_GPU, consumed_samples) are
// not read; `Validation: iteration N/M` lines neither.
//
// NeMo 1's Lightning training bar (`Epoch 0: ... 50/50 [..., reduced_train_loss=11.70,
// global_step=49.00, ...]`) is read too, by nemo_bar.h: a drawing is one step's values (span 1),
// its samples per step the growth of consumed_samples between two drawings. So are NeMo
// Automodel's `step N | epoch E | loss X | ... | mem M GiB | tps T(t/gpu) | ...` lines and their
// `[val]` lines, by nemo_automodel.h: step N + 1, its loss, grad_norm, lr and printed token rate
// over all devices; memory the largest `mem` (max allocated).
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/nemo_automodel.h"
#include "rules/logparse/nemo_bar.h"

namespace bm::logparse {
namespace {

// After "Training epoch E, iteration N/M": the iteration N and where the
// fields start (at the first `|`); npos if the line is not one.
size_t ProgressHeader(std::string_view line, int64_t* iteration) {
  constexpr std::string_view kEpoch = "Training epoch ";
  constexpr std::string_view kIteration = ", iteration ";
  size_t at = line.find(kEpoch);
  if (at == std::string_view::npos) return std::string_view::npos;
  std::string_view rest = line.substr(at + kEpoch.size());
  size_t end = 0;
  if (!LeadingNumber(rest, &end) || !rest.substr(end).starts_with(kIteration))
    return std::string_view::npos;
  rest.remove_prefix(end + kIteration.size());
  std::optional<double> n = LeadingNumber(rest, &end);
  if (!n || end >= rest.size() || rest[end] != '/') return std::string_view::npos;
  rest.remove_prefix(end + 1);
  if (!LeadingNumber(rest, &end)) return std::string_view::npos;
  size_t bar = rest.find_first_not_of(' ', end);
  if (bar == std::string_view::npos || rest[bar] != '|') return std::string_view::npos;
  *iteration = static_cast<int64_t>(*n);
  return static_cast<size_t>(rest.data() - line.data()) + bar + 1;
}

}  // namespace

bool IsNemoProgressLine(std::string_view line) {
  int64_t iteration = 0;
  size_t fields = ProgressHeader(line, &iteration);
  if (fields == std::string_view::npos) return false;
  std::string_view rest = line.substr(fields);
  return rest.find(" global_step: ") != std::string_view::npos ||
         rest.find(" reduced_train_loss: ") != std::string_view::npos;
}

bool IsNemoBarLine(std::string_view line) {
  Result<std::optional<NemoBar>> bar = ReadNemoBar(line, "", 0);
  return !bar.ok() || bar->has_value();
}

Result<ParsedLog> ParseNemoLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "nemo";
  Status error = Status::Ok();
  double peak = -1;
  std::map<int64_t, std::optional<double>> bar_consumed;  // NeMo 1 bars, by step
  int64_t rounded_line = 0, ahead_line = 0, ahead_by = 0;
  AutomodelReader automodel;
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    int64_t iteration = 0;
    size_t pos = ProgressHeader(line, &iteration);
    if (pos == std::string_view::npos) {
      const bool last_cut =
          line.data() + line.size() == text.data() + text.size() && !text.ends_with('\n');
      Result<bool> read = automodel.Read(line, no, name, last_cut, log);
      if (!read.ok()) {
        error = read.status();
        return;
      }
      if (*read) return;
      // A pasted terminal capture may show the carriage returns between drawings as the text
      // "^M": each piece is a drawing of its own.
      for (size_t from = 0; from <= line.size() && error.ok();) {
        size_t caret = line.find("^M", from);
        if (caret == std::string_view::npos) caret = line.size();
        Result<std::optional<NemoBar>> bar = ReadNemoBar(line.substr(from, caret - from), name, no);
        from = caret + 2;
        if (!bar.ok()) {
          error = bar.status();
        } else if (bar->has_value()) {
          const NemoBar& b = **bar;
          bar_consumed[b.it.step] = b.consumed_samples;
          if (b.step_rounded && rounded_line == 0) rounded_line = no;
          if (b.epoch0_batches && *b.epoch0_batches > b.it.step && ahead_line == 0) {
            ahead_line = no;
            ahead_by = *b.epoch0_batches - b.it.step;
          }
          AddIteration(log.iterations, b.it, &log.restarts);
        }
      }
      return;
    }
    // The last field ends the line; on a last line without its newline it may be cut off.
    const bool cut =
        line.data() + line.size() == text.data() + text.size() && !text.ends_with('\n');
    Iteration it;
    it.line = no;
    std::optional<double> global_step, reserved;
    while (pos < line.size()) {
      size_t bar = line.find('|', pos);
      if (bar == std::string_view::npos && cut) break;
      if (bar == std::string_view::npos) bar = line.size();
      std::string_view field = line.substr(pos, bar - pos);
      pos = bar + 1;
      size_t colon = field.rfind(':');
      if (colon == std::string_view::npos) continue;
      std::string_view key = Trim(field.substr(0, colon));
      std::string_view value = Trim(field.substr(colon + 1));
      std::optional<double>* target = nullptr;
      std::optional<double> ms_s;
      if (key == "reduced_train_loss") target = &it.loss;
      if (key == "lr") target = &it.lr;
      if (key == "global_batch_size") target = &it.samples;
      if (key == "global_step") target = &global_step;
      if (key == "max_memory_reserved" || key == "peak_memory_usage") target = &reserved;
      if (key == "tokens_per_sec_per_gpu") target = &it.tokens_per_device_per_s;
      if (key == "train_step_timing in s") target = &ms_s;
      if (target == nullptr) continue;
      std::optional<double> v = ParseNumber(value);
      if (!v) {
        error =
            Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is '{}', not a number", name, no, key, value);
        return;
      }
      *target = v;
      if (ms_s) it.ms = *ms_s * 1000.0;
    }
    // global_step is 0-based; without it, `iteration` is the same number.
    it.step = static_cast<int64_t>(global_step.value_or(static_cast<double>(iteration))) + 1;
    if (reserved && *reserved > peak) peak = *reserved;
    AddIteration(log.iterations, it, &log.restarts);
  });
  BM_TRY(error);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no NeMo 2 ProgressPrinter lines ('Training epoch E, iteration N/M | ... | "
                  "global_step: S | ...'), NeMo 1 training bars ('Epoch E: ... [..., "
                  "reduced_train_loss=x, global_step=S, ...]') or NeMo Automodel lines ('step N | "
                  "epoch E | loss X | ...') in {} lines{}",
                  name, log.lines, OtherFormatHint(text, "nemo"));
  }
  FillSpansFromGaps(log.iterations);
  // A bar shows one step's values, not a mean since the previous drawing; the global batch is
  // the growth of exactly printed consumed_samples between two drawings over their steps.
  const Iteration* previous = nullptr;
  for (Iteration& it : log.iterations) {
    auto bar = bar_consumed.find(it.step);
    if (bar == bar_consumed.end()) {
      previous = nullptr;
      continue;
    }
    it.span = 1;
    const std::optional<double> before =
        previous ? bar_consumed.at(previous->step) : std::optional<double>();
    if (bar->second && before && it.step > previous->step) {
      const double grown = *bar->second - *before;
      const double per_step = grown / static_cast<double>(it.step - previous->step);
      if (per_step > 0 && per_step == std::floor(per_step)) it.samples = per_step;
    }
    previous = &it;
  }
  if (!bar_consumed.empty()) {
    log.notes.push_back(fmt::format(
        "{}: NeMo 1 training bars: each drawing is one step's values (span 1); samples per step "
        "from consumed_samples' growth between drawings where both print it exactly, else none "
        "(the bar names no global batch size)",
        name));
  }
  if (ahead_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: the bar has drawn {} more batches than global_step + 1: optimizer steps the fp16 "
        "loss scaler skipped, which Lightning's global_step does not count; steps are "
        "global_step + 1",
        name, ahead_line, ahead_by));
  }
  if (rounded_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: global_step printed to three significant digits (tqdm's e-notation) outside "
        "epoch 0: the step may be rounded",
        name, rounded_line));
  }
  if (peak >= 0) {
    log.peak_memory_bytes = peak;
    log.memory_source =
        "max_memory_reserved / peak_memory_usage (NeMo MegatronStrategy, global rank 0's device)";
  }
  automodel.Finish(log, name);
  return log;
}

}  // namespace bm::logparse
