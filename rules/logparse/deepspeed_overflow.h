// DeepSpeed's fp16 overflow lines: the dynamic loss scaler found inf/NaN gradients and the
// optimizer skipped the step (deepspeed/runtime/fp16/loss_scaler.py
// DynamicLossScaler.update_scale, rank 0 only, one line per overflowed optimizer step, printed
// inside engine.step() before the step's `step=N, skipped=K` progress line):
//
//   [...] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step.
//     Attempted loss scale: 64, reducing to 32
//   [...] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step.
//     Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1
//
// (the second: an overflow within the hysteresis, skipped as well; `[deepscale] OVERFLOW! Rank 0
// Skipping step.` from ZeRO's stage2.py / stage3.py before 2022). They are the only record of the
// skipped steps where the engine's progress lines are not printed (steps_per_print above the run's
// length, the Trainer's bars and dicts only). DeepSpeed >= 0.17 logs at WARNING and hides them.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// Rank 0's overflow line (any prefix before it: a timestamp, a tqdm bar glued in front).
bool IsDeepSpeedOverflowLine(std::string_view line);

// Adds one skipped step to the record each overflow line (1-based line numbers, ascending) comes
// before: the first record read after it, as the step is logged after its optimizer step. For
// a log without the engine's `step=N, skipped=K` lines, whose running count says the same.
// Overflow lines after the last record are steps past it: not counted, with a note.
void CountOverflowSkips(const std::vector<int64_t>& overflow_lines, std::string_view name,
                        ParsedLog& log);

}  // namespace bm::logparse
