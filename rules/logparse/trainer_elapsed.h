// ms-swift's Trainer dicts and LLaMA-Factory's trainer_log.jsonl lines time their steps: each
// carries the time since training began (swift/trainers: the mixin's _maybe_log_save_evaluate
// and the callbacks' add_train_message; LLaMA-Factory's LogCallback.on_log, since on_train_begin),
//
//   {'loss': 1.0359683, ..., 'train_speed(iter/s)': 0.063164, 'epoch': 3.83,
//    'global_step/max_steps': '210/270', ..., 'elapsed_time': '55m 24s', ...}
//   {'loss': '0.2992', ..., 'global_step/max_steps': '5/60', 'elapsed_time': '3m 53s', ...,
//    'train_speed(s/it)': '46.6'}
//
//   {"current_steps": 10, ..., "elapsed_time": "0:04:02", ..., "throughput": 13174.21, ...}
//
// 'elapsed_time' is ms-swift's format_time(seconds since on_train_begin), "1d 2h 3m 4s", or
// LLaMA-Factory's str(timedelta(seconds=int(seconds))), "0:04:02", "1 day, 2:03:04": whole
// seconds (±1 s). ms-swift 2-3's 'train_speed(iter/s)' is round(global_step / seconds since
// train() began, 6), so the seconds are step / it, finer; ms-swift 3-4's 'train_speed(s/it)'
// (also its Megatron trainer's, whose dicts name 'iteration') is seconds / (step - the step it
// resumed from), so step x it is the seconds only without a resume: taken only where it agrees
// with 'elapsed_time'. A record's steps then took the difference between its dict's seconds and the
// dict's before it, when that dict is the record before it (no steps between them left out of the
// log, no restart or resume between them, the time growing), and nothing else ran between them:
// the clock runs on through an evaluation and a checkpoint save (the Trainer's _maybe_log_save_
// evaluate logs, then evaluates, then saves, at the same step), which are no step's time. The
// jsonl has a line for each evaluation but none for a save: a record across one holds its time.
//
// Thread safety: plain functions and a value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "rules/logparse/log_parser.h"
#include "rules/logparse/trainer_dict_literal.h"

namespace bm::logparse {

// "1d 2h 3m 4s", "54m 1s", "0s" (ms-swift's format_time): seconds; nullopt for anything else.
std::optional<double> FormattedSeconds(std::string_view text);

// "0:04:02", "12:00:59", "1 day, 2:03:04", "3 days, 0:00:05" (Python's str(timedelta) of whole
// seconds, LLaMA-Factory's): seconds; nullopt for anything else.
std::optional<double> TimedeltaSeconds(std::string_view text);

// A dict's seconds since training began, as it gives them.
struct DictElapsed {
  std::optional<double> text;     // 'elapsed_time' (whole seconds)
  std::optional<double> speed;    // from 'train_speed(iter/s)' or '(s/it)', where it may
  double speed_half = 0;          // the bound of speed's error (its rounding)
  bool speed_per_second = false;  // from 'train_speed(iter/s)' (else from '(s/it)')
};

// The seconds the dict of `step` gives, or nullopt when it gives none.
std::optional<DictElapsed> ReadDictElapsed(const TrainerDict& dict, int64_t step);

// Sets the ms of each record of `its` (in step order) whose dict (by its line in `elapsed`)
// follows the record before it as the top says; `breaks` are the lines where a restart, another
// run or a resume starts (a new clock), or an evaluation or a checkpoint save ran. Returns the
// records left untimed by a break only: {the record's line, the first break's line}.
std::vector<std::pair<int64_t, int64_t>> TimeByElapsed(
    const std::map<int64_t, DictElapsed>& elapsed, const std::vector<int64_t>& breaks,
    std::vector<Iteration>& its);

}  // namespace bm::logparse
