// LLaVA's metrics as FlagPerf's llava1.5_13b seed counts them (trainer/run/llava_metrics.h),
// checked against numbers worked out by hand for llava-tiny (clip-tiny + llama-tiny).
#include "trainer/run/llava_metrics.h"

#include <gtest/gtest.h>

namespace bm::train {
namespace {

// llama-tiny by hand: vocab 512, hidden 64, 2 layers, 4 heads of 16, 2 KV heads, FFN 160, untied.
//   embedding 512*64 = 32768; a layer: q 64*64 + k 64*32 + v 64*32 + o 64*64 = 12288,
//   gate/up/down 3*64*160 = 30720, two norms 128 -> 43136; final norm 64; head 32768.
constexpr double kLmParams = 32768 + 2 * 43136 + 64 + 32768;  // 151872
// clip-tiny by hand: 28 px, patch 14 -> 4 patches, 5 positions; hidden 32, MLP 64; 3 layers,
// features at hidden_states[-2] -> 2 layers computed; patch vector 3*14*14 = 588.
//   patch embedding 2*4*588*32 = 150528;
//   a layer 2*5*(4*32*32 + 2*32*64) + 4*5*5*32 = 81920 + 3200 = 85120.
constexpr double kVisionForward = 150528 + 2 * 85120;  // 320768
// projector over 4 patches: 2*4*(32*64 + 64*64) = 49152.
constexpr double kProjectorForward = 49152;

// Two micro-batches of two rows: actual lengths {7, 4} with one image, {3, 5} with none.
Batch Rows(std::vector<int64_t> lengths, int64_t images) {
  Batch b;
  b.B = static_cast<int64_t>(lengths.size());
  b.T = 10;
  b.lengths = std::move(lengths);
  b.images = images;
  return b;
}

LlavaStepCount TinyStep() {
  LlavaStepCount c;
  CountMicroBatch(Rows({7, 4}, 1), &c);
  CountMicroBatch(Rows({3, 5}, 0), &c);
  return c;
}

TEST(LlavaMetricsTest, TokensAreEachMicroBatchsLongestRowTimesItsRows) {
  EXPECT_EQ(SeedBatchWidth(Rows({7, 4}, 1)), 7);
  const LlavaStepCount c = TinyStep();
  EXPECT_EQ(c.micro_batches, 2);
  EXPECT_EQ(c.width_sum, 7 + 5);
  EXPECT_EQ(c.tokens, 7 * 2 + 5 * 2);  // 24, padding to T = 10 not counted
  EXPECT_EQ(c.images, 1);
}

TEST(LlavaMetricsTest, FlopsOfTrainedAndFrozenParts) {
  const LlavaConfig tiny = *LlavaPreset("llava-tiny");
  ASSERT_EQ(ParameterCount(tiny.text), static_cast<int64_t>(kLmParams));
  // all trained, mean length 6: PaLM 6N + 12*L*H*T per token, 3x forward per image
  const double lm = 6 * kLmParams + 12.0 * 2 * 64 * 6;  // 920448
  LlavaFlops all = LlavaTrainingFlops(tiny, {true, true, true}, 6.0);
  EXPECT_DOUBLE_EQ(all.lm_per_token, lm);
  EXPECT_DOUBLE_EQ(all.lm_6n_per_token, 6 * kLmParams);
  EXPECT_DOUBLE_EQ(all.vision_per_image, 3 * kVisionForward);
  EXPECT_DOUBLE_EQ(all.projector_per_image, 3 * kProjectorForward);
  EXPECT_DOUBLE_EQ(all.PerStep(24, 1), 24 * lm + 3 * (kVisionForward + kProjectorForward));
  // stage 1 (only the projector trains): the tower and the LM forward only
  LlavaFlops pretrain = LlavaTrainingFlops(tiny, {false, true, false}, 6.0);
  EXPECT_DOUBLE_EQ(pretrain.lm_per_token, lm / 3);
  EXPECT_DOUBLE_EQ(pretrain.lm_6n_per_token, 2 * kLmParams);
  EXPECT_DOUBLE_EQ(pretrain.vision_per_image, kVisionForward);
  EXPECT_DOUBLE_EQ(pretrain.projector_per_image, 3 * kProjectorForward);
}

TEST(LlavaMetricsTest, MetricsJsonMfuAtAFixedTimeAndPeak) {
  const LlavaConfig tiny = *LlavaPreset("llava-tiny");
  TrainSummary s;
  s.model = tiny.text;
  s.run.peak_tflops = 1e-4;  // 1e8 FLOP/s
  s.platform = nlohmann::json::object();
  StepRecord warm, measured;
  warm.step = 1;
  warm.ms = 5000;  // the warm-up step (WarmupSteps(2) = 1): left out
  warm.tokens = 1000;
  measured.step = 2;
  measured.ms = 2000;
  measured.tokens = 24;
  s.steps = {warm, measured};
  LlavaStepCount odd;  // the warm-up step's counts would change every number below
  odd.micro_batches = 1;
  odd.width_sum = 100;
  odd.tokens = 1000;
  odd.images = 9;
  const nlohmann::json m = BuildLlavaMetrics(s, tiny, {false, true, true}, {odd, TinyStep()});
  EXPECT_EQ(m["format"], "benchmake-metrics");
  EXPECT_DOUBLE_EQ(m["throughput"]["tokens_per_device_per_s"].get<double>(), 24 / 2.0);
  EXPECT_DOUBLE_EQ(m["llava_flops"]["mean_length"].get<double>(), 6.0);
  EXPECT_EQ(m["llava_flops"]["vision_tower"]["counted"], "forward only");
  EXPECT_EQ(m["llava_flops"]["projector"]["counted"], "training (3x forward)");
  EXPECT_EQ(m["llava_flops"]["language_model"]["counted"], "training (3x forward)");
  // 24 tokens x 920448 + 1 image x (320768 + 3 x 49152) over 2 s, against 1e8 FLOP/s
  const double flops =
      24 * (6 * kLmParams + 12.0 * 2 * 64 * 6) + kVisionForward + 3 * kProjectorForward;
  EXPECT_DOUBLE_EQ(m["mfu"]["achieved_flops_per_device"].get<double>(), flops / 2);
  EXPECT_DOUBLE_EQ(m["mfu"]["palm"].get<double>(), flops / 2 / 1e8);
  const double flops_6n = 24 * 6 * kLmParams + kVisionForward + 3 * kProjectorForward;
  EXPECT_DOUBLE_EQ(m["mfu"]["6N"].get<double>(), flops_6n / 2 / 1e8);
  EXPECT_DOUBLE_EQ(m["flops_per_token"]["palm"].get<double>(), 6 * kLmParams + 12.0 * 2 * 64 * 6);
}

// An unknown device: no MFU, but the achieved FLOP/s are LLaVA's (not the text model's at MPE).
TEST(LlavaMetricsTest, UnknownPeakLeavesMfuNullAndCountsAchievedFlops) {
  const LlavaConfig tiny = *LlavaPreset("llava-tiny");
  TrainSummary s;
  s.model = tiny.text;
  s.run.device = "cuda";
  s.device_name = "no such accelerator";
  s.platform = nlohmann::json::object();
  StepRecord one;
  one.step = 1;
  one.ms = 4000;  // a run of one step measures it (WarmupSteps(1) = 0)
  one.tokens = 24;
  s.steps = {one};
  const nlohmann::json m = BuildLlavaMetrics(s, tiny, {true, true, true}, {TinyStep()});
  EXPECT_TRUE(m["mfu"]["palm"].is_null());
  EXPECT_TRUE(m["mfu"]["6N"].is_null());
  const double flops =
      24 * (6 * kLmParams + 12.0 * 2 * 64 * 6) + 3 * (kVisionForward + kProjectorForward);
  EXPECT_DOUBLE_EQ(m["mfu"]["achieved_flops_per_device"].get<double>(), flops / 4);
}

}  // namespace
}  // namespace bm::train
