// DeepSpeed's engine progress line (deepspeed/runtime/engine.py `_report_progress`, rank 0, every
// steps_per_print optimizer steps):
//
//   [2023-08-15 06:31:42,452] [INFO] [logging.py:96:log_dist] [Rank 0] step=1, skipped=1,
//     lr=[0.0, 0.0], mom=[(0.9, 0.95), (0.9, 0.95)]
//
// the optimizer step and the engine's running count of the steps its optimizer skipped (fp16
// overflow) since the run's start. The deepspeed parser reads its records from it; the megatron
// parser reads the skipped count from it (DeepSpeedSkipCounts): Megatron-DeepSpeed's train_step
// returns skipped_iter = 0 whenever its DeepSpeed pipeline engine trains the batch
// (`if args.deepspeed and args.ds_pipeline_enabled: skipped_iter = 0`, microsoft's and
// bigscience's training.py), so its iteration lines print `number of skipped iterations:   0`
// over steps the engine skipped.
//
// Thread safety: pure functions; a DeepSpeedSkipCounts is used by one parse.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

struct DeepSpeedProgress {
  int64_t step = 0;     // the optimizer step (0: the engine's start-up print)
  int64_t skipped = 0;  // skipped steps since the run's start
};

// `step=N, skipped=K` (N and K whole, after any prefix); nullopt for any other line.
std::optional<DeepSpeedProgress> ReadDeepSpeedProgress(std::string_view line);

// The progress lines of a Megatron-DeepSpeed log, for its iteration records.
class DeepSpeedSkipCounts {
 public:
  // Whether `line` is a progress line; one is remembered (the first line for a step: a second
  // engine's, DeepSpeed-Chat's critic, comes after it).
  bool Read(std::string_view line, int64_t no);

  // A record whose steps the progress lines bracket (a line at its step and one at the step
  // before its span, or the run's start) gets the engine's increase over them as its skipped
  // steps where that is more than the iteration line's own count, with a note. Records are in
  // step order with their spans set.
  void Apply(std::string_view name, ParsedLog& log) const;

 private:
  struct Count {
    int64_t skipped = 0;
    int64_t line = 0;
  };
  std::map<int64_t, Count> by_step_;
};

}  // namespace bm::logparse
