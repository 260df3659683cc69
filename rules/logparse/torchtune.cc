// torchtune's metric lines, as its StdoutLogger and DiskLogger (torchtune/training/
// metric_logging.py, `log_dict`) print the dict a recipe logs (recipes/full_finetune_*.py,
// lora_finetune_*.py, ... every log_every_n_steps optimizer steps, rank 0 only):
//
//   Step 1 | loss:2.085338592529297 lr:2e-05 tokens_per_second_per_gpu:57.828881833956174
//
// `Step N` is the recipe's global_step after the optimizer step: 1-based (the first versions,
// April 2024, printed it from 0: `Step 0 | loss:... lr:... gpu_resources:...`; such a log is read
// one step on, with a note). Each `name:value` is separated by a space (a trailing one ends the
// line). A record is its own step only, not a mean since the previous line: the recipe resets
// its running loss, token count and timer (t0) after every optimizer step, so with
// log_every_n_steps > 1 the lines are samples, each of span 1. `loss` is the step's: the mean
// over its micro-batches (since 23c8829, October 2024, weighted by their label tokens and, since
// 2fa6a54, summed over the ranks). `tokens_per_second_per_gpu` is the step's tokens over the
// seconds from the end of the previous step (t0 is reset after the checkpoint save) to after this
// one's optimizer step: every token of rank 0's batches, padding included, before 23c8829; since
// then only the tokens whose label is not ignore_index (no padding, no masked prompt), rank 0's
// until 2fa6a54, then all ranks' over the world size (and the non-data-parallel degree since
// #2622, April 2025): a rate per device either way, but of the labelled tokens in recent logs,
// which the log cannot tell from the others. The tokens of a step are not printed: no time per
// step. `peak_memory_reserved` (log_peak_memory_stats) is torch.cuda.max_memory_reserved() of
// rank 0's device in GiB (2^30) since the previous line (get_memory_stats resets the peak);
// `peak_memory_alloc` max_memory_allocated, `peak_memory_active` the active bytes' peak.
// `grad_norm` (clip_grad_norm set) may be a tensor's repr (`tensor(1.0625, device='cuda:0')`).
// A line with `val_loss` (the validation loop's dict) is an evaluation at its step.
// `Model is initialized with precision torch.bfloat16.` states the precision. A log with no
// metric line (the configs' default DiskLogger writes them to a file) is read by its training
// bar (rules/logparse/torchtune_bar.h): each step's loss, and its time to +-1 s.
#include <fmt/format.h>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/torchtune_bar.h"

