// The suites' loss-alignment rule (精度对齐; FlagPerf's llama2_70B / llama3_8B
// READMEs): a candidate run is aligned with a reference run when, from step 21
// on, the mean over steps of |loss_c - loss_r| / |loss_r| is below 2%. Both
// numbers are options. Only steps present in both curves count; how many steps
// were present in one curve only is reported, never silently dropped.
//
// Errors: kInvalidArgument when the options are out of range (tolerance <= 0,
// worst < 0) or when the curves share no step at or after from_step (the
// message gives both curves' step ranges); kCorrupt when a reference loss at a
// compared step is 0 or not finite (the relative difference is undefined).
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "engine/report/measurement.h"

namespace bm::report {

struct AlignmentOptions {
  int64_t from_step = 21;   // the first step that counts (the suites: 21)
  double tolerance = 0.02;  // mean relative difference must be below this (the suites: 2%)
  int worst = 5;            // how many of the worst steps to list
};

struct StepDiff {
  int64_t step = 0;
  double reference = 0;
  double candidate = 0;
  double rel_diff = 0;  // |candidate - reference| / |reference|
};

struct Alignment {
  AlignmentOptions options;
  int compared_steps = 0;
  int64_t first_step = 0;  // first and last compared step
  int64_t last_step = 0;
  int only_reference = 0;  // steps >= from_step present in one curve only
  int only_candidate = 0;
  double mean_rel_diff = 0;
  StepDiff largest;             // the compared step with the largest rel_diff (the first of ties)
  std::vector<StepDiff> worst;  // largest rel_diff first, ties by step; at most options.worst
  bool pass = false;            // mean_rel_diff < tolerance
};

Result<Alignment> CheckLossAlignment(const std::vector<LossPoint>& reference,
                                     const std::vector<LossPoint>& candidate,
                                     const AlignmentOptions& options = {});

}  // namespace bm::report
