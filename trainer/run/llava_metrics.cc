#include "trainer/run/llava_metrics.h"

#include <algorithm>

namespace bm::train {

int64_t SeedBatchWidth(const Batch& batch) {
  int64_t width = 0;
  for (int64_t n : batch.lengths) width = std::max(width, n);
  return width;
}

void CountMicroBatch(const Batch& batch, LlavaStepCount* count) {
  const int64_t width = SeedBatchWidth(batch);
  count->micro_batches += 1;
  count->width_sum += width;
  count->tokens += width * batch.B;
  count->images += batch.images;
}

LlavaFlops LlavaTrainingFlops(const LlavaConfig& config, LlavaTrainedParts trained,
                              double mean_length) {
  LlavaFlops f;
  f.mean_length = mean_length;
  const ModelConfig& t = config.text;
  // TrainingFlopsPerToken's formula at a fractional length: 6N + 12 L H T.
  const double six_n = 6.0 * static_cast<double>(ParameterCount(t));
  const double palm =
      six_n + 12.0 * static_cast<double>(t.layers) * static_cast<double>(t.hidden) * mean_length;
  const double lm_share = trained.language_model ? 1.0 : 1.0 / 3.0;
  f.lm_per_token = palm * lm_share;
  f.lm_6n_per_token = six_n * lm_share;
  const FlopsPerImage forward = ForwardFlopsPerImage(config);
  f.vision_per_image = forward.vision * (trained.vision_tower ? 3.0 : 1.0);
  f.projector_per_image = forward.projector * (trained.projector ? 3.0 : 1.0);
  return f;
}

namespace {

const char* Counted(bool trained) { return trained ? "training (3x forward)" : "forward only"; }

}  // namespace

nlohmann::json BuildLlavaMetrics(const TrainSummary& s, const LlavaConfig& config,
                                 LlavaTrainedParts trained,
                                 const std::vector<LlavaStepCount>& counts) {
  nlohmann::json j = BuildMetrics(s);
  // The measured steps (MeasureThroughput's): their tokens, images, widths and seconds.
  const int64_t n = static_cast<int64_t>(std::min(s.steps.size(), counts.size()));
  double tokens = 0, images = 0, widths = 0, micro = 0, seconds = 0;
  for (int64_t i = WarmupSteps(n); i < n; ++i) {
    tokens += static_cast<double>(counts[i].tokens);
    images += static_cast<double>(counts[i].images);
    widths += static_cast<double>(counts[i].width_sum);
    micro += static_cast<double>(counts[i].micro_batches);
    seconds += s.steps[i].ms / 1000.0;
  }
  const double mean_length = micro > 0 ? widths / micro : 0.0;
  const LlavaFlops f = LlavaTrainingFlops(config, trained, mean_length);
  j["flops_per_token"] = {{"6N", f.lm_6n_per_token}, {"palm", f.lm_per_token}};
  j["llava_flops"] = {
      {"rule",
       "FlagPerf llava1.5_13b: tokens = longest actual row of each micro-batch x its rows "
       "(image positions included); LM attention at the mean of those widths"},
      {"mean_length", mean_length},
      {"measured_tokens", static_cast<int64_t>(tokens)},
      {"measured_images", static_cast<int64_t>(images)},
      {"language_model",
       {{"counted", Counted(trained.language_model)}, {"per_token", f.lm_per_token}}},
      {"vision_tower",
       {{"counted", Counted(trained.vision_tower)}, {"per_image", f.vision_per_image}}},
      {"projector",
       {{"counted", Counted(trained.projector)}, {"per_image", f.projector_per_image}}}};
  if (j["mfu"].is_null()) return j;
  const double world = static_cast<double>(std::max(1, s.world_size));
  const double achieved = seconds > 0 ? f.PerStep(tokens, images) / seconds / world : 0.0;
  const double achieved_6n = seconds > 0 ? f.PerStep6N(tokens, images) / seconds / world : 0.0;
  j["mfu"]["achieved_flops_per_device"] = achieved;
  const nlohmann::json peak = j["mfu"]["peak_flops_per_device"];
  if (peak.is_number() && peak.get<double>() > 0) {
    j["mfu"]["palm"] = achieved / peak.get<double>();
    j["mfu"]["6N"] = achieved_6n / peak.get<double>();
  }
  return j;
}

}  // namespace bm::train
