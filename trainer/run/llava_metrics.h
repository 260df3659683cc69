// LLaVA's throughput and MFU as FlagPerf's llava1.5_13b seed counts them
// (training/benchmarks/llava1.5_13b/deepspeed-torch: model/language_model/
// llava_llama.py logs inputs_embeds.size(1) of every micro-batch, i.e. its
// longest row after each <image> became image_tokens positions, and
// run_pretraining.py takes tokens = mean of those widths x samples):
//   - a micro-batch's tokens = its longest actual row x its rows (text and
//     image positions alike); token/p/s = those tokens / seconds / devices;
//   - the sequence length of the LM's attention FLOPs = the mean of those
//     widths;
//   - MFU (our extension of the seed's 2N / 6N per token): the LM's PaLM FLOPs
//     at that mean length per token, plus the vision tower's and projector's
//     FLOPs per image (ForwardFlopsPerImage); a trained part counts 3x its
//     forward, a frozen part its forward only (1x), as the seed counts the
//     frozen LM of pretraining (2N). metrics.json's "llava_flops" says which
//     part was counted how. docs/METRICS.md has the formulas.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "trainer/data/batch.h"
#include "trainer/model/vision_config.h"
#include "trainer/run/metrics.h"

namespace bm::train {

// The parts of the model AdamW updates (model.trainable; all three when empty).
struct LlavaTrainedParts {
  bool vision_tower = true, projector = true, language_model = true;
};

// What one optimizer step processed (summed over micro-batches and ranks).
struct LlavaStepCount {
  int64_t micro_batches = 0;
  int64_t width_sum = 0;  // Σ longest actual row of each micro-batch
  int64_t tokens = 0;     // Σ longest actual row x rows
  int64_t images = 0;
};

// The seed's width of a micro-batch: its longest row before padding (Batch::lengths).
int64_t SeedBatchWidth(const Batch& batch);
// Adds one micro-batch to `count`.
void CountMicroBatch(const Batch& batch, LlavaStepCount* count);

// Training FLOPs of one token (LM) and one image (tower, projector) as counted for MFU.
struct LlavaFlops {
  double mean_length = 0;
  double lm_per_token = 0;      // PaLM at mean_length, x1/3 when frozen
  double lm_6n_per_token = 0;   // 6N (2N when frozen), no attention term
  double vision_per_image = 0;  // forward x3 when trained, x1 when frozen
  double projector_per_image = 0;
  double PerStep(double tokens, double images) const {
    return tokens * lm_per_token + images * (vision_per_image + projector_per_image);
  }
  double PerStep6N(double tokens, double images) const {
    return tokens * lm_6n_per_token + images * (vision_per_image + projector_per_image);
  }
};
LlavaFlops LlavaTrainingFlops(const LlavaConfig& config, LlavaTrainedParts trained,
                              double mean_length);

// metrics.json of a LLaVA training run: BuildMetrics' document for the language model
// (summary.steps' tokens: the seed's tokens of each step), with flops_per_token and mfu
// counted as above over the measured steps, and "llava_flops" saying how.
// counts[i] belongs to summary.steps[i].
nlohmann::json BuildLlavaMetrics(const TrainSummary& summary, const LlavaConfig& config,
                                 LlavaTrainedParts trained,
                                 const std::vector<LlavaStepCount>& counts);

}  // namespace bm::train
