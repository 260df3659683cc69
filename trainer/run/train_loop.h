// The training loop of pretrain and finetune runs, for one rank of any
// number (trainer/dist/rank_env.h):
//   for step in start+1 .. steps:
//     ZeroGrad; GAS micro-batches of LBS seeded windows — this data-parallel
//     rank's rows of the step's global batch (trainer/data/batch.h);
//     loss_scale = 1 / masked tokens of the whole step over all ranks;
//     GradNorm; AdamW with the warmup-cosine lr (trainer/run/schedule.h) and
//     global-norm clipping; a log.jsonl record; every checkpoint_every steps a
//     resume checkpoint (every rank its local state: trainer/checkpoint/resume.h).
// A non-finite loss or gradient norm stops the run with kFailed, except with
// fp16: there the backward runs on loss × S (trainer/run/loss_scaler.h), and a
// non-finite loss or scaled gradient norm is an overflow: the step is skipped
// as PyTorch's GradScaler skips it (no AdamW update, AdamW's own step count
// does not advance; the lr schedule does, and the step's batch is consumed), S
// backs off, and the run fails only when S would fall below min_scale.
// Otherwise AdamW gets grad_scale = 1 / S (the unscaling folded into clipping
// and the update). The scaler's state travels in resume checkpoints.
// Only rank 0 writes out_dir: on success it holds model.safetensors (the whole
// model, gathered), config.json, log.jsonl and metrics.json (returned on every
// rank).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/dist/rank_env.h"
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

// env: which rank of how many this process is (default: a world of one).
// Errors: kInvalidArgument when the layout's rank count differs from the
// world's; the communicators' errors (kUnavailable: a peer died or timed out).
// One AdamW update of the run's hyperparameters: `applied` counts the updates made so far
// including this one (its bias correction), and the accumulated gradients are loss_scale times
// the true ones.
AdamWStep MakeAdamWStep(const RunConfig& run, double lr, int64_t applied, double loss_scale);

Result<nlohmann::json> RunTraining(const RunConfig& run, std::ostream* progress,
                                   const TrainHooks& hooks = {},
                                   const dist::RankEnv& env = dist::RankEnv());

}  // namespace bm::train
