// The spans of Megatron's iteration records (see megatron.cc's top comment): the gaps, ms-swift's
// and core 0.16's first lines, samples from consumed samples, tokens from consumed tokens,
// all-skipped and NaN intervals.
#include "rules/logparse/megatron_spans.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// The consumed count the line of `it` printed, if any.
std::optional<double> ConsumedAt(const std::map<int64_t, double>& consumed, const Iteration& it) {
  auto c = consumed.find(it.line);
  return c == consumed.end() ? std::nullopt : std::optional<double>(c->second);
}

// A line without `global batch size` (a fork's, or one cut short where a README quotes it)
// still counts `consumed samples`: the samples per step are the growth since the previous line
// over the steps between them, and a run's first line's consumed samples over its step where
// that gives the same batch as the line after it.
void SamplesFromConsumed(std::vector<Iteration>& its, const IterationLineExtras& extras,
                         std::string_view name, std::vector<std::string>& notes) {
  auto at = [&](const Iteration& it) { return ConsumedAt(extras.consumed_samples, it); };
  int64_t derived = 0, first_line = 0;
  for (size_t i = 1; i < its.size(); ++i) {
    std::optional<double> c = at(its[i]), before = at(its[i - 1]);
    const int64_t steps = its[i].step - its[i - 1].step;
    if (its[i].samples || !c || !before || *c <= *before || steps != its[i].span ||
        extras.after_elision.count(its[i].line) != 0)  // the growth of lines left out too
      continue;
    its[i].samples = (*c - *before) / static_cast<double>(steps);
    first_line = first_line ? first_line : its[i].line;
    ++derived;
  }
  for (size_t i = 0; i + 1 < its.size(); ++i) {
    std::optional<double> c = at(its[i]);
    const bool starts_run = i == 0 || !at(its[i - 1]);
    if (its[i].samples || !starts_run || !c || !its[i + 1].samples || its[i].step <= 0) continue;
    if (*c == *its[i + 1].samples * static_cast<double>(its[i].step)) {
      its[i].samples = its[i + 1].samples;
      first_line = std::min(first_line ? first_line : its[i].line, its[i].line);
      ++derived;
    }
  }
  if (derived > 0) {
    notes.push_back(fmt::format(
        "samples: {} iteration line(s) from {}:{} print no global batch size: the samples per "
        "step from their consumed samples (the growth since the previous line over its steps)",
        derived, name, first_line));
  }
}

// A line that prints `consumed tokens` but no token rate: the tokens of its steps are the growth
// since the previous line (or, for a record that reaches back to step 1 of a run whose batch did
// not change, its whole count), so its rate is that over its steps' time. Exact where the tokens
// per step vary (variable-length fine-tuning, curriculum sequence lengths), which samples x the
// sequence length is not. Not across an excerpt's elision mark: the growth there counts the lines
// left out, whose time (and batch, in a batch-size ramp-up) the line does not give.
void TokensFromConsumed(std::vector<Iteration>& its, const IterationLineExtras& extras,
                        std::string_view name, std::vector<std::string>& notes) {
  auto at = [&](const Iteration& it) { return ConsumedAt(extras.consumed_tokens, it); };
  int64_t derived = 0, first_line = 0;
  for (size_t i = 0; i < its.size(); ++i) {
    Iteration& it = its[i];
    std::optional<double> c = at(it);
    if (it.tokens_per_s || it.tokens_per_device_per_s || !c || !it.ms || *it.ms <= 0) continue;
    std::optional<double> tokens;
    if (i > 0 && its[i].step - its[i - 1].step == it.span &&
        extras.after_elision.count(it.line) == 0) {  // not over lines an excerpt left out
      if (std::optional<double> before = at(its[i - 1]); before && *c > *before)
        tokens = *c - *before;
    } else if (i == 0 && it.span == it.step && *c > 0) {
      // The run's whole count over all its steps at this line's time: only where the batch was
      // the same all along (the consumed samples, where printed, are the batch times the steps;
      // not in a batch-size ramp-up, where the early steps were smaller).
      std::optional<double> samples = ConsumedAt(extras.consumed_samples, it);
      if (!samples || !it.samples || *samples == *it.samples * static_cast<double>(it.step))
        tokens = *c;
    }
    if (!tokens) continue;
    it.tokens_per_s = *tokens / (static_cast<double>(it.span) * *it.ms / 1000.0);
    first_line = first_line ? first_line : it.line;
    ++derived;
  }
  if (derived > 0) {
    notes.push_back(fmt::format(
        "tokens: {} iteration line(s) from {}:{} print consumed tokens but no token rate: the "
        "rate from the growth of consumed tokens over the line's steps and their time",
        derived, name, first_line));
  }
}

