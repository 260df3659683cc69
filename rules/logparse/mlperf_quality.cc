#include "rules/logparse/mlperf_quality.h"

#include <algorithm>
#include <string>

#include "base/mllog.h"

namespace bm::logparse {
namespace {

using Kind = EvalMetric::Kind;

struct Quality {
  std::string_view benchmark;      // submission_benchmark, lower case, '_' for '-'
  std::string_view series_metric;  // Stable Diffusion's metadata.metric, else ""
  std::string_view name;
  Kind kind;
  bool higher_is_better;
  double target;
  bool strict;
};

// The closed division's targets (training_rules.adoc, "closed division models and quality
// targets" and "Deprecated benchmarks models and quality targets"; the checker of the newest
// version that has the benchmark for the direction and the older ones' targets: dlrm 3.1, rnnt
// 3.1, minigo 3.1, qwen35_397b_grpo 6.1).
constexpr Quality kQualities[] = {
    {"resnet", "", "top-1 accuracy", Kind::kAccuracy, true, 0.759, false},
    {"bert", "", "masked-LM accuracy", Kind::kAccuracy, true, 0.720, false},
    {"gnn", "", "node classification accuracy", Kind::kAccuracy, true, 0.72, false},
    {"rgat", "", "node classification accuracy", Kind::kAccuracy, true, 0.72, false},
    {"qwen35_397b_grpo", "", "validation accuracy", Kind::kAccuracy, true, 0.69, true},
    {"ssd", "", "mAP", Kind::kScore, true, 0.340, false},
    {"retinanet", "", "mAP", Kind::kScore, true, 0.340, false},
    {"unet3d", "", "mean Dice", Kind::kScore, true, 0.908, false},
    {"dlrm", "", "AUC", Kind::kScore, true, 0.8025, false},
    {"dlrm_dcnv2", "", "AUC", Kind::kScore, true, 0.80275, false},
    {"stable_diffusion", "FID", "FID", Kind::kScore, false, 90.0, false},
    {"stable_diffusion", "CLIP", "CLIP score", Kind::kScore, true, 0.15, false},
    {"maskrcnn", "BBOX", "box mAP", Kind::kScore, true, 0.377, false},
    {"maskrcnn", "SEGM", "mask mAP", Kind::kScore, true, 0.339, false},
    {"rnnt", "", "word error rate", Kind::kScore, false, 0.058, false},
    {"minigo", "", "win rate", Kind::kScore, true, 0.5, false},
    {"gpt3", "", "log perplexity", Kind::kLoss, false, 2.69, false},
    {"llama31_405b", "", "log perplexity", Kind::kLoss, false, 5.6, false},
    {"llama31_8b", "", "log perplexity", Kind::kLoss, false, 3.3, false},
    {"gpt_oss_20b", "", "log perplexity", Kind::kLoss, false, 3.34, false},
    {"deepseekv3_671b", "", "log perplexity", Kind::kLoss, false, 3.6, false},
    {"llama2_70b_lora", "", "eval loss", Kind::kLoss, false, 0.925, false},
    {"flux1", "", "eval loss", Kind::kLoss, false, 0.586, false},
};

EvalMetric MetricOf(const Quality& q) {
  EvalMetric m;
  m.kind = q.kind;
  m.name = q.name;
  m.higher_is_better = q.higher_is_better;
  m.target = q.target;
  m.target_strict = q.strict;
  return m;
}

}  // namespace

std::optional<EvalMetric> MlperfQuality(std::string_view benchmark,
                                        std::string_view series_metric) {
  const std::string b = mllog::BenchmarkName(benchmark);
  for (const Quality& q : kQualities) {
    if (q.benchmark == b && q.series_metric == series_metric) return MetricOf(q);
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, EvalMetric>> MlperfJointQualities(std::string_view benchmark) {
  const std::string b = mllog::BenchmarkName(benchmark);
  std::vector<std::pair<std::string, EvalMetric>> out;
  for (const Quality& q : kQualities) {
    if (q.benchmark == b && !q.series_metric.empty())
      out.emplace_back(std::string(q.series_metric), MetricOf(q));
  }
  return out;
}

std::optional<bool> AnyMeetsTarget(const EvalMetric& metric, const std::vector<EvalPoint>& evals) {
  if (!metric.target || !metric.higher_is_better) return std::nullopt;
  return std::any_of(evals.begin(), evals.end(),
                     [&](const EvalPoint& e) { return *MeetsTarget(metric, e.value); });
}

std::optional<bool> MeetsTarget(const EvalMetric& metric, double value) {
  if (!metric.target || !metric.higher_is_better) return std::nullopt;
  const double t = *metric.target;
  if (*metric.higher_is_better) return metric.target_strict ? value > t : value >= t;
  return metric.target_strict ? value < t : value <= t;
}

}  // namespace bm::logparse
