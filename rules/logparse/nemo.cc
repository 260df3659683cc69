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
// time) is read as the printed per-device token rate. `val_loss` is the last validation's value,
// carried on every line after it (averaged like the rest: the same value when val_check_interval
// is a multiple of log_interval, else a mix of two validations' values): a new or changed
// value, or one after `Validation: iteration N/M` lines, is an evaluation at the record before
// (AddValLossEvals). `grad_norm` is there only when a model logs it with prog_bar=True
// (MegatronStrategy.optimizer_step logs it without: not shown); read when shown.
// `TFLOPS_per_GPU` (`tflops_per_sec_per_gpu` before d0fc658, April 2025) is
// FLOPsMeasurementCallback's (nemo/lightning/pytorch/callbacks/flops_callback.py): the model
// FLOPs of the global batch (nemo/utils/flops_formulas.py: 3 x forward, causal attention halved,
// no recomputation) at model_config.seq_length, / world size / its mean step time over
// Lightning's log_every_n_steps; the printer averages the latest figure over its interval like the
// rest. Read as the record's FLOP/s per device; where NeMo-Run's table (nemo_run_table.h) states
// a model.config.seq_length other than data.seq_length, dropped with a note (it counts the
// model's length, not the one trained). `consumed_samples` is not read. A page that
// wrapped a line before a ` | ` continues it on lines starting with `|`: joined.
//
// NeMo 1's Lightning training bar (`Epoch 0: ... 50/50 [..., reduced_train_loss=11.70,
// global_step=49.00, ...]`) is read too, by nemo_bar.h: a drawing is one step's values (span 1),
// its samples per step the growth of consumed_samples between two drawings. So are NeMo
// Automodel's `step N | epoch E | loss X | ... | mem M GiB | tps T(t/gpu) | ...` lines and their
// `[val]` lines, by nemo_automodel.h: step N + 1, its loss, grad_norm, lr and printed token rate
// over all devices; memory the largest `mem` (max allocated). The start-up lines that state the
// layout (world size, data / tensor / pipeline group sizes, micro-batches) are facts, by
// nemo_setup.h; so are the batch sizes, sequence length and precision in NeMo-Run's table of
// resolved arguments, by nemo_run_table.h. A negative `train_step_timing in s` (TimingCallback's
// NamedTimer uses time.time(), the wall clock: a clock step makes one step negative and a step
// near it as much too long) is kept as printed, with a note.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/nemo_automodel.h"
#include "rules/logparse/nemo_bar.h"
#include "rules/logparse/nemo_run_table.h"
#include "rules/logparse/nemo_setup.h"
#include "rules/logparse/records_mfu.h"

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
  std::optional<int64_t> n = WholeCount(LeadingNumber(rest, &end));
  if (!n || end >= rest.size() || rest[end] != '/') return std::string_view::npos;
  rest.remove_prefix(end + 1);
  if (!LeadingNumber(rest, &end)) return std::string_view::npos;
  size_t bar = rest.find_first_not_of(' ', end);
  if (bar == std::string_view::npos || rest[bar] != '|') return std::string_view::npos;
  *iteration = *n;
  return static_cast<size_t>(rest.data() - line.data()) + bar + 1;
}

// Where the bar drawing that starts at `from` ends: at the next "^M" (a pasted carriage
// return) or the next "Epoch N:" (drawings glued where a page dropped the carriage returns), else
// at the line's end.
size_t NemoDrawingEnd(std::string_view line, size_t from) {
  size_t end = std::min(line.find("^M", from), line.size());
  for (size_t at = line.find("Epoch ", from + 1); at < end; at = line.find("Epoch ", at + 1)) {
    size_t digits = at + 6, past = digits;
    while (past < line.size() && std::isdigit(static_cast<unsigned char>(line[past]))) ++past;
    if (past > digits && past < line.size() && line[past] == ':') return at;
  }
  return end;
}

