// TrainerDictReader::InferUnstatedResume (trainer_dicts.h): a resumed run told from its closing
// dict when the log does not say it resumed.
//
// transformers' Trainer ends training with train_loss = _total_loss_scalar / global_step
// (Trainer._inner_training_loop, _finalize_training since 2026): the loss summed over the steps
// this process ran, over every step to global_step, the ones before the checkpoint it resumed
// from included; each loss dict is the mean over the steps since the dict before it (the first
// after a resume: since the checkpoint's step, _globalstep_last_logged). So when the dicts run to
// the last step, train_loss x N (the steps run in all) is the sum of each dict's loss times the
// steps it covers, and the first dict covers x = (train_loss x N - the others' sum) / its loss
// steps. x equal to its step (to the printed digits) is a run from the start; x short of it by
// r >= 1 is a run resumed from step r (5.17 at log_level warning, tests/data/logs/trainer_live/
// resumed: dicts at 6, 8, 10, 12 of 12, train_loss 3.567 = 6.116 x 7 / 12: x = 0.9995, r = 5).
// speed_metrics counts the samples of all N steps (num_train_samples) over this process's
// seconds, so the closing rate is then scaled to the N - r steps run, as for a stated resume.
#include <fmt/format.h>

#include <cmath>

#include "rules/logparse/trainer_dicts.h"

namespace bm::logparse {

void TrainerDictReader::InferUnstatedResume(std::string_view name, ParsedLog& log) const {
  if (resumed_ || !closing_line_ || !closing_train_loss_ || !log.trainer_average) return;
  TrainerAverage& avg = *log.trainer_average;
  std::vector<Iteration>& its = log.iterations;
  const int64_t n = avg.through_step;
  if (avg.line != *closing_line_ || !avg.samples_per_s || its.empty() || n <= 0 ||
      its.back().step != n || *closing_train_loss_ <= 0)
    return;
  for (const Iteration& it : its)
    if (!it.loss || !std::isfinite(*it.loss) || *it.loss <= 0) return;
  // The sums with their rounding: each printed value within half its last digit's unit
  // (HalfUnit: four significant digits, or 4 decimals).
  const double t = *closing_train_loss_;
  double rest = 0, rest_err = 0;
  for (size_t i = 1; i < its.size(); ++i) {
    const double span = static_cast<double>(its[i].step - its[i - 1].step);
    rest += *its[i].loss * span;
    rest_err += HalfUnit(*its[i].loss, 5e-5) * span;
  }
  const double first = *its.front().loss;
  const double x = (t * static_cast<double>(n) - rest) / first;
  const double err = (HalfUnit(t, 5e-5) * static_cast<double>(n) + rest_err +
                      HalfUnit(first, 5e-5) * std::fabs(x)) /
                     first;
  const int64_t s1 = its.front().step;
  const double r = static_cast<double>(s1) - x;
  if (!std::isfinite(r) || std::fabs(r) > 1e15) return;  // llround's range
  const int64_t resumed = std::llround(r);
  // One step count only (the rounding allows less than half a step either way), at least one
  // step before the first dict, and no logging step skipped before it.
  const int64_t every = its.size() > 1 ? its[1].step - its[0].step : s1;
  if (err >= 0.5 || std::fabs(r - static_cast<double>(resumed)) > err + 1e-9 || resumed < 1 ||
      resumed >= s1 || resumed < s1 - every)
    return;
  its.front().span = s1 - resumed;
  *avg.samples_per_s *= static_cast<double>(n - resumed) / static_cast<double>(n);
  avg.excluded_steps = resumed;
  avg.what =
      "the Trainer's train_samples_per_second x the steps run after the resume / all steps (it "
      "counts the steps before the resume too)";
  log.notes.push_back(fmt::format(
      "{}:{}: the run resumed from step {} without saying so (transformers at its default "
      "log_level): train_loss {} x {} steps is the loss of {:.4g} step(s) to the first dict (step "
      "{}) and the dicts' after it; train_samples_per_second (all {} steps over this run's "
      "seconds) is scaled by {}/{}",
      name, *closing_line_, resumed, t, n, x, s1, n, n - resumed, n));
}

}  // namespace bm::logparse