namespace bm::logparse {
namespace {

// Where the `name:value` fields of a torchtune metric line start (past `Step N | `), and N; npos
// when the line is none. `Step` starts the line or follows a prefix (`[rank0]:`, a timestamp).
size_t TorchtuneFields(std::string_view line, int64_t* step) {
  size_t at = line.find("Step ");
  while (at != std::string_view::npos) {
    const bool starts =
        at == 0 || line[at - 1] == ' ' || line[at - 1] == ':' || line[at - 1] == ']';
    if (starts) {
      std::string_view rest = line.substr(at + 5);
      size_t end = 0;
      std::optional<int64_t> n = WholeCount(LeadingNumber(rest, &end));
      // The step is digits alone (LeadingNumber would take `1e3`), then ` | ` and a name.
      const bool digits =
          end > 0 && rest.substr(0, end).find_first_not_of("0123456789") == std::string_view::npos;
      if (n && digits && rest.substr(end).starts_with(" | ")) {
        const size_t fields = at + 5 + end + 3;
        std::string_view first = line.substr(fields);
        const size_t colon = first.find(':');
        const bool named = colon != std::string_view::npos && colon > 0 &&
                           first.substr(0, colon).find(' ') == std::string_view::npos;
        if (named) {
          *step = *n;
          return fields;
        }
      }
    }
    at = line.find("Step ", at + 1);
  }
  return std::string_view::npos;
}

// A field's value as a number: `2.08`, `2e-05`, or a tensor's repr `tensor(1.0625,` (its device
// is the next field). nullopt when it is neither.
std::optional<double> TorchtuneNumber(std::string_view value) {
  if (value.starts_with("tensor(")) {
    value.remove_prefix(7);
    const size_t end = value.find_first_of(",)");
    if (end == std::string_view::npos) return std::nullopt;
    return ParseNumber(value.substr(0, end));
  }
  return ParseNumber(value);
}

// A log with the bar and no metric lines (the recipes' default DiskLogger writes them to a file):
// the steps the bar shows.
Result<ParsedLog> FromBars(const TorchtuneBars& bars, ParsedLog log, std::string_view name) {
  int64_t zero_gaps = 0;
  log.iterations = bars.Steps(&zero_gaps);
  log.notes.push_back(fmt::format(
      "{}:{}: no metric lines: the steps and losses of torchtune's training bar ('E|S|Loss: X'), "
      "each step's time from the bar's elapsed whole seconds, to +-1 s a step",
      name, bars.first_line()));
  if (zero_gaps > 0) {
    log.notes.push_back(fmt::format(
        "{}: {} step(s) drawn in the same second as the step before: the bar's whole seconds "
        "cannot time these steps, no step timed",
        name, zero_gaps));
  }
  return log;
}

}  // namespace

bool IsTorchtuneBarLine(std::string_view line) {
  TorchtuneBars bar;
  Result<bool> read = bar.Read(line, 0, "");
  return read.ok() && *read && bar.Counted();
}

bool IsTorchtuneStepLine(std::string_view line) {
  int64_t step = 0;
  return TorchtuneFields(line, &step) != std::string_view::npos;
}

Result<ParsedLog> ParseTorchtuneLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "torchtune";
  Status error = Status::Ok();
  double reserved_gib = -1, alloc_gib = -1;
  bool step0 = false, labelled = false;
  int64_t val_line = 0;
  std::vector<Iteration> records;
  TorchtuneBars bars;
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    if (size_t p = line.find("Model is initialized with precision torch.");
        p != std::string_view::npos && log.precision.empty()) {
      std::string_view dtype = line.substr(p + 42);
      for (auto [torch_name, ours] : {std::pair{"bfloat16", "bf16"}, std::pair{"float16", "fp16"},
                                      std::pair{"float32", "fp32"}}) {
        if (dtype.starts_with(torch_name)) {
          log.precision = ours;
          log.precision_line = no;
          break;
        }
      }
    }
    int64_t step = 0;
    const size_t at = TorchtuneFields(line, &step);
    if (at == std::string_view::npos) {
      if (Result<bool> bar = bars.Read(line, no, name); !bar.ok()) error = bar.status();
      return;
    }
    // The log's last line without its newline: its last field may be cut off.
    const bool cut = IsCutLastLine(text, line);
    Iteration it;
    it.step = step;
    it.line = no;
    std::optional<double> val_loss;
    std::string_view fields = line.substr(at);
    while (!fields.empty()) {
      const size_t space = fields.find(' ');
      if (space == std::string_view::npos && cut) break;
      std::string_view field = fields.substr(0, space);
      fields = space == std::string_view::npos ? std::string_view() : fields.substr(space + 1);
      const size_t colon = field.find(':');
      if (field.empty() || colon == std::string_view::npos) continue;
      std::string_view key = field.substr(0, colon);
      std::string_view value = field.substr(colon + 1);
      struct Key {
        std::string_view key;
        std::optional<double>* target;
      };
      std::optional<double> reserved, alloc;
      const Key keys[] = {{"loss", &it.loss},
                          {"lr", &it.lr},
                          {"tokens_per_second_per_gpu", &it.tokens_per_device_per_s},
                          {"grad_norm", &it.grad_norm},
                          {"peak_memory_reserved", &reserved},
                          {"peak_memory_alloc", &alloc},
                          {"val_loss", &val_loss}};
      for (const Key& k : keys) {
        if (key != k.key) continue;
        std::optional<double> v = TorchtuneNumber(value);
        if (!v) {
          error = Errorf(ErrorCode::kCorrupt, "{}:{}: torchtune's '{}' is '{}', not a number", name,
                         no, key, value);
          return;
        }
        *k.target = v;
      }
      if (reserved && *reserved > reserved_gib) reserved_gib = *reserved;
      if (alloc && *alloc > alloc_gib) alloc_gib = *alloc;
    }
    if (val_loss) {
      if (val_line == 0) val_line = no;
      log.evals.push_back({step, *val_loss, no});
      log.eval_what = "torchtune 'Step N | val_loss:X'";
      if (!it.loss && !it.tokens_per_device_per_s) return;  // the validation loop's own line
    }
    if (step == 0) step0 = true;
    labelled = labelled || it.tokens_per_device_per_s.has_value();
    records.push_back(it);
  });
  BM_TRY(error);
  if (records.empty() && bars.drawings() > 0) return FromBars(bars, std::move(log), name);
  if (records.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no torchtune metric lines ('Step N | loss:X lr:Y "
                  "tokens_per_second_per_gpu:T ...') in {} lines{}{}",
                  name, log.lines, val_line ? " (only 'val_loss' evaluation lines)" : "",
                  OtherFormatHint(text, "torchtune"));
  }
  // A log whose steps start at 0 (torchtune of April 2024) counts them from 0.
  for (Iteration& it : records) {
    if (step0) ++it.step;
    AddIteration(log.iterations, it, &log.restarts);
  }
  if (step0) {
    for (EvalPoint& e : log.evals) ++e.step;
    log.notes.push_back(fmt::format(
        "{}: the metric lines count steps from 0 (torchtune of April 2024): step N is read as "
        "optimizer step N + 1",
        name));
  }
  if (bars.drawings() > 0) {
    log.notes.push_back(
        fmt::format("{}:{}: torchtune's training bar not read: the metric lines give the steps",
                    name, bars.first_line()));
  }
  if (reserved_gib >= 0) {
    log.peak_memory_bytes = reserved_gib * 1024.0 * 1024.0 * 1024.0;
    log.memory_source =
        "torchtune 'peak_memory_reserved' (max_memory_reserved of rank 0's device, GiB)";
  } else if (alloc_gib >= 0) {
    log.peak_memory_bytes = alloc_gib * 1024.0 * 1024.0 * 1024.0;
    log.memory_source =
        "torchtune 'peak_memory_alloc' (max_memory_allocated of rank 0's device, GiB: allocated, "
        "not reserved)";
  }
  log.notes.push_back(fmt::format(
      "{}: each torchtune line is its own step's (loss, tokens_per_second_per_gpu), not a mean "
      "since the previous line",
      name));
  if (labelled) {
    log.notes.push_back(fmt::format(
        "{}: tokens_per_second_per_gpu counts every token of rank 0's batches, padding "
        "included, in torchtune before 23c8829 (October 2024), and only the tokens whose label "
        "counts in the loss (no padding, no masked prompt) since: the log does not say which; no "
        "time per step (the step's tokens are not printed)",
        name));
  }
  return log;
}

}  // namespace bm::logparse
