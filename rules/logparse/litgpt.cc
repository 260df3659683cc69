// LitGPT's training lines (Lightning-AI/litgpt, litgpt/pretrain.py and litgpt/finetune/*.py
// `fit`, rank 0's fabric.print every log_interval micro-batch iterations; pretrain logs every
// log_interval x gradient-accumulation iterations), in their three shapes:
//
//   Epoch 4 | iter 961 step 961 | loss train: 1.062, val: 1.057 | iter time: 529.46 ms (step)
//     (since March 2024; pretrain adds ` remaining time: 0:01:54`)
//   iter 1760 | step 220: loss 1.5947, iter time: 263.85 ms (optimizer.step)    (early 2024)
//   iter 77 step 39: loss 10.8259, iter time: 214.40ms (optimizer.step)         (lit-gpt, 2023)
//
// and lit-gpt's XLA adapter script's `[rank: 0] iter 34 step 35: iter time: 3372.20ms
// (optimizer.step)` (2023, no loss).
// `iter` counts micro-batches (from 1; from 0 in 2023's shape), `step` the optimizer steps run so
// far; `(step)` / `(optimizer.step)` marks the iteration that ran the optimizer. Only those lines
// are records: a line without it is a micro-batch inside a step, whose loss is a running mean
// across two steps' micro-batches. The loss of a marked line is its step's: the mean of rank 0's
// losses over the step's micro-batches (a RunningMean over the accumulation window; in 2023's
// shape the last micro-batch's alone). `iter time` is the time of that one micro-batch
// iteration (forward, backward and the optimizer step; today's finetune scripts count fetching
// the batch, pretrain not): the step's time only without gradient accumulation, which a line shows
// by its iteration count matching its step (iter = step; iter + 1 = step in 2023's shape). With
// accumulation no time per step is read (the step's other micro-batches are not timed in the
// line). `iter N: val loss X, val time: T ms` is an evaluation after step N / the accumulation
// steps. `Memory used: X GB` (finetune, at the end) and pretrain's `| - Memory Used   : X GB` are
// torch.cuda.max_memory_allocated() / 1e9 of rank 0's device. Pretrain's closing `| - Tok/sec`
// divides the tokens by a clock reading (time.perf_counter() at the start), not the training
// time: not read.
#include <fmt/format.h>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// One training line's numbers.
struct LitLine {
  int64_t iter = 0;
  int64_t step = 0;
  bool zero_based = false;  // 2023's `iter I step S:`, I counted from 0
  bool marked = false;      // `(step)` / `(optimizer.step)`: the optimizer ran
  size_t loss_at = 0;       // where the loss's number starts (npos: no loss printed)
  size_t time_at = 0;       // where iter time's number starts
};

// A whole count at the start of s, digits only, and where it ends.
std::optional<int64_t> LitCount(std::string_view s, size_t* end) {
  size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  *end = n;
  if (n == 0 || n > 15) return std::nullopt;
  return WholeCount(ParseNumber(s.substr(0, n)));
}

std::optional<LitLine> ReadLitLine(std::string_view line) {
  size_t at = line.find("iter ");
  while (at != std::string_view::npos) {
    if (at == 0 || line[at - 1] == ' ' || line[at - 1] == ':') break;
    at = line.find("iter ", at + 1);
  }
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + 5);
  size_t end = 0;
  std::optional<int64_t> iter = LitCount(rest, &end);
  if (!iter) return std::nullopt;
  LitLine out;
  out.iter = *iter;
  rest = rest.substr(end);
  size_t after_step = 0;
  std::string_view loss_key;
  if (rest.starts_with(" step ")) {
    rest = rest.substr(6);
    std::optional<int64_t> step = LitCount(rest, &end);
    if (!step) return std::nullopt;
    out.step = *step;
    rest = rest.substr(end);
    if (rest.starts_with(" | loss train: ")) {
      loss_key = " | loss train: ";
    } else if (rest.starts_with(": loss ")) {
      loss_key = ": loss ";
      out.zero_based = true;
    } else if (rest.starts_with(": iter time: ")) {
      out.zero_based = true;  // xla/finetune/adapter.py (2023) leaves the loss out
    } else {
      return std::nullopt;
    }
  } else if (rest.starts_with(" | step ")) {
    rest = rest.substr(8);
    std::optional<int64_t> step = LitCount(rest, &end);
    if (!step) return std::nullopt;
    out.step = *step;
    rest = rest.substr(end);
    if (!rest.starts_with(": loss ")) return std::nullopt;
    loss_key = ": loss ";
  } else {
    return std::nullopt;
  }
  after_step = static_cast<size_t>(rest.data() - line.data());
  out.loss_at = loss_key.empty() ? std::string_view::npos : after_step + loss_key.size();
  const size_t time = line.find("iter time: ", after_step);
  if (time == std::string_view::npos) return std::nullopt;
  out.time_at = time + 11;
  out.marked = line.find(" (step)", out.time_at) != std::string_view::npos ||
               line.find(" (optimizer.step)", out.time_at) != std::string_view::npos;
  return out;
}

