// Batches: seeded windows for training, fixed windows for evaluation.
//
// A training window is T+1 consecutive stream tokens starting at a position
// drawn from the counter-based RNG (trainer/rng.h) by (seed, step, row), where
// row = micro * LBS + b counts the rows of the whole optimizer step. So a step
// sees the same windows whatever LBS × GAS split it uses, and a resumed run
// draws exactly what an uninterrupted one would: the data position is the
// step number alone. Data-parallel ranks draw disjoint rows of the same step.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/backend.h"
#include "trainer/data/token_data.h"

namespace bm::train {

struct Batch {
  int64_t B = 0, T = 0;
  std::vector<int32_t> inputs;   // [B, T]
  std::vector<int32_t> targets;  // [B, T]
  std::vector<uint8_t> mask;     // [B, T] mask of each target (empty: the data has none)
  // Images (LLaVA batches, trainer/data/llava_batch.h; empty otherwise): MicroBatch's fields.
  int64_t images = 0;
  std::vector<float> pixel_values;       // [images, 3, S, S]
  std::vector<int64_t> image_positions;  // [images, image_tokens]
  // LLaVA batches: each row's positions before its padding (text + image positions, cut to T).
  std::vector<int64_t> lengths;  // [B]

  MicroBatch View() const {
    MicroBatch m{inputs.data(), targets.data(), mask.empty() ? nullptr : mask.data(), B, T};
    if (images > 0) {
      m.pixel_values = pixel_values.data();
      m.image_positions = image_positions.data();
      m.images = images;
    }
    return m;
  }
  int64_t MaskedCount() const;  // targets that count for the loss
};

// Rows first_row .. first_row+B-1 of optimizer step `step` (1-based). Rows
// count the whole step's global batch: micro-batch g of a single process
// holds rows g*LBS..; with data parallelism, micro-batch g of DP rank r holds
// rows (g*DP + r)*LBS.. — so the ranks' rows together are exactly the rows of
// a single process with the same global batch.
// Precondition: data.num_tokens() > T.
Status SampleTrainBatch(const TokenData& data, uint64_t seed, int64_t step, int64_t first_row,
                        int64_t B, int64_t T, Batch* batch);

// Evaluation window w: tokens [w*T, w*T + T + 1) of the stream.
int64_t NumEvalWindows(const TokenData& data, int64_t T);
Status ReadEvalWindows(const TokenData& data, int64_t first_window, int64_t B, int64_t T,
                       Batch* batch);

}  // namespace bm::train
