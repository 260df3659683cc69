#include "trainer/dist/pipeline_schedule.h"

#include <algorithm>

namespace bm::train::dist {

std::vector<PipelineOp> OneFOneB(int stages, int stage, int micro_batches) {
  const int m = micro_batches, warmup = std::min(stages - stage - 1, m);
  std::vector<PipelineOp> ops;
  for (int i = 0; i < warmup; ++i) ops.push_back({true, i});
  for (int i = 0; i + warmup < m; ++i) {
    ops.push_back({true, warmup + i});
    ops.push_back({false, i});
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back({false, i});
  return ops;
}

std::vector<PipelineOp> LinkOrder(int stages, int stage, int micro_batches) {
  return OneFOneB(stages, stage + 1, micro_batches);
}

int MaxInFlight(int stages, int stage, int micro_batches) {
  return std::min(stages - stage, micro_batches);
}

double BubbleFraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace bm::train::dist
