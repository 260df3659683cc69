// The training loop of pretrain and finetune runs:
//   for step in start+1 .. steps:
//     ZeroGrad; GAS micro-batches of LBS seeded windows (trainer/data/batch.h),
//     loss_scale = 1 / masked tokens of the whole step; GradNorm; AdamW with
//     the warmup-cosine lr (trainer/run/schedule.h) and global-norm clipping;
//     a log.jsonl record; every checkpoint_every steps a resume checkpoint.
// A non-finite loss or gradient norm stops the run with kFailed.
// On success out_dir holds model.safetensors, config.json, log.jsonl and
// metrics.json (returned).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>

#include "base/result.h"
#include "trainer/run/run_config.h"

namespace bm::train {

struct TrainHooks {
  // Called after each step with the step number; returning false stops the
  // run as if killed (tests of kill-and-resume).
  std::function<bool(int64_t)> after_step;
};

Result<nlohmann::json> RunTraining(const RunConfig& run, std::ostream* progress,
                                   const TrainHooks& hooks = {});

}  // namespace bm::train