// An excerpt's elision mark (`...`, `[...]`) between two records: a README or notes page left
// the lines between them out, so the later record averages one interval, not the gap. The
// interval: the most common gap between records with no mark between them (ties: the larger; a
// gap from a line at iteration 1 left out, core 0.16's first line). The first record's span came
// from the gap to the second: with a mark between them, from the interval too.
void SpanElidedGaps(std::vector<Iteration>& its, const std::set<int64_t>& after_elision,
                    std::string_view name, std::vector<std::string>& notes) {
  auto elided = [&](size_t i) { return after_elision.count(its[i].line) != 0; };
  std::map<int64_t, int> gaps;
  for (size_t i = 1; i < its.size(); ++i)
    if (!elided(i) && its[i - 1].step != 1) ++gaps[its[i].step - its[i - 1].step];
  int64_t interval = 0;
  for (auto [gap, n] : gaps)
    if (interval == 0 || n >= gaps[interval]) interval = gap;
  if (interval <= 0) return;
  int64_t changed = 0, first_line = 0;
  for (size_t i = 0; i < its.size(); ++i) {
    const bool mark_after_first = i == 0 && its.size() > 1 && elided(1);
    if (!(i > 0 && elided(i)) && !mark_after_first) continue;
    if (its[i].span <= interval) continue;
    its[i].span = interval;
    first_line = first_line ? first_line : its[i].line;
    ++changed;
  }
  if (changed > 0) {
    notes.push_back(fmt::format(
        "{}:{}: {} record(s) next to an excerpt's elision mark ('...': lines left out) span the "
        "log interval, {} (the gap between lines with no mark between them), not the gap",
        name, first_line, changed, interval));
  }
}

// The core >= 0.16 first interval (see the top): `second` covers the
// iterations from `first`'s to its own; keep only those after `first`.
void SubtractFirstIteration(const Iteration& first, Iteration& second) {
  const int64_t covered = second.step - first.step + 1;  // iterations in second's averages
  const int64_t span = covered - 1;
  const std::optional<double> covered_ms = second.ms;
  if (first.ms && second.ms) second.ms = (*second.ms * covered - *first.ms) / span;
  // Its FLOP/s per device is one iteration's FLOPs over the mean time of all it covers (Megatron's
  // throughput per GPU): the same FLOPs over the mean time of those after the first.
  if (second.flops_per_device_per_s && first.ms && covered_ms && *second.ms > 0) {
    second.flops_per_device_per_s = *second.flops_per_device_per_s * *covered_ms / *second.ms;
  } else {
    second.flops_per_device_per_s.reset();
  }
  const int64_t advanced_all = covered - second.skipped;
  const int64_t advanced_first = 1 - first.skipped;
  const int64_t advanced = advanced_all - advanced_first;
  if (second.loss && advanced > 0) {
    second.loss = (*second.loss * advanced_all - first.loss.value_or(0) * advanced_first) /
                  static_cast<double>(advanced);
  } else {
    second.loss.reset();
  }
  second.skipped -= first.skipped;
  second.nan -= first.nan;
  second.span = span;
}

}  // namespace

