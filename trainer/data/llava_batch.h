// LLaVA batches: whole samples of a llava_data split (trainer/data/llava_data.h),
// one per row, as LLaVA's trainer builds them (llava/train/train.py and
// LlavaMetaForCausalLM.prepare_inputs_labels_for_multimodal):
//   - each <image> placeholder becomes image_tokens positions holding the
//     image's projected features (their token id 0, never a label);
//   - the expanded sequence is cut to T positions (LLaVA's model_max_length;
//     an image cut in the middle keeps its first positions);
//   - position t predicts token t+1 (HF's shifted labels): targets[t] is
//     token t+1, mask[t] its label bit; the last position predicts nothing;
//   - padding to T: id 0, mask 0 (right padding; causal, so it changes nothing
//     before it).
// The batch's pixel values are the images in the order of their rows and
// placeholders, normalised with images.json's mean and std.
//
// Which sample a training row takes is drawn like a window start in
// trainer/data/batch.h: from (seed, step, row) with row = the row's index in
// the whole optimizer step, so data-parallel ranks' rows together are one
// process's, whatever the LBS x GAS split, and a resumed run draws the same.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "trainer/data/batch.h"
#include "trainer/data/llava_data.h"

namespace bm::train {

// The sample training row `row` of optimizer step `step` (1-based) takes.
int64_t LlavaTrainSample(const LlavaData& data, uint64_t seed, int64_t step, int64_t row);

// Rows first_row .. first_row+B-1 of step `step` (batch.h's row numbering).
Status SampleLlavaTrainBatch(const LlavaData& data, uint64_t seed, int64_t step, int64_t first_row,
                             int64_t B, int64_t T, Batch* batch);

// Cuts the padding every row has: T becomes the longest row's length rounded up to a multiple of
// `multiple` (at most T, at least 1). LLaVA's collator pads to the batch's longest row after the
// images are spliced in (prepare_inputs_labels_for_multimodal), the width FlagPerf's seed counts
// (llava_metrics.h counts the lengths, not T); the rounding bounds how many shapes a run meets
// (each new one costs the GPU a one-time plan: cuBLASLt tuning, cuDNN graphs). Image positions
// are renumbered to the new row stride; the values are unchanged.
void TrimLlavaBatch(Batch* batch, int64_t multiple = 1);

// The training loop's multiple (trainer/run/llava_train_loop.cc, bench/llava_batches): at most
// mpe / 64 widths a run, at most 63 padded positions a row.
inline constexpr int64_t kLlavaWidthMultiple = 64;

// Samples first_sample .. first_sample+B-1, in order (evaluation); rows past the last sample
// are all padding.
Status ReadLlavaSamples(const LlavaData& data, int64_t first_sample, int64_t B, int64_t T,
                        Batch* batch);

}  // namespace bm::train