// Lightning draws a step's bar more than once (the new count with the previous postfix, then the
// step's postfix, again after a validation); a drawing cut short lacks its last fields. The first
// drawing of a step keeps its values; a later one fills in what it lacked.
void FillFromRedraw(Iteration& kept, const Iteration& again) {
  for (auto field : {&Iteration::loss, &Iteration::ms, &Iteration::lr, &Iteration::grad_norm,
                     &Iteration::samples}) {
    if (!(kept.*field)) kept.*field = again.*field;
  }
}

// One ProgressPrinter line's fields as read so far: a page may have wrapped the line before a
// ` | `, continuing it on lines that start with `|`.
struct PrinterLine {
  Iteration it;
  int64_t iteration = 0;
  std::optional<double> global_step, reserved, val_loss;
};

// Reads the `key: value` fields of `fields` (from after a `|`) into *p; the last field of a
// line that is cut (the log's unterminated end) is left out.
Status ReadPrinterFields(std::string_view fields, bool cut, PrinterLine* p, std::string_view name,
                         int64_t no) {
  size_t pos = 0;
  while (pos < fields.size()) {
    size_t bar = fields.find('|', pos);
    if (bar == std::string_view::npos && cut) break;
    if (bar == std::string_view::npos) bar = fields.size();
    std::string_view field = fields.substr(pos, bar - pos);
    pos = bar + 1;
    size_t colon = field.rfind(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = Trim(field.substr(0, colon));
    std::string_view value = Trim(field.substr(colon + 1));
    std::optional<double>* target = nullptr;
    std::optional<double> ms_s, tflops;
    if (key == "reduced_train_loss") target = &p->it.loss;
    if (key == "lr") target = &p->it.lr;
    if (key == "global_batch_size") target = &p->it.samples;
    if (key == "global_step") target = &p->global_step;
    if (key == "max_memory_reserved" || key == "peak_memory_usage") target = &p->reserved;
    if (key == "tokens_per_sec_per_gpu") target = &p->it.tokens_per_device_per_s;
    if (key == "train_step_timing in s") target = &ms_s;
    if (key == "val_loss") target = &p->val_loss;
    if (key == "grad_norm") target = &p->it.grad_norm;
    // FLOPsMeasurementCallback's (`tflops_per_sec_per_gpu` before d0fc658, April 2025).
    if (key == "TFLOPS_per_GPU" || key == "tflops_per_sec_per_gpu") target = &tflops;
    if (target == nullptr) continue;
    std::optional<double> v = ParseNumber(value);
    if (!v)
      return Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is '{}', not a number", name, no, key, value);
    if (target == &p->global_step && !WholeCount(*v))
      return Errorf(ErrorCode::kCorrupt, "{}:{}: 'global_step' is '{}', not a step", name, no,
                    value);
    *target = v;
    if (ms_s) p->it.ms = *ms_s * 1000.0;
    if (tflops) p->it.flops_per_device_per_s = *tflops * 1e12;
  }
  return Status::Ok();
}

// A validation's loss as the training lines carry it (`val_loss` stays in Lightning's progress-bar
// metrics until the next validation): the record that shows it and whether validation lines came
// between that record and the one before.
struct CarriedValLoss {
  int64_t step = 0;
  double value = 0;
  int64_t line = 0;
  bool after_validation = false;
  bool own_step = false;  // a NeMo 1 bar: redrawn with the value after the step's validation
};

// A NeMo 1 bar drawing's own count in epoch 0 (its n) beside the step read from global_step.
struct BarCount {
  int64_t n = 0;
  int64_t step = 0;
  int64_t line = 0;
};

// An evaluation where val_loss first appears, changes, or follows validation lines. Lightning
// validates after a step's on_train_batch_end, where ProgressPrinter prints: the value is first
// shown by the next line and belongs to the record before it (exactly when the records are
// consecutive steps). TQDMProgressBar.on_validation_end redraws the training bar with the new
// value at the same count and global_step: on a bar, the drawing's own step. A value on the log's
// first record came from a validation the log does not show: not read.
void AddValLossEvals(const std::vector<CarriedValLoss>& carried, std::string_view name,
                     ParsedLog& log) {
  std::optional<double> last;
  int64_t wide_line = 0, unknown_line = 0, added = 0;
  for (const CarriedValLoss& c : carried) {
    const bool fresh = !last || *last != c.value || c.after_validation;
    last = c.value;
    if (!fresh) continue;
    auto at = std::lower_bound(log.iterations.begin(), log.iterations.end(), c.step,
                               [](const Iteration& a, int64_t step) { return a.step < step; });
    if (at == log.iterations.end() || at->step != c.step) continue;  // replaced by a resumed run
    if (at == log.iterations.begin()) {  // validated before the log's first record: when?
      if (unknown_line == 0) unknown_line = c.line;
      continue;
    }
    if (!c.own_step && at->span > 1 && wide_line == 0) wide_line = c.line;
    log.evals.push_back(EvalPoint{c.own_step ? c.step : std::prev(at)->step, c.value, c.line});
    ++added;
  }
  std::string unknown;
  if (unknown_line > 0) {
    unknown = fmt::format(
        "line {}'s val_loss comes from a validation before the log's first record, at a step the "
        "log does not show: not read as an evaluation",
        unknown_line);
  }
  if (added == 0) {
    if (unknown_line > 0) {
      log.notes.push_back(fmt::format(
          "{}:{}: val_loss (the last validation's value, carried on the training lines) comes "
          "from a validation before the log's first record: not read as an evaluation",
          name, unknown_line));
    }
    return;
  }
  log.eval_what = "NeMo val_loss (the last validation's value, carried on the training lines)";
  std::string note = fmt::format(
      "{}: val_loss is the last validation's value, repeated on every training line after it: "
      "an evaluation where it first appears or changes (or after 'Validation' lines), at the step "
      "of the record before (ProgressPrinter prints before the validation) or, on a NeMo 1 bar, "
      "the drawing's own step (Lightning redraws the bar after validating)",
      name);
  if (wide_line > 0) {
    note += fmt::format(
        "; line {}'s record spans several steps: exact when val_check_interval is a multiple of "
        "log_interval (the validation ran after the record before), else the printed mean mixes "
        "two validations' values",
        wide_line);
  }
  if (!unknown.empty()) note += "; " + unknown;
  log.notes.push_back(note);
}

}  // namespace