void SpanMegatronRecords(ParsedLog& log, const IterationLineExtras& extras, std::string_view name) {
  const bool swift = extras.swift;
  FillSpansFromGaps(log.iterations);
  if (!extras.after_elision.empty())
    SpanElidedGaps(log.iterations, extras.after_elision, name, log.notes);
  std::vector<Iteration>& its = log.iterations;
  if (swift && its[0].step > 1 && its[0].span == its[0].step) {
    // ms-swift printed iteration 1's line before this one and restarted its averages there.
    its[0].span = its[0].step - 1;
    log.notes.push_back(fmt::format(
        "{}:{}: ms-swift's Megatron trainer prints iteration 1's line and restarts its averages "
        "after it: iteration {}'s line, the first here, averages iterations 2-{}",
        name, its[0].line, its[0].step, its[0].step));
  }
  // The interval: the most common gap (two records only: a fresh run's 1 and the
  // first multiple of the interval; lines at 1 and 2 alone are as much --log-interval 1's, the
  // common case, and are read as such).
  std::map<int64_t, int> gaps;
  for (size_t i = 1; i < its.size(); ++i) ++gaps[its[i].step - its[i - 1].step];
  int64_t interval = 0;
  for (auto [gap, n] : gaps)
    if (its.size() >= 3 && (interval == 0 || n >= gaps[interval]))
      interval = gap;  // ties: the larger
  if (its.size() == 2 && its[0].step == 1 && its[1].step > 2) interval = its[1].step;
  for (size_t i = 0; interval > 1 && !swift && i + 1 < its.size(); ++i) {
    // A run's first line (a fresh start or a resume) off the interval, the next on it.
    const int64_t f = its[i].step, next = its[i + 1].step;
    if (f % interval == 0 || next % interval != 0 || next - f >= interval) continue;
    // A resumed run's first line follows its previous run's last within an interval (that run
    // would have printed the next multiple before its checkpoint); a line a whole interval or
    // more after the previous one is an excerpt's pick among lines, not a run's first.
    if (i > 0 && f > its[i - 1].step && f - its[i - 1].step >= interval) continue;
    // Nor across an excerpt's elision mark: the lines between were left out.
    if (extras.after_elision.count(its[i + 1].line) != 0) continue;
    // A line that would leave no time for its other iterations once the first is taken out
    // does not average it in: not core 0.16's.
    const Iteration &first = its[i], &second = its[i + 1];
    if (first.ms && second.ms && *second.ms * static_cast<double>(next - f + 1) <= *first.ms)
      continue;
    SubtractFirstIteration(its[i], its[i + 1]);
    log.notes.push_back(fmt::format(
        "{}:{}: iteration {}'s line averages iterations {}-{} (Megatron core >= 0.16 does not "
        "reset its timers after a run's first iteration's line): iterations {}-{} derived by "
        "taking iteration {} ({}:{}) out",
        name, its[i + 1].line, next, f, next, f + 1, next, f, name, its[i].line));
  }
  SamplesFromConsumed(its, extras, name, log.notes);
  TokensFromConsumed(its, extras, name, log.notes);
  const Iteration* first_nan = nullptr;
  int64_t nan_lines = 0;
  for (Iteration& it : its) {
    if (it.skipped >= it.span && it.loss) it.loss.reset();  // an all-skipped interval's 0
    if (!it.loss && it.skipped < it.span && extras.counted_lines.count(it.line) != 0) {
      it.loss = std::numeric_limits<double>::quiet_NaN();
      ++it.nan;
      first_nan = first_nan ? first_nan : &it;
      ++nan_lines;
    }
  }
  if (first_nan) {
    log.notes.push_back(fmt::format(
        "loss: {} iteration line(s) from {}:{} (iteration {}) on print no lm loss though not "
        "all their iterations were skipped: Megatron leaves out a loss whose average is NaN "
        "(training_log prints it only if >= 0); each counted as a NaN loss and one NaN iteration",
        nan_lines, name, first_nan->line, first_nan->step));
  }
}

}  // namespace bm::logparse
