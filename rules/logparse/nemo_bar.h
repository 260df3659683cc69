// NeMo 1's training progress bar: Lightning's TQDMProgressBar with the values NeMo's Megatron
// models log with prog_bar=True in its postfix (nemo_bar.cc says what each one is):
//
//   Epoch 0: : 100%|██████████| 50/50 [23:22<00:00, v_num=gjbq, reduced_train_loss=11.70,
//   global_step=49.00, consumed_samples=12600.0, train_step_timing in s=12.80]   (one line)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// One bar as drawn: the step it shows and what it says of that step.
struct NemoBar {
  Iteration it;                            // step, loss, ms, lr; span 1
  std::optional<double> consumed_samples;  // only when printed exactly (not 3-digit e-notation)
  bool step_rounded = false;               // global_step printed to 3 digits, not recovered
  std::optional<int64_t> epoch0_batches;   // the bar's n in epoch 0 (batches drawn)
  std::optional<double> val_loss;          // `val_loss=`: the last validation's value, carried
};

// nullopt when `line` is not a NeMo 1 training bar (a postfix naming both reduced_train_loss
// and global_step); kCorrupt ("NAME:LINE: ...") when a field it reads is not a number. A bar
// without its closing `]` (cut off) has its last field left out, and the fields from the first
// that does not parse (another line's text glued at the cut).
Result<std::optional<NemoBar>> ReadNemoBar(std::string_view line, std::string_view name,
                                           int64_t no);

}  // namespace bm::logparse
