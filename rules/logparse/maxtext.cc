// MaxText's step lines (AI-Hypercomputer/maxtext, the JAX trainer; src/maxtext/common/
// metric_logger.py `_log_training_metrics`, through absl's logging: an `I1203 16:55:01.123456 140
// metric_logger.py:226] ` prefix, or none where MaxText printed), one a step:
//
//   completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 8672.758,
//   total_weights: 196608, loss: 10.374 (one line; `lm_loss`, `perplexity`, `moe_lb_loss`,
//   `mtp_loss`, ... after it in newer releases)
//
// `completed step: N` counts from 0 in train.py's loop: it is optimizer step N + 1 (a post-training
// run under Tunix, whose PeftTrainer prints `Train step N training loss: ...` beside it, counts
// from 1: step N). `seconds` is the host's time
// between the returns of two consecutive `p_train_step` dispatches (train.py's step_time_delta):
// JAX dispatches asynchronously and the host blocks only when it reads a step's metrics, so the
// first step's time holds the compilation and, while the device's queue fills, the next one or
// two time their dispatch alone (0.319 s of a 5.66 s step in MaxText's own guide; 0.277 s and
// 0.215 s of 0.43 s on a TPU v6e; MaxText's benchmark scripts average the last steps only);
// from there on a step's seconds are a step of the device's time: the default warm-up leaves out
// three steps. `Tokens/s/device` =
// per_device_batch_size x max_target_length / seconds, `TFLOP/s/device` = the model FLOPs of a
// device's step (calculate_tflops_training_per_device: the weights' matmuls x 6 and attention's,
// no recomputation) / seconds: read as the record's rates. During a batch-size ramp-up
// (`[Rampup Batch Size Phase] completed step: ...`) and at the profiler's boundary steps
// (`completed profiler activation/deactivation step: N`, no seconds) the rates are not printed:
// such a record has its loss alone (a ramp-up step's seconds time a smaller batch than the
// start-up states: not read). `loss` is the step's mean loss over its tokens (padding left
// out: `total_weights` counts the real ones).
//
// Also read: `Completed eval after train step N, loss=x, ...` (`_log_eval_metrics`: the mean loss
// of an evaluation run after step N; `eval metrics after step: N, loss=x, ...` before May 2026) as
// an evaluation at that step, counted as the steps are; the start-up's `Config param
// NAME: VALUE` lines (max_target_length, the sequence length; per_device_batch_size where whole
// and gradient_accumulation_steps, whose product with the devices is the global batch;
// base_num_decoder_layers,
// base_emb_dim, base_num_query_heads; dtype, the compute precision), `Num_devices: N, shape (...)`
// and `number parameters: X billion` (three decimals, with a note). Memory: MaxText prints each
// device's bytes in use after the parameters are initialised (`Memstats: ... Using (GB) ...`), no
// peak: none is read. Ray's TPU launcher prefixes each line with its worker and appends
// ` [repeated 9x across cluster]` to lines it folded; every host of a multi-host run prints each
// step (the same loss, its own seconds): the first copy is kept.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kStep = "completed step: ";
constexpr std::string_view kHiddenStep = "completed profiler activation/deactivation step: ";
// Where the step's number starts after `marker` in the line (at the line's start or after a
// space or `]`); npos when the line has none.
size_t After(std::string_view line, std::string_view marker) {
  for (size_t at = line.find(marker); at != std::string_view::npos;
       at = line.find(marker, at + 1)) {
    if (at == 0 || line[at - 1] == ' ' || line[at - 1] == ']') return at + marker.size();
  }
  return std::string_view::npos;
}

// An evaluation's line: `Completed eval after train step N, loss=x, ...` (since f9a62a5, May
// 2026), `eval metrics after step: N, loss=x, ...` (from 4c4b7af, June 2025).
constexpr std::string_view kEvals[] = {"Completed eval after train step ",
                                       "eval metrics after step: "};

// Where the step of an evaluation's line starts; npos when the line is none.
size_t EvalStart(std::string_view line) {
  for (std::string_view marker : kEvals) {
    const size_t at = After(line, marker);
    if (at != std::string_view::npos) return at;
  }
  return std::string_view::npos;
}

// Tunix's PeftTrainer line, `Train step 2 training loss: 0.693147  - training perplexity: ...`
// (MaxText's DPO and SFT post-training run under it, and it counts steps from 1).
bool IsTunixStepLine(std::string_view line) {
  const size_t at = After(line, "Train step ");
  if (at == std::string_view::npos) return false;
  size_t end = 0;
  return WholeCount(LeadingNumber(line.substr(at), &end)) &&
         line.substr(at + end).starts_with(" training loss: ");
}

// The record's step as printed (from 0) and where its fields start, for a line that is a step
// line: `completed step: N, ` (or the profiler's boundary step). `step` is nullopt where the
// number is none (`completed step: nan, `).
struct StepStart {
  std::optional<int64_t> step;
  std::string_view number;
  std::string_view fields;
  bool hidden = false;  // a profiler boundary step: no time, no rates
};

