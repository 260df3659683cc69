// TrainerDictReader::InferSteps, SpacingSteps and MicroBatchSteps (trainer_dicts.h): the steps of
// counted dicts from their epochs, and the printing precision of the Trainer's numbers it reads
// them at; PlaceEvals: the steps of the evaluations that named none.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "rules/logparse/trainer_dicts.h"

namespace bm::logparse {

// Half the last printed digit's unit of a value the Trainer rounded to `at_least` (half of its
// last decimal) and may have printed f"{v:.4g}" (four significant digits).
double HalfUnit(double v, double at_least) {
  return std::max(at_least, 0.5 * std::pow(10.0, std::floor(std::log10(std::fabs(v))) - 3));
}

// Half the unit of an epoch's last printed digit. A quoted epoch is transformers' f"{v:.4g}"
// (from 2025): four significant digits, "2" for 2.000. A number was round(epoch, 2) before
// (±0.005), or is unrounded (a jsonl's epoch, exact but for float error): its printed decimals
// tell, with 2 at least.
double EpochHalf(double epoch, bool quoted) {
  if (quoted) return HalfUnit(epoch, 0);
  const std::string text = fmt::format("{}", epoch);
  const size_t dot = text.find('.');
  const int decimals = dot == std::string::npos || text.find('e') != std::string::npos
                           ? 0
                           : static_cast<int>(text.size() - dot - 1);
  return std::max(0.5 * std::pow(10.0, -std::max(decimals, 2)), 1e-9);
}

std::pair<double, double> TrainerDictReader::ClosingStepsPerEpoch() const {
  const double e = closing_at_->epoch, h = closing_at_->epoch_half;
  double lo = static_cast<double>(closing_at_->first) / (e + h);
  double hi = e > h ? static_cast<double>(closing_at_->last) / (e - h) : INFINITY;
  // The Trainer's epoch counts micro-batches (epoch + micro-batches done / micro-batches an
  // epoch): with gradient accumulation an epoch's last step may take fewer, so after a whole
  // epoch the steps run over the epoch are S steps an epoch while within an epoch a step moves
  // the epoch by 1/r, S - 1 < r <= S (LLaMA-Factory on 2 XPUs, 545 micro-batches an epoch, 8 a
  // step: 69 steps an epoch, step 40 at epoch 320/545 = 0.59, not 40/69 = 0.58). Where the log
  // says the run accumulates (the summary's Gradient Accumulation steps above 1), the closing
  // dict bounds steps per epoch only that loosely.
  if (accumulates_ && e - h >= 1) {
    lo -= 1;
    hi += 1;
  }
  return {lo, hi};
}

std::optional<std::vector<int64_t>> TrainerDictReader::InferSteps(
    int64_t* logging_steps, std::pair<double, double>* spe) const {
  std::vector<size_t> known;
  for (size_t i = 0; i < dicts_.size(); ++i) {
    if (!dicts_[i].epoch || *dicts_[i].epoch <= 0) return std::nullopt;
    if (dicts_[i].known) known.push_back(i);
  }
  if (known.empty() && !closing_at_) return std::nullopt;
  auto half = [&](size_t i) { return dicts_[i].epoch_half; };
  // Steps per epoch: step / epoch, within the rounding of every epoch.
  auto fits = [&](const std::vector<int64_t>& at, double* lo, double* hi) {
    *lo = 0;
    *hi = INFINITY;
    for (size_t i = 0; i < dicts_.size(); ++i) {
      if (i > 0 && at[i] <= at[i - 1]) return false;
      const double e = *dicts_[i].epoch;
      *lo = std::max(*lo, static_cast<double>(at[i]) / (e + half(i)));
      if (e > half(i)) *hi = std::min(*hi, static_cast<double>(at[i]) / (e - half(i)));
    }
    if (closing_at_) {  // the closing dict's steps run (a range while unsettled) too
      const std::pair<double, double> c = ClosingStepsPerEpoch();
      *lo = std::max(*lo, c.first);
      *hi = std::min(*hi, c.second);
      if (at.back() > closing_at_->last) return false;
    }
    return *lo <= *hi;
  };
  std::vector<int64_t> at(dicts_.size(), 0);
  // logging_steps from two numbered dicts with counted ones between them; all such pairs agree.
  int64_t every = 0;
  for (size_t k = 1; k < known.size(); ++k) {
    const size_t i = known[k - 1], j = known[k];
    if (j - i < 2) continue;
    const int64_t d = dicts_[j].step - dicts_[i].step;
    const int64_t n = static_cast<int64_t>(j - i);
    if (d <= 0 || d % n != 0 || (every != 0 && d / n != every)) return std::nullopt;
    every = d / n;
  }
  if (every > 0) {
    size_t prev = known.front();
    for (size_t i = 0; i < dicts_.size(); ++i) {
      if (dicts_[i].known) {
        at[i] = dicts_[i].step;
        prev = i;
      } else if (i < known.front()) {
        at[i] = dicts_[known.front()].step - every * static_cast<int64_t>(known.front() - i);
      } else {
        at[i] = dicts_[prev].step + every * static_cast<int64_t>(i - prev);
      }
    }
    if (at.front() < 1 || !fits(at, &spe->first, &spe->second)) return std::nullopt;
    *logging_steps = every;
    return at;
  }
  // From the epochs: the numbered dicts (and the closing dict) bound steps per epoch; a counted
  // dict takes the one step its epoch's range allows between its neighbours, and once placed
  // bounds steps per epoch in turn, until every dict is placed (else nothing is inferred).
  std::vector<bool> placed(dicts_.size(), false);
  for (size_t i : known) {
    at[i] = dicts_[i].step;
    placed[i] = true;
  }
  for (bool progress = true; progress;) {
    progress = false;
    // Bounds from the placed dicts alone.
    double lo = 0, hi = INFINITY;
    for (size_t i = 0; i < dicts_.size(); ++i) {
      if (!placed[i]) continue;
      const double e = *dicts_[i].epoch;
      lo = std::max(lo, static_cast<double>(at[i]) / (e + half(i)));
      if (e > half(i)) hi = std::min(hi, static_cast<double>(at[i]) / (e - half(i)));
    }
    if (closing_at_) {
      const std::pair<double, double> c = ClosingStepsPerEpoch();
      lo = std::max(lo, c.first);
      hi = std::min(hi, c.second);
    }
    if (lo > hi) return std::nullopt;
    if (!std::isfinite(hi)) break;
    int64_t prev = 0;
    for (size_t i = 0; i < dicts_.size(); ++i) {
      if (placed[i]) {
        prev = at[i];
        continue;
      }
      int64_t next = closing_at_ ? closing_at_->last + 1 : std::numeric_limits<int64_t>::max();
      for (size_t j = i + 1; j < dicts_.size(); ++j) {
        if (placed[j]) {
          next = at[j];
          break;
        }
      }
      const double e = *dicts_[i].epoch;
      const int64_t first = std::max(static_cast<int64_t>(std::ceil((e - half(i)) * lo)), prev + 1);
      const int64_t last = std::min(static_cast<int64_t>(std::floor((e + half(i)) * hi)), next - 1);
      if (first > last) return std::nullopt;
      if (first == last) {
        at[i] = first;
        placed[i] = true;
        prev = first;
        progress = true;
      }
    }
  }
  if (std::find(placed.begin(), placed.end(), false) != placed.end()) return std::nullopt;
  if (!fits(at, &spe->first, &spe->second)) return std::nullopt;
  return at;
}

std::optional<std::vector<int64_t>> TrainerDictReader::SpacingSteps(
    int64_t* logging_steps, std::pair<double, double>* spe) const {
  const size_t n = dicts_.size();
  if (first_step_ || n < 2) return std::nullopt;
  for (const Numbered& d : dicts_)
    if (!d.epoch || *d.epoch <= 0) return std::nullopt;
  // Steps per epoch from the numbered dicts and the closing dict.
  double lo = 0, hi = INFINITY;
  for (const Numbered& d : dicts_) {
    if (!d.known) continue;
    lo = std::max(lo, static_cast<double>(d.step) / (*d.epoch + d.epoch_half));
    if (*d.epoch > d.epoch_half)
      hi = std::min(hi, static_cast<double>(d.step) / (*d.epoch - d.epoch_half));
  }
  if (closing_at_) {
    const std::pair<double, double> c = ClosingStepsPerEpoch();
    lo = std::max(lo, c.first);
    hi = std::min(hi, c.second);
  }
  if (!std::isfinite(hi) || lo <= 0 || lo > hi) return std::nullopt;
  // logging_steps from the epochs between consecutive dicts: one integer only.
  double every_lo = 0, every_hi = INFINITY;
  for (size_t i = 1; i < n; ++i) {
    const double gap = *dicts_[i].epoch - *dicts_[i - 1].epoch;
    const double half = dicts_[i].epoch_half + dicts_[i - 1].epoch_half;
    if (gap - half <= 0) return std::nullopt;
    every_lo = std::max(every_lo, (gap - half) * lo);
    every_hi = std::min(every_hi, (gap + half) * hi);
  }
  const int64_t every = static_cast<int64_t>(std::ceil(every_lo));
  if (every < 1 || every != static_cast<int64_t>(std::floor(every_hi))) return std::nullopt;
  // Each dict at the one multiple of it its epoch allows, every one after the one before.
  std::vector<int64_t> at(n);
  for (size_t i = 0; i < n; ++i) {
    const double e = *dicts_[i].epoch, h = dicts_[i].epoch_half;
    const int64_t first =
        static_cast<int64_t>(std::ceil((e - h) * lo / static_cast<double>(every)));
    const int64_t last =
        static_cast<int64_t>(std::floor((e + h) * hi / static_cast<double>(every)));
    if (first != last || first < 1) return std::nullopt;
    at[i] = first * every;
    if ((i > 0 && at[i] != at[i - 1] + every) || (dicts_[i].known && at[i] != dicts_[i].step))
      return std::nullopt;
  }
  if (closing_at_ && at.back() > closing_at_->last) return std::nullopt;
  // Steps per epoch as every dict, at its step, allows.
  for (size_t i = 0; i < n; ++i) {
    const double e = *dicts_[i].epoch, h = dicts_[i].epoch_half;
    lo = std::max(lo, static_cast<double>(at[i]) / (e + h));
    if (e > h) hi = std::min(hi, static_cast<double>(at[i]) / (e - h));
  }
  if (lo > hi) return std::nullopt;
  *spe = {lo, hi};
  *logging_steps = every;
  return at;
}

// transformers' Trainer._inner_training_loop (read at huggingface/transformers 000945a9, 2025;
// 5.17's own log_history, tests/data/logs/trainer_live, agrees): an epoch of M micro-batches (the
// dataloader's length, steps_in_epoch) runs ceil(M / GAS) optimizer steps, the last one on the
// remainder (do_sync_step at every GAS-th micro-batch or the epoch's last), and after each sets
// `self.state.epoch = epoch + (step + 1 + steps_skipped) / steps_in_epoch`, step the micro-batch's
// index in the epoch. So with S steps an epoch the j-th step of an epoch is at min(j x GAS, M) / M
// into it: j / r for j < S, with r = M / GAS in (S - 1, S], and the epoch's end for j = S (5.17,
// GAS 2 over 9 micro-batches: steps 2, 4, 5, 6 at 0.4444, 0.8889, 1, 1.222). r is searched as any
// number in (S - 1, S], not only a ratio of integers: a wider search, so an answer unique in it is
// unique for every M and GAS. Narrows [*lo, *hi], the r that put step `k` at `epoch` (± `half`);
// false when none does.
namespace {
bool MicroBatchEpochFits(int64_t k, int64_t s, double epoch, double half, double* lo, double* hi) {
  const int64_t whole = (k - 1) / s, j = k - whole * s;
  const double q = static_cast<double>(whole);
  if (j == s) return std::fabs(q + 1 - epoch) <= half;
  const double top = epoch + half - q, bottom = epoch - half - q;
  if (top <= 0) return false;
  *lo = std::max(*lo, static_cast<double>(j) / top);
  if (bottom > 0) *hi = std::min(*hi, static_cast<double>(j) / bottom);
  return *lo <= *hi && *hi > static_cast<double>(s - 1);
}
}  // namespace

std::optional<std::vector<int64_t>> TrainerDictReader::MicroBatchSteps(
    int64_t* logging_steps, std::pair<double, double>* spe) const {
  if (!closing_at_ || dicts_.empty()) return std::nullopt;
  for (const Numbered& d : dicts_)
    if (!d.epoch || *d.epoch <= 0) return std::nullopt;
  const size_t n = dicts_.size();
  const double ec = closing_at_->epoch, hc = closing_at_->epoch_half;
  if (ec <= hc || closing_at_->last - closing_at_->first > 100) return std::nullopt;
  std::optional<std::vector<int64_t>> found;
  int64_t every = 0, s_first = 0, s_last = 0;
  std::vector<int64_t> at(n);
  for (int64_t run = closing_at_->first; run <= closing_at_->last; ++run) {
    // The S steps an epoch (and the r they allow) that put the closing dict's step `run` at its
    // epoch: run / S to run / (S - 1) epochs.
    struct Rate {
      int64_t s;
      double lo, hi;
    };
    std::vector<Rate> rates;
    const int64_t s_min = std::max<int64_t>(1, static_cast<int64_t>(std::floor(run / (ec + hc))));
    const int64_t s_max = static_cast<int64_t>(std::ceil(run / (ec - hc))) + 1;
    if (s_max - s_min > 10'000'000) return std::nullopt;  // too loose to search
    for (int64_t s = s_min; s <= s_max; ++s) {
      Rate r{s, 0, static_cast<double>(s)};
      if (MicroBatchEpochFits(run, s, ec, hc, &r.lo, &r.hi)) rates.push_back(r);
    }
    if (static_cast<double>(rates.size()) * static_cast<double>(run) > 5e7) return std::nullopt;
    for (int64_t l = 1; l <= run && !rates.empty(); ++l) {
      // The dicts at the last multiples of L up to the steps run, or (logging_first_step) at
      // step 1 and then every multiple of L.
      for (const bool first_step : {false, true}) {
        if (first_step_ && !first_step) continue;
        const int64_t last = run / l * l;
        if (first_step && (l == 1 || run / l != static_cast<int64_t>(n) - 1)) continue;
        for (size_t i = 0; i < n; ++i)
          at[i] = first_step && i == 0 ? 1 : last - static_cast<int64_t>(n - 1 - i) * l;
        if (at[0] < 1) continue;
        bool known_fit = true;
        for (size_t i = 0; i < n; ++i)
          known_fit = known_fit && (!dicts_[i].known || dicts_[i].step == at[i]);
        if (!known_fit) continue;
        for (Rate r : rates) {
          bool fit = true;
          for (size_t i = 0; fit && i < n; ++i)
            fit = MicroBatchEpochFits(at[i], r.s, *dicts_[i].epoch, dicts_[i].epoch_half, &r.lo,
                                      &r.hi);
          if (!fit) continue;
          if (found && (*found != at || every != l)) return std::nullopt;  // several answers
          found = at;
          every = l;
          s_first = s_first == 0 ? r.s : std::min(s_first, r.s);
          s_last = std::max(s_last, r.s);
        }
      }
    }
  }
  if (!found) return std::nullopt;
  // A step k of S an epoch is at k / S to k / (S - 1) epochs: the steps per epoch PlaceEvals uses.
  *spe = {static_cast<double>(s_first - 1), static_cast<double>(s_last)};
  *logging_steps = every;
  return found;
}

std::optional<std::pair<double, double>> TrainerDictReader::NumberedStepsPerEpoch() const {
  double lo = 0, hi = INFINITY;
  for (const Numbered& d : dicts_) {
    if (!d.known || !d.epoch || *d.epoch <= d.epoch_half) return std::nullopt;
    lo = std::max(lo, static_cast<double>(d.step) / (*d.epoch + d.epoch_half));
    hi = std::min(hi, static_cast<double>(d.step) / (*d.epoch - d.epoch_half));
  }
  if (closing_at_) {
    const std::pair<double, double> c = ClosingStepsPerEpoch();
    lo = std::max(lo, c.first);
    hi = std::min(hi, c.second);
  }
  if (dicts_.empty() || lo > hi) return std::nullopt;
  return std::pair{lo, hi};
}

void TrainerDictReader::PlaceEvals(const std::vector<int64_t>& at, std::pair<double, double> spe,
                                   ParsedLog& log) const {
  // An evaluation is at the step of the loss dict before it, unless its epoch puts it at one
  // step after that (the last step, past the last logging step) and before the next. One before
  // the first loss dict (eval_steps below logging_steps) is where its epoch alone puts it, if
  // anywhere.
  for (const EvalAfter& e : eval_after_) {
    const bool before_any = e.after == 0;
    const bool has_epoch = e.epoch && *e.epoch > 0;
    if (before_any && !(has_epoch && spe.second > 0)) continue;
    int64_t step = before_any ? 1 : at[e.after - 1];
    if (has_epoch) {
      const double half = e.epoch_half;
      const int64_t first =
          std::max<int64_t>(step, static_cast<int64_t>(std::ceil((*e.epoch - half) * spe.first)));
      int64_t last = static_cast<int64_t>(std::floor((*e.epoch + half) * spe.second));
      if (e.after < at.size()) last = std::min(last, at[e.after] - 1);
      if (first == last) {
        step = first;
      } else if (before_any) {
        continue;
      }
    }
    log.evals[e.eval].step = step;
  }
}

}  // namespace bm::logparse
