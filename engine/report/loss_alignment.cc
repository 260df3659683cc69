#include "engine/report/loss_alignment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace bm::report {
namespace {

std::string Range(const std::vector<LossPoint>& curve) {
  if (curve.empty()) return "no steps";
  return fmt::format("steps {}–{}", curve.front().step, curve.back().step);
}

}  // namespace

Result<Alignment> CheckLossAlignment(const std::vector<LossPoint>& reference,
                                     const std::vector<LossPoint>& candidate,
                                     const AlignmentOptions& options) {
  if (!(options.tolerance > 0) || options.worst < 0) {
    return Errorf(ErrorCode::kInvalidArgument, "tolerance must be > 0 and worst >= 0 (got {}, {})",
                  options.tolerance, options.worst);
  }
  Alignment a;
  a.options = options;
  std::vector<StepDiff> diffs;
  double sum = 0;
  // Both curves are sorted by step (loss_log.h): walk them together.
  size_t i = 0, j = 0;
  while (i < reference.size() || j < candidate.size()) {
    bool has_r = i < reference.size(), has_c = j < candidate.size();
    if (has_r && (!has_c || reference[i].step < candidate[j].step)) {
      if (reference[i].step >= options.from_step) ++a.only_reference;
      ++i;
      continue;
    }
    if (has_c && (!has_r || candidate[j].step < reference[i].step)) {
      if (candidate[j].step >= options.from_step) ++a.only_candidate;
      ++j;
      continue;
    }
    const LossPoint& r = reference[i++];
    const LossPoint& c = candidate[j++];
    if (r.step < options.from_step) continue;
    if (r.loss == 0 || !std::isfinite(r.loss) || !std::isfinite(c.loss)) {
      return Errorf(ErrorCode::kCorrupt, "step {}: losses {} and {}: relative difference undefined",
                    r.step, r.loss, c.loss);
    }
    StepDiff d{r.step, r.loss, c.loss, std::fabs(c.loss - r.loss) / std::fabs(r.loss)};
    sum += d.rel_diff;
    diffs.push_back(d);
  }
  if (diffs.empty()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "no step from {} on in both curves (reference: {}; candidate: "
                  "{})",
                  options.from_step, Range(reference), Range(candidate));
  }
  a.compared_steps = static_cast<int>(diffs.size());
  a.first_step = diffs.front().step;
  a.last_step = diffs.back().step;
  a.mean_rel_diff = sum / static_cast<double>(diffs.size());
  a.pass = a.mean_rel_diff < options.tolerance;
  std::stable_sort(diffs.begin(), diffs.end(),
                   [](const StepDiff& x, const StepDiff& y) { return x.rel_diff > y.rel_diff; });
  a.largest = diffs.front();  // kept when worst = 0 lists none
  diffs.resize(std::min(diffs.size(), static_cast<size_t>(options.worst)));
  a.worst = std::move(diffs);
  return a;
}

}  // namespace bm::report