std::optional<StepStart> FindStep(std::string_view line) {
  StepStart s;
  size_t at = After(line, kStep);
  if (at == std::string_view::npos) {
    at = After(line, kHiddenStep);
    if (at == std::string_view::npos) return std::nullopt;
    s.hidden = true;
  }
  std::string_view rest = line.substr(at);
  const size_t comma = rest.find(", ");
  s.number = Trim(rest.substr(0, comma));
  s.fields = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  // `completed step: 9` alone is no MaxText line (MaxText always prints a field after it).
  if (comma == std::string_view::npos || s.number.empty()) return std::nullopt;
  s.step = WholeCount(ParseNumber(s.number));
  return s;
}

// The line without Ray's de-duplication mark (` [repeated 9x across cluster]`, which Ray's log
// monitor appends to a line it printed for several workers, MaxText under Ray's TPU launcher).
std::string_view WithoutRayRepeats(std::string_view line) {
  const size_t at = line.rfind(" [repeated ");
  if (at == std::string_view::npos || !line.ends_with("x across cluster]")) return line;
  return line.substr(0, at);
}

// The same step printed by several hosts: every host of a multi-host run logs each step, with
// the same loss (the global batch's) and its own seconds. A record of a step already read with
// the same loss is such a copy; another loss is a resumed run's (AddIteration).
bool HostCopy(const std::vector<Iteration>& its, const Iteration& it) {
  auto same = std::lower_bound(its.begin(), its.end(), it.step,
                               [](const Iteration& a, int64_t step) { return a.step < step; });
  if (same == its.end() || same->step != it.step) return false;
  if (!same->loss || !it.loss) return same->loss.has_value() == it.loss.has_value();
  return *same->loss == *it.loss || (std::isnan(*same->loss) && std::isnan(*it.loss));
}

// The start-up's lines: `Config param NAME: VALUE`, `Num_devices: N, shape (...)`, `number
// parameters: X billion`, each read into a fact; whether the line is one of them.
bool ReadStartUpLine(std::string_view line, int64_t no, std::string_view name, ParsedLog& log) {
  constexpr std::string_view kConfig = "Config param ";
  if (const size_t at = After(line, kConfig); at != std::string_view::npos) {
    std::string_view rest = line.substr(at);
    const size_t colon = rest.find(": ");
    if (colon == std::string_view::npos) return true;
    std::string_view key = rest.substr(0, colon), value = Trim(rest.substr(colon + 2));
    const ConfigFactKey keys[] = {{"max_target_length", "mpe"},
                                  {"per_device_batch_size", "lbs"},
                                  {"gradient_accumulation_steps", "gas"},
                                  {"base_num_decoder_layers", "layers"},
                                  {"base_emb_dim", "hidden"},
                                  {"base_num_query_heads", "heads"}};
    for (const ConfigFactKey& k : keys) {
      if (key != k.path) continue;
      std::optional<double> v = ParseNumber(value);
      if (v && WholeCount(*v) && *v > 0)
        SetConfigFact(log, name, k.fact, *v, no, "MaxText's config print", key);
    }
    if (key == "dtype") {
      const std::string_view precision = value == "bfloat16"  ? "bf16"
                                         : value == "float16" ? "fp16"
                                         : value == "float32" ? "fp32"
                                                              : "";
      if (!precision.empty())
        SetConfigPrecision(log, name, precision, no, "MaxText's config print", key);
    }
    return true;
  }
  if (const size_t at = After(line, "Num_devices: "); at != std::string_view::npos) {
    size_t end = 0;
    std::optional<int64_t> n = WholeCount(LeadingNumber(line.substr(at), &end));
    if (n && *n > 0 && line.substr(at + end).starts_with(",")) SetFact(log, "devices", *n, no);
    return true;
  }
  if (const size_t at = After(line, "number parameters: "); at != std::string_view::npos) {
    size_t end = 0;
    std::optional<double> billions = LeadingNumber(line.substr(at), &end);
    if (billions && *billions > 0 && Trim(line.substr(at + end)) == "billion") {
      SetFact(log, "parameters", *billions * 1e9, no);
      log.notes.push_back(fmt::format(
          "{}:{}: the parameter count is MaxText's, in billions to three decimals", name, no));
    }
    return true;
  }
  return false;
}

}  // namespace

bool IsMaxtextStepLine(std::string_view line) {
  std::optional<StepStart> s = FindStep(line);
  return s && s->step && (s->hidden || s->fields.starts_with("seconds: "));
}

