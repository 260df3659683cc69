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

#include "tests/trainer/train_ranks.h"
#include "trainer/checkpoint/llava_checkpoint.h"

namespace bm::train::testing {

class LlavaRanksTest : public TrainRanksTest {
 protected:
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

  // Largest relative loss difference over the steps, largest absolute weight difference.
  std::pair<double, double> LlavaDistance(const std::string& a, const std::string& b) const {
    std::vector<double> la = Losses(a), lb = Losses(b);
    EXPECT_EQ(la.size(), lb.size());
    double loss = 0, weight = 0;
    for (size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
      loss = std::max(loss, std::abs(la[i] - lb[i]) / std::abs(lb[i]));
    std::vector<float> wa = LlavaWeights(a), wb = LlavaWeights(b);
    EXPECT_EQ(wa.size(), wb.size());
    for (size_t i = 0; i < std::min(wa.size(), wb.size()); ++i)
      weight = std::max(weight, static_cast<double>(std::abs(wa[i] - wb[i])));
    std::printf("llava %s vs %s: loss rel %.2e, weight abs %.2e\n", a.c_str(), b.c_str(), loss,
                weight);
    return {loss, weight};
  }
};

}  // namespace bm::train::testing