// The number at `at` up to `stop` (",", " "); kCorrupt naming the line when it is none.
Result<double> LitNumber(std::string_view line, size_t at, std::string_view what, int64_t no,
                         std::string_view name) {
  std::string_view value = line.substr(at);
  value = value.substr(0, value.find_first_of(", "));
  std::string_view number = value;
  if (what == "iter time" && number.ends_with("ms")) number.remove_suffix(2);
  std::optional<double> v = ParseNumber(number);
  if (!v) {
    return Errorf(ErrorCode::kCorrupt, "{}:{}: LitGPT's '{}' is '{}', not a number", name, no, what,
                  value);
  }
  return *v;
}

// `Memory used: 14.49 GB` / `| - Memory Used   : 9.28 GB`: GB (1e9 bytes).
std::optional<double> LitMemoryGb(std::string_view line) {
  for (std::string_view key : {"Memory used: ", "Memory Used   : "}) {
    if (size_t at = line.find(key); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + key.size());
      size_t end = 0;
      std::optional<double> v = LeadingNumber(rest, &end);
      if (v && rest.substr(end).starts_with(" GB")) return v;
    }
  }
  return std::nullopt;
}

}  // namespace

bool IsLitgptLine(std::string_view line) { return ReadLitLine(line).has_value(); }

Result<ParsedLog> ParseLitgptLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "litgpt";
  Status error = Status::Ok();
  int64_t unmarked = 0, unmarked_line = 0, accumulating_line = 0, memory_line = 0;
  int64_t gas = 0;  // the accumulation steps the marked lines show (iterations per step)
  std::vector<std::pair<int64_t, EvalPoint>> vals;  // (iteration, evaluation)
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    if (std::optional<double> gb = LitMemoryGb(line)) {
      if (!log.peak_memory_bytes || *gb * 1e9 > *log.peak_memory_bytes) {
        log.peak_memory_bytes = *gb * 1e9;
        memory_line = no;
      }
      return;
    }
    if (size_t at = line.find(": val loss "); at != std::string_view::npos) {
      std::string_view before = line.substr(0, at);
      const size_t iter = before.rfind("iter ");
      size_t end = 0;
      std::optional<int64_t> n =
          iter == std::string_view::npos ? std::nullopt : LitCount(before.substr(iter + 5), &end);
      if (n && iter + 5 + end == at) {
        Result<double> v = LitNumber(line, at + 11, "val loss", no, name);
        if (!v.ok()) {
          error = v.status();
          return;
        }
        vals.push_back({*n, EvalPoint{0, *v, no}});
        return;
      }
    }
    std::optional<LitLine> l = ReadLitLine(line);
    if (!l) return;
    // The log's last line without its newline: its last field may be cut off.
    const bool cut = IsCutLastLine(text, line);
    std::optional<double> loss;
    if (l->loss_at != std::string_view::npos) {
      Result<double> v = LitNumber(line, l->loss_at, "loss", no, name);
      if (!v.ok()) {
        error = v.status();
        return;
      }
      loss = *v;
    }
    if (!l->marked) {
      if (unmarked++ == 0) unmarked_line = no;
      return;
    }
    Iteration it;
    it.step = l->step;
    it.line = no;
    it.loss = loss;
    const int64_t iters = l->zero_based ? l->iter + 1 : l->iter;
    if (l->step > 0 && iters % l->step == 0) {
      if (gas == 0) gas = iters / l->step;
      if (gas != iters / l->step) gas = -1;  // a resumed run with another accumulation
    }
    if (iters == l->step) {
      if (!cut) {
        Result<double> ms = LitNumber(line, l->time_at, "iter time", no, name);
        if (!ms.ok()) {
          error = ms.status();
          return;
        }
        it.ms = *ms;
      }
    } else if (accumulating_line == 0) {
      accumulating_line = no;
    }
    AddIteration(log.iterations, it, &log.restarts);
  });
  BM_TRY(error);
  if (log.iterations.empty()) {
    return Errorf(
        ErrorCode::kCorrupt,
        "{}: no LitGPT training lines that end an optimizer step ('Epoch E | iter I step "
        "S | loss train: X, val: V | iter time: T ms (step)', 'iter I | step S: loss X, "
        "iter time: T ms (optimizer.step)') in {} lines{}{}",
        name, log.lines,
        unmarked > 0 ? fmt::format(" ({} line(s) of micro-batches inside a step)", unmarked) : "",
        OtherFormatHint(text, "litgpt"));
  }
  for (auto& [iter, e] : vals) {
    if (gas > 0 && iter % gas == 0) e.step = iter / gas;
    log.evals.push_back(e);
  }
  if (!log.evals.empty()) log.eval_what = "LitGPT 'iter N: val loss X'";
  if (log.peak_memory_bytes) {
    log.memory_source = fmt::format(
        "LitGPT 'Memory used' (line {}: max_memory_allocated of rank 0's device, GB = 1e9 bytes; "
        "allocated, not reserved)",
        memory_line);
  }
  log.notes.push_back(fmt::format(
      "{}: each LitGPT line marked (step) is its own optimizer step's (its loss the mean of rank "
      "0's micro-batches), not a mean since the previous line",
      name));
  if (unmarked > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} line(s) without (step) are micro-batches inside a step (their loss a running "
        "mean across two steps): no records",
        name, unmarked_line, unmarked));
  }
  if (accumulating_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: gradient accumulation ({} micro-batches a step): 'iter time' is the step's last "
        "micro-batch alone, so no time per step is read",
        name, accumulating_line,
        gas > 0 ? std::to_string(gas) : std::string("a varying number of")));
  }
  return log;
}

}  // namespace bm::logparse
