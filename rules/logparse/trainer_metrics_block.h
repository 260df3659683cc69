// The Trainer's `***** train metrics *****` block: Trainer.log_metrics("train", metrics), which
// LLaMA-Factory and transformers' example scripts print after training, one `key = value` a line
// (Trainer.metrics_format: the runtime as a timedelta truncated to hundredths of a second, other
// floats round(v, 4), total_flos in GF, memory in MB):
//
//   ***** train metrics *****
//     epoch                    =        3.0
//     total_flos               =  1351978GF
//     train_loss               =     1.3686
//     train_runtime            = 0:09:16.03
//     train_samples_per_second =      5.881
//     train_steps_per_second   =      0.372
//
// The same figures as the closing dict (trainer_dicts.h) printed before it; read as the closing
// dict where the log has none (its lines lost from the paste or the capture). Its twin
// `***** eval metrics *****` (Trainer.log_metrics("eval"), the scripts' evaluation after training)
// is the only record of that evaluation: ProgressCallback prints no dict once the training bar is
// closed.
//
// Thread safety: a value type, one per log.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "rules/logparse/trainer_dicts.h"

namespace bm::logparse {

class TrainerMetricsBlock {
 public:
  struct Block {
    TrainerDict dict;   // train_runtime in seconds, the rates, epoch, train_loss
    int64_t line = 0;   // the `***** train metrics *****` line
    bool eval = false;  // `***** eval metrics *****`
  };
  // Reads `line` (number `no`): true when it was the block's header or one of its entries. A
  // line that ends the block makes the block ready for Take.
  bool Read(std::string_view line, int64_t no);
  // The block read completely (a line after it ended it; `at_end`: or the log ended in it), once.
  std::optional<Block> Take(bool at_end = false);

 private:
  std::optional<Block> open_, done_;
};

}  // namespace bm::logparse
