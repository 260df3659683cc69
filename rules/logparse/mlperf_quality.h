// What an MLPerf Training benchmark's eval_accuracy measures and the quality target a run trains
// to, by the benchmark the log names (submission_benchmark), as MLPerf states them: the training
// rules' tables of the closed division's and the deprecated benchmarks' models and quality targets
// (mlcommons/training_policies, training_rules.adoc) and the compliance checker's check of the
// eval_accuracy events (mlcommons/logging,
// mlperf_logging/compliance_checker/training_*/closed_*.yaml, whose comparison gives the direction:
// `>=` higher is better, `<=` lower).
//
// Thread safety: pure functions over a constant table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// The metric of `benchmark` ("resnet"; case and '-' for '_' ignored: Primus logs "gpt-oss-20b"),
// nullopt for a benchmark not in the table. `series_metric` is the metadata.metric of the
// evaluations the series keeps: Stable Diffusion logs two, FID (lower is better, target 90) and
// CLIP (higher, 0.15), Mask R-CNN one object of two, BBOX (box mAP, 0.377) and SEGM (mask mAP,
// 0.339); "" elsewhere.
std::optional<EvalMetric> MlperfQuality(std::string_view benchmark, std::string_view series_metric);

// The metrics whose targets `benchmark` asks of one evaluation, by the eval_accuracy events'
// metric (Stable Diffusion: FID and CLIP; Mask R-CNN: BBOX and SEGM); empty for the others.
std::vector<std::pair<std::string, EvalMetric>> MlperfJointQualities(std::string_view benchmark);

// Whether `value` reaches `metric`'s target in its direction (`v >= 0.759`, `v <= 0.925`, or
// passes it where the check is strict); nullopt when the metric has no target or no direction.
std::optional<bool> MeetsTarget(const EvalMetric& metric, double value);

// Whether any of `evals` reaches `metric`'s target, as MLPerf's compliance checker asks of a run
// (at least one eval_accuracy); nullopt as MeetsTarget.
std::optional<bool> AnyMeetsTarget(const EvalMetric& metric, const std::vector<EvalPoint>& evals);

}  // namespace bm::logparse
