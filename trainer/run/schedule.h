// The learning-rate schedule: linear warmup to lr over warmup_steps, then
// cosine decay to min_lr at the last step. Steps are 1-based.
//   s <= W:  lr * s / W
//   s >  W:  min_lr + (lr - min_lr) * (1 + cos(pi * (s - W) / (S - W))) / 2
#pragma once

#include <cmath>
#include <cstdint>

namespace bm::train {

inline double LearningRate(int64_t step, int64_t steps, int64_t warmup, double lr, double min_lr) {
  if (warmup > 0 && step <= warmup)
    return lr * static_cast<double>(step) / static_cast<double>(warmup);
  if (steps <= warmup) return lr;
  const double progress = static_cast<double>(step - warmup) / static_cast<double>(steps - warmup);
  return min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
}

}  // namespace bm::train
