#include "engine/report/mlperf_score.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/mllog.h"

namespace bm::report {
namespace {

struct Required {
  std::string_view benchmark;
  int results;
};

// benchmark_meta.py's training result file counts.
constexpr Required kRequired[] = {
    {"bert", 10},
    {"dlrm", 5},
    {"dlrm_dcnv2", 10},
    {"gnmt", 10},
    {"gpt3", 3},
    {"maskrcnn", 5},
    {"minigo", 10},
    {"resnet", 5},
    {"ssd", 5},
    {"retinanet", 5},
    {"stable_diffusion", 10},
    {"transformer", 10},
    {"ncf", 10},
    {"rnnt", 10},
    {"unet3d", 40},
    {"gnn", 10},
    {"rgat", 10},
    {"llama2_70b_lora", 10},
    {"llama31_405b", 3},
    {"llama31_8b", 10},
    {"flux1", 10},
    {"gpt_oss_20b", 10},
    {"deepseekv3_671b", 3},
    {"qwen35_397b_grpo", 3},
};

}  // namespace

MlperfScore ScoreMlperfRuns(std::string_view benchmark,
                            const std::vector<std::optional<double>>& times_to_train) {
  const std::string name = mllog::BenchmarkName(benchmark);
  MlperfScore score;
  for (const Required& r : kRequired)
    if (r.benchmark == name) score.required = r.results;
  std::vector<double> converged;
  for (const std::optional<double>& t : times_to_train) {
    ++score.runs;
    if (t) {
      converged.push_back(*t);
    } else {
      ++score.not_converged;
    }
  }
  const int max_dropped = name == "unet3d" ? 4 : 1;
  if (score.not_converged > max_dropped) return score;
  std::sort(converged.begin(), converged.end());
  const size_t first = static_cast<size_t>(max_dropped);
  const size_t slow = static_cast<size_t>(max_dropped - score.not_converged);
  if (converged.size() <= first + slow) return score;
  const size_t end = converged.size() - slow;
  score.seconds = std::accumulate(converged.begin() + static_cast<std::ptrdiff_t>(first),
                                  converged.begin() + static_cast<std::ptrdiff_t>(end), 0.0) /
                  static_cast<double>(end - first);
  return score;
}

}  // namespace bm::report
