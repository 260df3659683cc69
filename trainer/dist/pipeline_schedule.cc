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

std::vector<PipelineExchange> Exchanges(int stages, int stage, int micro_batches) {
  const std::vector<PipelineOp> ops = OneFOneB(stages, stage, micro_batches);
  const bool first = stage == 0, last = stage == stages - 1;
  // What operation `op` sends after it and receives before it.
  auto produced = [&](const PipelineOp& op) -> PipelineMessage {
    if (op.forward) return last ? PipelineMessage{} : PipelineMessage{true, op.micro, stage + 1};
    return first ? PipelineMessage{} : PipelineMessage{false, op.micro, stage - 1};
  };
  auto needed = [&](const PipelineOp& op) -> PipelineMessage {
    if (op.forward) return first ? PipelineMessage{} : PipelineMessage{true, op.micro, stage - 1};
    return last ? PipelineMessage{} : PipelineMessage{false, op.micro, stage + 1};
  };
  std::vector<PipelineExchange> exchanges(ops.size() + 1);
  for (size_t k = 0; k <= ops.size(); ++k) {
    PipelineExchange& e = exchanges[k];
    if (k > 0) e.send = produced(ops[k - 1]);
    if (k < ops.size()) e.recv = needed(ops[k]);
    e.together =
        !(e.send.peer >= 0 && !e.send.activation && e.recv.peer >= 0 && !e.recv.activation);
  }
  return exchanges;
}

int MaxInFlight(int stages, int stage, int micro_batches) {
  return std::min(stages - stage, micro_batches);
}

double BubbleFraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace bm::train::dist
