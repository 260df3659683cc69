// MLPerf's score of a benchmark over several runs, as mlperf_logging's result summarizer computes
// it (mlperf_logging/result_summarizer/result_summarizer.py, `_compute_strong_score_standalone`
// and `_compute_olympic_average`): the runs' times to train sorted, the fastest `max_dropped` left
// out and as many of the slowest less the runs that did not converge (a run whose result has no
// time to train, aborted or cut off, counts as one of the slowest), the mean of the rest.
// `max_dropped` is 4 for U-Net3D and 1 for the others; more runs that did not converge than that
// give no score, and so do too few runs to leave one after dropping (one or two, U-Net3D's eight).
// `required` is how many results MLPerf asks of a submission for the benchmark
// (mlperf_logging/benchmark_meta.py: ResNet 5, BERT 10, Llama 2 70B LoRA 10, GPT-3 3, ...).
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace bm::report {

struct MlperfScore {
  std::optional<double> seconds;  // the olympic mean of the times to train; nullopt: none
  int runs = 0;                   // results scored, converged or not
  int not_converged = 0;          // of them, without a time to train
  int required = 0;               // results MLPerf asks for the benchmark; 0 unknown
};

// `times_to_train`: one per run, seconds, nullopt for a run that did not converge.
MlperfScore ScoreMlperfRuns(std::string_view benchmark,
                            const std::vector<std::optional<double>>& times_to_train);

}  // namespace bm::report