Result<ParsedLog> ParseMaxtextLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "maxtext";
  Status error = Status::Ok();
  int64_t memstats_line = 0, rampup_line = 0, hidden_line = 0, copies = 0, first_copy_line = 0;
  int64_t tunix_line = 0;
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    const std::string_view whole = line;
    line = WithoutRayRepeats(line);
    const bool cut = line.size() == whole.size() && IsCutLastLine(text, line);
    if (const size_t at = EvalStart(line); at != std::string_view::npos) {
      std::string_view rest = line.substr(at);
      const size_t comma = rest.find(", ");
      std::optional<int64_t> step = WholeCount(ParseNumber(rest.substr(0, comma)));
      std::optional<double> loss;
      if (comma != std::string_view::npos && rest.substr(comma + 2).starts_with("loss=")) {
        std::string_view value = rest.substr(comma + 2 + 5);
        const size_t end = value.find(',');
        if (end != std::string_view::npos || !cut) loss = ParseNumber(value.substr(0, end));
      }
      if (cut && (comma == std::string_view::npos || !loss)) return;  // cut off before its loss
      if (!step || !loss) {
        error = Errorf(ErrorCode::kCorrupt,
                       "{}:{}: a MaxText evaluation line without a whole step and a loss (as in "
                       "'Completed eval after train step N, loss=x, ...')",
                       name, no);
        return;
      }
      log.evals.push_back(EvalPoint{*step, *loss, no});
      return;
    }
    if (line.find("Memstats: ") != std::string_view::npos && memstats_line == 0) memstats_line = no;
    if (tunix_line == 0 && IsTunixStepLine(line)) tunix_line = no;
    if (ReadStartUpLine(line, no, name, log)) return;
    std::optional<StepStart> start = FindStep(line);
    if (!start) return;
    if (!start->step) {
      if (cut) return;
      error = Errorf(ErrorCode::kCorrupt, "{}:{}: MaxText's step is '{}', not a whole number", name,
                     no, start->number);
      return;
    }
    Iteration it;
    it.step = *start->step;  // as printed: made 1-based below
    it.line = no;
    std::optional<double> seconds, tflops;
    ForEachKeyValue(start->fields, ", ", cut, [&](std::string_view key, std::string_view value) {
      struct Key {
        std::string_view key;
        std::optional<double>* target;
      };
      const Key keys[] = {{"seconds", &seconds},
                          {"TFLOP/s/device", &tflops},
                          {"Tokens/s/device", &it.tokens_per_device_per_s},
                          {"loss", &it.loss}};
      for (const Key& k : keys) {
        if (key != k.key) continue;
        *k.target = ParseNumber(value);
        if (!*k.target) {
          error = Errorf(ErrorCode::kCorrupt, "{}:{}: MaxText's '{}' is '{}', not a number", name,
                         no, key, value);
          return false;
        }
      }
      return true;
    });
    if (!error.ok()) return;
    // A ramp-up step's batch is smaller than the one the start-up states: it is not timed.
    const bool rampup = line.find("[Rampup Batch Size Phase]") != std::string_view::npos;
    if (rampup && rampup_line == 0) rampup_line = no;
    if (seconds && !rampup) it.ms = *seconds * 1000.0;
    if (tflops) it.flops_per_device_per_s = *tflops * 1e12;
    if (start->hidden && hidden_line == 0) hidden_line = no;
    if (HostCopy(log.iterations, it)) {
      if (copies++ == 0) first_copy_line = no;
      return;
    }
    AddIteration(log.iterations, it, &log.restarts);
  });
  BM_TRY(error);
  if (log.iterations.empty()) {
    const std::string evals = log.evals.empty()
                                  ? ""
                                  : fmt::format(
                                        " (its {} evaluation line(s), the first at line {}, are "
                                        "no training steps)",
                                        log.evals.size(), log.evals.front().line);
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no MaxText step lines ('completed step: N, seconds: S, TFLOP/s/device: ..., "
                  "Tokens/s/device: ..., ..., loss: X') in {} lines{}{}",
                  name, log.lines, evals, OtherFormatHint(text, "maxtext"));
  }
  if (tunix_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: a post-training run under Tunix (its `Train step N training loss` lines), which "
        "counts steps from 1: `completed step: N` is step N; each line is its own step's (time, "
        "rates, loss)",
        name, tunix_line));
  } else {
    // train.py's loop counts from 0 and evaluates after the step it has run: both are N + 1.
    for (Iteration& it : log.iterations) ++it.step;
    for (EvalPoint& e : log.evals) ++e.step;
    log.notes.push_back(fmt::format(
        "{}: MaxText's train.py numbers its steps from 0: `completed step: N` is step N + 1 here "
        "(and `after train step N`); each line is its own step's (time, rates, loss)",
        name));
  }
  if (!log.evals.empty()) log.eval_what = "MaxText eval loss";
  if (copies > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} step line(s) repeat a step already read with the same loss (another host's "
        "copy of it: every host of a multi-host run prints each step): the first read is kept",
        name, first_copy_line, copies));
  }
  if (rampup_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: a batch-size ramp-up step: MaxText prints no rates for it, and its batch is not "
        "the full one: those steps are not timed",
        name, rampup_line));
  }
  if (hidden_line > 0) {
    log.notes.push_back(
        fmt::format("{}:{}: a profiler activation/deactivation step: MaxText prints no time for it",
                    name, hidden_line));
  }
  if (memstats_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: MaxText's Memstats are each device's bytes in use after the parameters were "
        "initialised, no peak: no memory read",
        name, memstats_line));
  }
  return log;
}

}  // namespace bm::logparse
