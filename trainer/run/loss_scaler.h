// Dynamic loss scaling for fp16 training (precision = "fp16"): the backward pass runs on
// loss × S so that small gradients survive fp16; a step whose scaled gradients (or loss)
// overflow is skipped and S shrinks; after growth_interval clean steps in a row S grows.
// The arithmetic is PyTorch's torch.amp.GradScaler (defaults and names), with Megatron-LM's
// optional hysteresis (DynamicGradScaler) and DeepSpeed's min_loss_scale as a floor:
//
//   overflow:  growth_tracker = 0; hysteresis_tracker -= 1;
//              if hysteresis_tracker <= 0: S *= backoff_factor
//              (fails when that S would fall below min_scale: the run has diverged)
//   clean:     growth_tracker += 1;
//              if growth_tracker == growth_interval:
//                growth_tracker = 0; hysteresis_tracker = hysteresis; S *= growth_factor
//
// With hysteresis = 1 (the default) every overflow backs off, as in PyTorch. Whether a step
// overflowed, and what a skipped step means for the optimizer, is the training loop's business
// (trainer/run/train_loop.cc); this class is the pure bookkeeping (the CPU twin of the loop's
// scaler logic, unit-tested without a GPU). Values only; not thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "base/result.h"

namespace bm::train {

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16, GradScaler's init_scale
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // clean steps in a row before S grows
  double min_scale = 1.0;          // DeepSpeed's min_loss_scale; PyTorch has none
  int64_t hysteresis = 1;          // overflows tolerated before S backs off (Megatron-LM)

  // kInvalidArgument naming the run-config key: init_scale > 0 and finite, growth_factor > 1,
  // 0 < backoff_factor < 1, growth_interval >= 1, 0 < min_scale <= init_scale,
  // hysteresis >= 1.
  Status Validate() const;
  nlohmann::json ToJson() const;  // the six keys, as the run config names them
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerOptions& options);

  double scale() const { return scale_; }       // S for the next step's backward
  int64_t skipped() const { return skipped_; }  // overflowing (skipped) steps so far

  // Records one step's outcome and moves S. kFailed when an overflow would take S below
  // min_scale (S and the counters are then left as they were).
  Status Update(bool overflow);

  // For resume checkpoints: {"scale", "growth_tracker", "hysteresis_tracker", "skipped"}.
  nlohmann::json State() const;
  // kCorrupt when `state` lacks a field or holds an impossible value.
  Status Restore(const nlohmann::json& state);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t hysteresis_tracker_;
  int64_t skipped_ = 0;
};

}  // namespace bm::train
