// DeepSpeed's fp16 overflow lines: the dynamic loss scale found inf/NaN gradients and the
// optimizer skipped the step. One message per overflowed optimizer step, printed inside
// engine.step() before the step's `step=N, skipped=K` progress line, in three shapes:
//
//   ZeRO's loss scaler (deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale,
//   rank 0 only):
//   [...] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step.
//     Attempted loss scale: 64, reducing to 32
//   [...] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step.
//     Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1
//   (the second: an overflow within the hysteresis, skipped as well; `[deepscale] OVERFLOW! Rank 0
//   Skipping step.` from ZeRO's stage2.py / stage3.py before 2022);
//
//   without ZeRO, FP16_Optimizer.step (runtime/fp16/fused_optimizer.py, log_dist to rank 0):
//   [...] [INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted
//     loss scale: 65536, reducing to 32768.0
//
//   and FP16_UnfusedOptimizer.step (runtime/fp16/unfused_optimizer.py) and FP16_Optimizer's fused
//   LAMB step, through logger.info on every rank:
//   [...] [INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 dynamic loss scale overflow!
//     Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0
//   All ranks overflow at the same step (the overflow check is reduced over them), so N ranks print
//   N copies of the same message before the step's record: the copies with the same attempted and
//   reduced scale that come before the same record are one step (two overflowed steps in a row
//   halve the scale in between, so their messages differ; at min_loss_scale they would not, and
//   count once).
//
// They are the only record of the skipped steps where the engine's progress lines are not printed
// (steps_per_print above the run's length, the Trainer's bars and dicts only, a script's own loss
// lines). DeepSpeed >= 0.17 logs at WARNING and hides them.
//
// Thread safety: pure functions; a DeepSpeedOverflows is used by one parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// Any of the three messages (any prefix before it: a timestamp, a tqdm bar glued in front).
bool IsDeepSpeedOverflowLine(std::string_view line);

// The optimizer step that overflowed, as the fp16 optimizers without ZeRO name it on every rank
// (FP16_Optimizer / FP16_UnfusedOptimizer._update_scale: "Grad overflow on iteration 4", or
// "...iteration: 4"; the fused one prints a newline first, so the words open a line of their own):
// their cur_iter counts the optimizer steps before it, so the step is cur_iter + 1. The one count
// of optimizer steps such a log may hold besides the engine's `step=N` lines. nullopt for any other
// line.
std::optional<int64_t> OverflowOptimizerStep(std::string_view line);

// The overflow lines of one log, in line order (1-based line numbers, ascending).
class DeepSpeedOverflows {
 public:
  // Whether `line` is an overflow line; one is remembered.
  bool Read(std::string_view line, int64_t no);

  // Adds one skipped step to the record each overflowed step comes before: the first record read
  // after its line, as a step is logged after its optimizer step; the every-rank message's copies
  // count once (see the top), and a record gets no more skipped steps than it spans. For a log
  // without the engine's `step=N, skipped=K` lines, whose running count says the same. Overflow
  // lines after the last record are steps past it: not counted, with a note.
  void Count(std::string_view name, ParsedLog& log) const;

 private:
  struct Line {
    int64_t no = 0;
    std::string every_rank_message;  // "Attempted loss scale: ..." of the every-rank shape, or ""
  };
  std::vector<Line> lines_;
};

}  // namespace bm::logparse