bool IsNemoProgressLine(std::string_view line) {
  int64_t iteration = 0;
  size_t fields = ProgressHeader(line, &iteration);
  if (fields == std::string_view::npos) return false;
  std::string_view rest = line.substr(fields);
  // Its own keys; a page may have wrapped the line after `lr` or `global_batch_size`.
  return rest.find(" global_step: ") != std::string_view::npos ||
         rest.find(" reduced_train_loss: ") != std::string_view::npos ||
         rest.find(" global_batch_size: ") != std::string_view::npos || rest.starts_with(" lr: ");
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
  int64_t rounded_line = 0, printer_lines = 0, negative_line = 0;
  std::vector<BarCount> bar_counts;
  AutomodelReader automodel;
  NemoRunTableReader run_table;        // NeMo-Run's resolved-arguments table (nemo_run_table.h)
  std::optional<PrinterLine> pending;  // a ProgressPrinter line, until no `|` line continues it
  int64_t pending_last = 0, continued_line = 0;
  bool pending_open = false;  // the pending line's last piece ends with `|`
  std::vector<CarriedValLoss> carried;
  bool validation_seen = false;
  int64_t lightning_line = 0;  // the first NeMo 2 or NeMo 1 record (Automodel's are apart)
  auto flush = [&]() {
    if (!pending) return;
    Iteration& it = pending->it;
    // global_step is 0-based; without it, `iteration` is the same number.
    it.step = (pending->global_step ? *WholeCount(*pending->global_step) : pending->iteration) + 1;
    if (pending->reserved && *pending->reserved > peak) peak = *pending->reserved;
    if (it.ms && *it.ms < 0 && negative_line == 0) negative_line = it.line;
    if (pending->val_loss)
      carried.push_back({it.step, *pending->val_loss, it.line, validation_seen});
    validation_seen = false;
    ++printer_lines;
    if (lightning_line == 0) lightning_line = it.line;
    AddIteration(log.iterations, it, &log.restarts);
    pending.reset();
  };
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    // The last field ends the line; on a last line without its newline it may be cut off.
    const bool cut =
        line.data() + line.size() == text.data() + text.size() && !text.ends_with('\n');
    int64_t iteration = 0;
    size_t pos = ProgressHeader(line, &iteration);
    // A page's wrap: the continuation starts with `|`, or the piece before ends with one (a
    // ProgressPrinter line never does).
    if (pending && no == pending_last + 1 && pos == std::string_view::npos &&
        (Trim(line).starts_with("| ") ||
         (pending_open && line.find(':') != std::string_view::npos))) {
      std::string_view rest = Trim(line);
      if (rest.starts_with('|')) rest.remove_prefix(1);
      error = ReadPrinterFields(rest, cut, &*pending, name, no);
      pending_last = no;
      pending_open = Trim(line).ends_with('|');
      if (continued_line == 0) continued_line = pending->it.line;
      return;
    }
    flush();
    if (pos == std::string_view::npos) {
      if (run_table.Read(line, no)) return;
      if (ReadNemoSetupLine(line, no, log)) return;  // devices, dp, tp, pp, gas (nemo_setup.h)
      Result<bool> read = automodel.Read(line, no, name, cut, log);
      if (!read.ok()) {
        error = read.status();
        return;
      }
      if (*read) return;
      // A pasted terminal capture may show the carriage returns between drawings as the text
      // "^M", or drop them and glue the drawings: each piece is a drawing of its own.
      for (size_t from = 0; error.ok();) {
        const size_t end = NemoDrawingEnd(line, from);
        std::string_view piece = line.substr(from, end - from);
        Result<std::optional<NemoBar>> bar = ReadNemoBar(piece, name, no);
        if (!bar.ok()) {
          error = bar.status();
        } else if (bar->has_value()) {
          const NemoBar& b = **bar;
          if (lightning_line == 0) lightning_line = no;
          if (b.consumed_samples || !bar_consumed.contains(b.it.step))
            bar_consumed[b.it.step] = b.consumed_samples;  // a cut redraw keeps the first's
          if (b.step_rounded && rounded_line == 0) rounded_line = no;
          if (b.epoch0_batches) bar_counts.push_back({*b.epoch0_batches, b.it.step, no});
          if (b.val_loss) carried.push_back({b.it.step, *b.val_loss, no, validation_seen, true});
          validation_seen = false;
          if (!log.iterations.empty() && log.iterations.back().step == b.it.step) {
            FillFromRedraw(log.iterations.back(), b.it);  // the same step drawn again
          } else {
            AddIteration(log.iterations, b.it, &log.restarts);
          }
        } else if ((piece.find("Validation: iteration ") != std::string_view::npos &&
                    piece.find("Sanity checking") == std::string_view::npos) ||
                   piece.find("Validation DataLoader ") != std::string_view::npos) {
          validation_seen = true;  // ProgressPrinter's / NeMo 1's validation progress
        }
        if (end == line.size()) break;
        from = line.substr(end).starts_with("^M") ? end + 2 : end;
      }
      return;
    }
    pending.emplace();
    pending->it.line = no;
    pending->iteration = iteration;
    pending_last = no;
    pending_open = Trim(line).ends_with('|');
    error = ReadPrinterFields(line.substr(pos), cut, &*pending, name, no);
  });
  if (error.ok()) flush();
  BM_TRY(error);
  // Automodel numbers its steps its own way (Finish): records of both cannot be one series.
  if (const int64_t automodel_line = automodel.first_record_line();
      automodel_line > 0 && lightning_line > 0) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}:{}: a {} record in a log whose line {} is a {} record: two trainers' "
                  "steps in one log are not one run; give each run its own log",
                  name, std::max(automodel_line, lightning_line),
                  automodel_line > lightning_line ? "NeMo Automodel" : "NeMo 2 / NeMo 1",
                  std::min(automodel_line, lightning_line),
                  automodel_line > lightning_line ? "NeMo 2 / NeMo 1" : "NeMo Automodel");
  }
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no NeMo 2 ProgressPrinter lines ('Training epoch E, iteration N/M | ... | "
                  "global_step: S | ...'), NeMo 1 training bars ('Epoch E: ... [..., "
                  "reduced_train_loss=x, global_step=S, ...]') or NeMo Automodel lines ('step N | "
                  "epoch E | loss X | ...') in {} lines{}",
                  name, log.lines, OtherFormatHint(text, "nemo"));
  }
  // NeMo 1's Stable Diffusion (MegatronLatentDiffusion.training_step) logs trainer.global_step
  // + 1, after the step: a drawing whose count equals global_step shows it (a 0-based
  // global_step is at most n - 1); its steps are global_step.
  int64_t one_based_line = 0;
  for (const BarCount& c : bar_counts) {
    if (c.n == c.step - 1) {
      one_based_line = c.line;
      break;
    }
  }
  if (one_based_line > 0 && printer_lines == 0) {
    for (Iteration& it : log.iterations) --it.step;
    std::map<int64_t, std::optional<double>> shifted;
    for (const auto& [step, consumed] : bar_consumed) shifted[step - 1] = consumed;
    bar_consumed.swap(shifted);
    for (CarriedValLoss& c : carried) --c.step;
    for (BarCount& c : bar_counts) --c.step;
    log.notes.push_back(fmt::format(
        "{}:{}: the bar's count equals its global_step: this model logs global_step after the "
        "step (1-based, as NeMo 1's Stable Diffusion does), so the steps are global_step",
        name, one_based_line));
  }
  // The smallest lead of the count over the step in any drawing (none when a drawing shows
  // count = step).
  int64_t ahead_by = -1, ahead_line = 0;
  for (const BarCount& c : bar_counts) {
    const int64_t ahead = c.n - c.step;
    if (ahead >= 0 && (ahead_by < 0 || ahead < ahead_by)) {
      ahead_by = ahead;
      ahead_line = c.line;
    }
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
  if (ahead_by > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: the bar has drawn {} more batches than global_step + 1 (in every drawing): one "
        "when Lightning drew the new count before the step's postfix (the drawing then shows the "
        "previous step's values), more for optimizer steps the fp16 loss scaler skipped, which "
        "global_step does not count; steps are global_step{}",
        name, ahead_line, ahead_by, one_based_line > 0 ? "" : " + 1"));
  }
  if (continued_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: a ProgressPrinter line continued on the lines after it (a page's wrap at a `|`): "
        "read as one line",
        name, continued_line));
  }
  if (negative_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: a negative train_step_timing, kept as printed: TimingCallback times a step with "
        "NamedTimer's time.time(), the wall clock, which moved during the run; a step near it "
        "is as much too long, so a sum over the steps stays right, not each step's time",
        name, negative_line));
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
  AddValLossEvals(carried, name, log);
  automodel.Finish(log, name);
  run_table.Apply(log, name);
  if (std::string mismatch = run_table.SeqLengthMismatch(name); !mismatch.empty()) {
    DropRecordsFlops(log, name, "TFLOPS_per_GPU",
                     "NeMo's FLOPsMeasurementCallback counts each sample's FLOPs at the model's "
                     "seq_length, not the length trained (" +
                         mismatch + ")");
  }
  return log;
}

}  // namespace bm::logparse
