// TrainRanksTest for LLaVA runs (llava_train_test.cc on the CPU, cuda_llava_trainer_test.cc on
// the GPU): a run's saved weights, and how far two runs are apart.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tests/trainer/llava_test_data.h"
#include "tests/trainer/train_ranks.h"
#include "trainer/checkpoint/llava_checkpoint.h"
#include "trainer/model/llava_layout.h"
#include "trainer/rng.h"

namespace bm::train::testing {

class LlavaRanksTest : public TrainRanksTest {
 protected:
  // The runs' data in dir_/llava: 16 samples over llava-tiny's vocabulary (512; the placeholder
  // 512): a prompt with one image (or none, every fourth), then an answer that repeats a pattern
  // tied to the sample; 6 images of 28 x 28.
  void WriteLlavaRunData() const {
    constexpr int32_t kImage = 512;
    std::vector<LlavaSampleSpec> samples;
    for (int32_t s = 0; s < 16; ++s) {
      LlavaSampleSpec spec;
      spec.tokens = {1};
      spec.labels = {0};
      if (s % 4 != 3) {
        spec.tokens.push_back(kImage);
        spec.labels.push_back(0);
        spec.images.push_back(s % 6);
      }
      for (int32_t k = 0; k < 10; ++k) {
        spec.tokens.push_back(10 + (s % 6) * 3 + k % 3);
        spec.labels.push_back(k >= 2 ? 1 : 0);
      }
      samples.push_back(spec);
    }
    std::vector<uint8_t> pixels(6 * 28 * 28 * 3);
    for (size_t i = 0; i < pixels.size(); ++i)
      pixels[i] = static_cast<uint8_t>(UniformIntAt(3, 4, i, 256));
    WriteLlavaData(dir_ + "/llava", "train", samples, 512, 4, 28, pixels, {0.48f, 0.46f, 0.41f},
                   {0.27f, 0.26f, 0.28f});
  }

  // The whole model a run saved (LlavaLayout order).
  std::vector<float> LlavaWeights(const std::string& name) const {
    Result<LlavaConfig> c = ReadLlavaCheckpointConfig(dir_ + "/" + name);
    EXPECT_TRUE(c.ok()) << c.status().message();
    if (!c.ok()) return {};
    Result<std::vector<float>> w =
        LoadLlavaParameters(dir_ + "/" + name + "/model.safetensors", *c);
    EXPECT_TRUE(w.ok()) << w.status().message();
    return w.ok() ? *w : std::vector<float>();
  }

  // A LLaVA stage's weights against the run's init: the tower frozen (bit for bit), the projector
  // moved, the language model frozen in "pretrain" and mostly moved in "finetune".
  void ExpectStageMoves(const std::string& name, const std::string& stage, const LlavaLayout& l,
                        const std::vector<float>& init) const {
    const std::vector<float> w = LlavaWeights(name);
    ASSERT_EQ(w.size(), init.size()) << name;
    auto moved = [&](int64_t begin, int64_t end) {
      int64_t n = 0;
      for (int64_t i = begin; i < end; ++i) n += w[i] != init[i];
      return n;
    };
    EXPECT_EQ(moved(l.vision_offset(), l.projector_offset()), 0) << name;
    EXPECT_GT(moved(l.projector_offset(), l.text_offset()), 0) << name;
    const int64_t text_moved = moved(l.text_offset(), l.total());
    if (stage == "pretrain") {
      EXPECT_EQ(text_moved, 0) << name;
    } else {
      EXPECT_GT(text_moved, l.text().total() / 2) << name;
    }
  }

  // Largest relative loss difference over the steps, largest absolute weight difference.
  std::pair<double, double> LlavaDistance(const std::string& a, const std::string& b) const {
    auto [loss, weight] =
        DistanceOf(a, b, [this](const std::string& name) { return LlavaWeights(name); });
    std::printf("llava %s vs %s: loss rel %.2e, weight abs %.2e\n", a.c_str(), b.c_str(), loss,
                weight);
    return {loss, weight};
  }
};

}  // namespace bm::train::testing
