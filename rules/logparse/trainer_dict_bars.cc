// TrainerDictReader's tqdm bars (trainer_dicts.h): the counters it reads, the bar that numbers a
// dict, the bars after a dict that confirm it, and the steps BarBoundSteps gives counted dicts
// from the bars around them.
#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/tqdm_bar.h"
#include "rules/logparse/trainer_dicts.h"

namespace bm::logparse {

void TrainerDictReader::ReadBar(std::string_view text, int64_t line) {
  raw_ = raw_ || line == segment_line_;
  segment_line_ = line;
  const std::string_view trimmed = Trim(text);
  if (clear_line_ == line && trimmed.starts_with('{')) written_line_ = line;  // by tqdm.write
  clear_line_ = !text.empty() && trimmed.empty() ? line : 0;  // tqdm.write's clear of the bar
  if (redraw_after_ && line != *redraw_after_) {
    // The first segment of the line after a dict written over tqdm's clear: the bar redrawn.
    const bool next = line == *redraw_after_ + 1;
    redraw_after_.reset();
    const int64_t before = dicts_.size() > 1 ? dicts_[dicts_.size() - 2].step : 0;
    const std::optional<TqdmCounter> c =
        next ? ReadTqdmCounter(text.substr(0, text.find('{'))) : std::optional<TqdmCounter>();
    if (c.has_value() && c->n > before && (bar_total_ == 0 || c->total == bar_total_)) {
      confirmed_ = Bar{c->n, c->total, line, c->last, c->elapsed};
      pending_.reset();
    }
  }
  // tqdm.write clears the bar with spaces before it writes the dict; where a paste turned the
  // carriage returns into line ends, that clear is a line of its own, and the bar still ends
  // the line before the dict.
  if (bar_ && bar_->line == line - 1 && !text.empty() && Trim(text).empty()) {
    bar_->line = line;
    return;
  }
  std::optional<TqdmCounter> c = ReadTqdmCounter(text.substr(0, text.find('{')));
  if (!c) return;
  if (first_bar_line_ == 0) first_bar_line_ = line;
  if (resumed_) bar_total_after_resume_ = std::max(bar_total_after_resume_, c->total);
  if (!dicts_.empty()) {  // the first bar after a counted dict bounds its step from above
    Numbered& d = dicts_.back();
    if (!d.known && d.hi == 0 && (d.total == 0 || d.total == c->total)) {
      d.hi = c->n;
      d.total = c->total;
    }
  }
  bar_ = Bar{c->n, c->total, line, c->last, c->elapsed};
  if (pending_ && pending_->total == c->total) {  // the first training bar after it
    if (pending_->n == c->n) confirmed_ = bar_;
    pending_.reset();
  }
}

void TrainerDictReader::Confirm(std::map<int64_t, Iteration>& steps, ParsedLog& log) {
  if (!confirmed_ || dicts_.empty()) return;
  const Bar bar = *std::exchange(confirmed_, std::nullopt);
  const int64_t to = bar.n;
  Numbered& d = dicts_.back();
  const int64_t from = d.step;
  if (d.known || !d.fresh || (to != from && steps.contains(to))) return;
  if (to != from) {
    auto node = steps.extract(from);
    node.key() = to;
    node.mapped().step = to;
    steps.insert(std::move(node));
    for (EvalPoint& e : log.evals)  // an evaluation after it, at its step
      if (e.step == from && e.line > d.line) e.step = to;
    if (log.trainer_average && log.trainer_average->through_step == from)
      log.trainer_average->through_step = to;
    d.step = to;
    if (last_ == from) last_ = to;
  }
  d.known = true;  // its count confirmed, or corrected
  --counted_;
  bar_total_ = bar.total;
}

std::optional<int64_t> TrainerDictReader::BarStep(const std::optional<Bar>& bar, int64_t line) {
  if (!bar) return std::nullopt;
  // On the line before, the bar must end it: a message printed after it ended that line, and
  // the drawings since (cleared by tqdm.write) are lost: it is a stale one.
  // On the dict's line, the dict must follow it: other text between them (torchrun --tee's
  // `[default0]:`, which tails stdout and stderr apart and glues one's line to the other's bar)
  // says the bar came from another stream, at another time.
  const bool near =
      bar->ends_line && (bar->line == line || (bar->line == line - 1 && bar->n < bar->total));
  if (!near || bar->n <= last_ || (bar_total_ != 0 && bar->total != bar_total_))
    return std::nullopt;
  if (stated_ && bar->n % logging_steps_ != 0 && !(first_step_ && bar->n == 1))
    return std::nullopt;  // a bar tqdm had not redrawn since an earlier step
  bar_total_ = bar->total;
  return bar->n;
}

std::optional<std::vector<int64_t>> TrainerDictReader::BarBoundSteps(int64_t* logging_steps) const {
  if (first_step_ || dicts_.empty()) return std::nullopt;
  const int64_t n = static_cast<int64_t>(dicts_.size());
  int64_t total = 0, cap = std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < n; ++i) {
    const Numbered& d = dicts_[i];
    if (d.known) continue;
    if (d.total != 0) {
      if (total != 0 && d.total != total) return std::nullopt;  // bars of another progress
      total = d.total;
    }
    if (d.hi > 0) cap = std::min(cap, d.hi / (i + 1));
  }
  if (cap == std::numeric_limits<int64_t>::max()) return std::nullopt;  // no bar after any
  if (total > 0) cap = std::min(cap, total / n);
  // Only the values each dict allows are tried: a known one's step / (i + 1) exactly, a counted
  // one's from its bar's n before it on (every value from 1 to a bar's n of 2^53, a mangled bar,
  // was a hang); no step beyond 2^53 (WholeCount's).
  constexpr int64_t kLargestStep = int64_t{1} << 53;
  cap = std::min(cap, kLargestStep / n);
  if (closing_at_) cap = std::min(cap, std::max<int64_t>(closing_at_->last, 0) / n);
  int64_t low = 1;
  for (int64_t i = 0; i < n; ++i) {
    const Numbered& d = dicts_[i];
    if (d.known && d.step % (i + 1) != 0) return std::nullopt;
    if (d.known) cap = std::min(cap, d.step / (i + 1));
    low = std::max(low, d.known ? d.step / (i + 1) : (std::max<int64_t>(d.lo, 0) + i) / (i + 1));
  }
  std::optional<int64_t> found;
  for (int64_t every = low; every <= cap; ++every) {
    bool fits = !closing_at_ || n * every <= closing_at_->last;
    for (int64_t i = 0; i < n && fits; ++i) {
      const Numbered& d = dicts_[i];
      const int64_t step = (i + 1) * every;
      fits = d.known ? d.step == step : step >= d.lo && (d.hi == 0 || step <= d.hi);
    }
    if (!fits) continue;
    if (found) return std::nullopt;  // two values fit: the bars do not say which
    found = every;
  }
  if (!found) return std::nullopt;
  *logging_steps = *found;
  std::vector<int64_t> at(dicts_.size());
  for (int64_t i = 0; i < n; ++i) at[i] = (i + 1) * *found;
  return at;
}

}  // namespace bm::logparse
