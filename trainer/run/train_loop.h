// The training loop of pretrain and finetune runs:
//   for step in start+1 .. steps:
//     ZeroGrad; GAS micro-batches of LBS seeded windows (trainer/data/batch.h),
//     loss_scale = 1 / masked tokens of the whole step; GradNorm; AdamW with
//     the warmup-cosine lr (trainer/run/schedule.h) and global-norm clipping;
//     a log.jsonl record; every checkpoint_every steps a resume checkpoint.
// A non-finite loss or gradient norm stops the run with kFailed, except with
// fp16: there the backward runs on loss × S (trainer/run/loss_scaler.h), and a
// non-finite loss or scaled gradient norm is an overflow: the step is skipped
// as PyTorch's GradScaler skips it (no AdamW update, AdamW's own step count
// does not advance; the lr schedule does, and the step's batch is consumed), S
// backs off, and the run fails only when S would fall below min_scale.
// Otherwise AdamW gets grad_scale = 1 / S (the unscaling folded into clipping
// and the update). The scaler's state travels in resume checkpoints.
// On success out_dir holds model.safetensors, config.json, log.jsonl and
// metrics.json (returned).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/run/run_config.h"

namespace bm::train {

struct TrainHooks {
  // Called after each step with the step number; returning false stops the
  // run as if killed (tests of kill-and-resume).
  std::function<bool(int64_t)> after_step;
  // When set, makes the backend instead of CreateBackend(run.device) (tests: a
  // backend that injects fp16 overflows on chosen steps).
  std::function<Result<std::unique_ptr<Backend>>()> make_backend;
};

Result<nlohmann::json> RunTraining(const RunConfig& run, std::ostream* progress,
                                   const TrainHooks& hooks = {});

}  // namespace bm::train
