// benchmake-train on a LLaVA model (llava-tiny) and a llava_data directory, on
// the CPU: it trains (the loss falls), and data parallel over two processes,
// ZeRO 0 and 3, reaches one process's loss curve and weights within the
// tolerance data_parallel_test.cc explains (the reduction order), while a run
// on other rows moves far beyond it; the same with LLaVA's stages (frozen parts),
// whose frozen weights come out bit for bit as the init.
#include <gtest/gtest.h>

#include "tests/trainer/llava_ranks.h"
#include "tests/trainer/llava_test_data.h"
#include "tests/trainer/train_ranks.h"
#include "trainer/checkpoint/llava_checkpoint.h"
#include "trainer/data/llava_batch.h"
#include "trainer/model/llava_layout.h"
#include "trainer/rng.h"

namespace bm::train {
namespace {

using nlohmann::json;

class LlavaTrainTest : public ::bm::train::testing::LlavaRanksTest {
 protected:
  void SetUp() override {
    LlavaRanksTest::SetUp();
    WriteLlavaRunData();
  }

  json Llava(const std::string& name, int dp, int lbs, int gas, int zero) const {
    json c = Config(name, "llava-tiny", "DP" + std::to_string(dp), lbs, gas, zero);
    c["data"] = dir_ + "/llava";
    c.erase("resume_dir");
    return c;
  }
};

constexpr double kLossTol = 1e-4, kWeightTol = 1e-4;

TEST_F(LlavaTrainTest, TrainsAndDataParallelMatchesOneProcess) {
  RunOk(Llava("single", 1, 4, 2, 0));
  const std::vector<double> losses = Losses("single");
  ASSERT_EQ(losses.size(), 20u);
  EXPECT_LT(losses.back(), 0.7 * losses.front());
  json m = Metrics("single");
  EXPECT_EQ(m["parallel"]["world_size"], 1);
  EXPECT_GT(m["train"]["images"].get<int64_t>(), 0);
  // the saved model loads as the llava-tiny geometry, the trained weights in it
  EXPECT_EQ(LlavaWeights("single").size(),
            static_cast<size_t>(LlavaLayout(*LlavaPreset("llava-tiny")).total()));
  for (int zero : {0, 3}) {
    const std::string name = "dp2z" + std::to_string(zero);
    RunOk(Llava(name, 2, 2, 2, zero));
    auto [loss, weight] = LlavaDistance(name, "single");
    EXPECT_LT(loss, kLossTol) << name;
    EXPECT_LT(weight, kWeightTol) << name;
    EXPECT_EQ(Metrics(name)["parallel"]["zero"], zero);
  }
  // The check can fail: other rows (another seed) move far beyond it.
  json other = Llava("other", 2, 2, 2, 0);
  other["seed"] = 8;
  RunOk(other);
  auto [loss, weight] = LlavaDistance("other", "single");
  EXPECT_GT(loss, 100 * kLossTol);
  EXPECT_GT(weight, 10 * kWeightTol);
}

// LLaVA's stages (llava_stage): the frozen parts come out of the run bit for bit as they went in
// (the seed's init), the trained ones move; DP2 with ZeRO-3 reaches one process's weights.
TEST_F(LlavaTrainTest, StagesFreezeAndDataParallelMatchesOneProcess) {
  const LlavaConfig model = *LlavaPreset("llava-tiny");
  const LlavaLayout l(model);
  const uint64_t seed = Llava("seed", 1, 4, 2, 0)["seed"].get<uint64_t>();
  const std::vector<float> init = InitLlavaParameters(model, l, seed);  // the runs' init
  for (const std::string stage : {"pretrain", "finetune"}) {
    json one = Llava(stage + "1", 1, 4, 2, 0);
    one["llava_stage"] = stage;
    RunOk(one);
    json two = Llava(stage + "2z3", 2, 2, 2, 3);
    two["llava_stage"] = stage;
    RunOk(two);
    for (const std::string& name : {stage + "1", stage + "2z3"}) {
      ExpectStageMoves(name, stage, l, init);
      EXPECT_EQ(Metrics(name)["config"]["freeze"].size(), stage == "pretrain" ? 2u : 1u);
    }
    auto [loss, weight] = LlavaDistance(stage + "2z3", stage + "1");
    EXPECT_LT(loss, kLossTol) << stage;
    EXPECT_LT(weight, kWeightTol) << stage;
  }
  // The stages differ from each other and from the full run: the check can fail.
  RunOk(Llava("full", 1, 4, 2, 0));
  EXPECT_GT(LlavaDistance("finetune1", "full").second, 10 * kWeightTol);
  EXPECT_GT(LlavaDistance("pretrain1", "finetune1").second, 10 * kWeightTol);
}

TEST_F(LlavaTrainTest, FreezeOfATextModelIsRefused) {
  json c = Config("text", "llama-tiny", "DP1", 2, 1, 0);
  c["freeze"] = {"language_model"};
  std::vector<int> status = Run(c);
  ASSERT_EQ(status.size(), 1u);
  EXPECT_FALSE(WIFEXITED(status[0]) && WEXITSTATUS(status[0]) == 0);
  EXPECT_NE(Log("text", 0).find("not a LLaVA model"), std::string::npos) << Log("text", 0);
}

// metrics.json of a LLaVA run has the text models' fields, counted as FlagPerf's llava1.5_13b
// seed counts them (trainer/run/llava_metrics.h): a micro-batch's tokens are its longest row
// (a sample with an image: 1 + 4 image positions + 10 = 15; without: 11; mpe 16 cuts nothing)
// times its 4 rows, whichever rows the sampler drew.
TEST_F(LlavaTrainTest, MetricsCountTokensAsTheSeed) {
  json c = Llava("metrics", 1, 4, 2, 0);
  c["model"]["trainable"] = {"projector", "language_model"};
  c["peak_tflops"] = 1.0;
  RunOk(c);
  Result<LlavaData> data = LlavaData::Open(dir_ + "/llava", "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  const std::vector<double> logged = Logged("metrics", "tokens");
  ASSERT_EQ(logged.size(), 20u);
  double width_sum = 0, measured_tokens = 0;
  for (int64_t step = 1; step <= 20; ++step) {
    int64_t tokens = 0;
    for (int64_t g = 0; g < 2; ++g) {
      int64_t width = 11;
      for (int64_t row = g * 4; row < g * 4 + 4; ++row)
        if (LlavaTrainSample(*data, c["seed"].get<uint64_t>(), step, row) % 4 != 3) width = 15;
      tokens += 4 * width;
      if (step > 2) width_sum += static_cast<double>(width);  // WarmupSteps(20) = 2
    }
    if (step > 2) measured_tokens += static_cast<double>(tokens);
    EXPECT_EQ(logged[step - 1], static_cast<double>(tokens)) << "step " << step;
  }
  const json m = Metrics("metrics");
  EXPECT_EQ(m["format"], "benchmake-metrics");
  EXPECT_EQ(m["kind"], "pretrain");
  EXPECT_GT(m["throughput"]["tokens_per_device_per_s"].get<double>(), 0);
  EXPECT_EQ(m["throughput"]["measured_steps"], 18);
  // what `benchmake report` reads (engine/report/report_table.cc) is there
  EXPECT_TRUE(m["loss"]["final"].is_number());
  EXPECT_TRUE(m["model"]["overrides"].is_object());
  EXPECT_EQ(m["provenance"]["trainer"], "benchmake-train");
  EXPECT_GT(m["memory"]["peak_bytes"].get<int64_t>(), 0);
  EXPECT_GT(m["memory"]["device_total_bytes"].get<int64_t>(), 0);
  const double mean = width_sum / (18 * 2);
  EXPECT_DOUBLE_EQ(m["llava_flops"]["mean_length"].get<double>(), mean);
  EXPECT_EQ(m["llava_flops"]["measured_tokens"].get<double>(), measured_tokens);
  EXPECT_EQ(m["llava_flops"]["vision_tower"]["counted"], "forward only");
  EXPECT_EQ(m["llava_flops"]["language_model"]["counted"], "training (3x forward)");
  // llama-tiny's 151872 parameters (llava_metrics_test.cc counts them): 6N + 12 L H T
  EXPECT_DOUBLE_EQ(m["flops_per_token"]["palm"].get<double>(), 6.0 * 151872 + 12.0 * 2 * 64 * mean);
  EXPECT_EQ(m["mfu"]["peak_flops_per_device"].get<double>(), 1e12);
  EXPECT_GT(m["mfu"]["palm"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(m["mfu"]["palm"].get<double>(),
                   m["mfu"]["achieved_flops_per_device"].get<double>() / 1e12);
  EXPECT_GT(m["train"]["images"].get<int64_t>(), 0);
  EXPECT_EQ(m["llava"]["model"]["preset"], "llava-tiny");
}

// LLaVA-1.5's stages: model.trainable ["projector", "language_model"] (finetune) keeps the
// tower's initial weights bit for bit; ["projector"] (pretraining) keeps the tower's and the
// language model's, and two ranks at ZeRO-3 still match one process.
TEST_F(LlavaTrainTest, FrozenPartsKeepTheirWeights) {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  const LlavaLayout layout(c);
  const std::vector<float> init = InitLlavaParameters(c, layout, 7);
  auto same = [&](const std::vector<float>& w, int64_t begin, int64_t end) {
    return std::equal(w.begin() + begin, w.begin() + end, init.begin() + begin);
  };
  json finetune = Llava("finetune", 1, 4, 2, 0);
  finetune["model"]["trainable"] = {"projector", "language_model"};
  RunOk(finetune);
  std::vector<float> w = LlavaWeights("finetune");
  ASSERT_EQ(static_cast<int64_t>(w.size()), layout.total());
  EXPECT_TRUE(same(w, 0, layout.projector_offset()));
  EXPECT_FALSE(same(w, layout.projector_offset(), layout.text_offset()));
  EXPECT_FALSE(same(w, layout.text_offset(), layout.total()));
  EXPECT_EQ(Metrics("finetune")["trainable"]["vision_tower"], false);

  json pretrain = Llava("pretrain", 1, 4, 2, 0);
  pretrain["model"]["trainable"] = {"projector"};
  RunOk(pretrain);
  w = LlavaWeights("pretrain");
  EXPECT_TRUE(same(w, 0, layout.projector_offset()));
  EXPECT_FALSE(same(w, layout.projector_offset(), layout.text_offset()));
  EXPECT_TRUE(same(w, layout.text_offset(), layout.total()));
  const std::vector<double> losses = Losses("pretrain");
  EXPECT_LT(losses.back(), losses.front());

  json dp2 = Llava("pretrain_dp2z3", 2, 2, 2, 3);
  dp2["model"]["trainable"] = {"projector"};
  RunOk(dp2);
  auto [loss, weight] = LlavaDistance("pretrain_dp2z3", "pretrain");
  EXPECT_LT(loss, kLossTol);
  EXPECT_LT(weight, kWeightTol);

  json bad = Llava("bad", 1, 2, 1, 0);
  bad["model"]["trainable"] = {"tower"};
  std::vector<int> status = Run(bad);
  EXPECT_FALSE(WIFEXITED(status[0]) && WEXITSTATUS(status[0]) == 0);
  EXPECT_NE(Log("bad", 0).find("model.trainable: 'tower' is not a part"), std::string::npos)
      << Log("bad", 0);
}

TEST_F(LlavaTrainTest, UnsupportedSettingsAreNamed) {
  json c = Llava("fp16", 1, 2, 1, 0);
  c["checkpoint_every"] = 5;
  c["resume_dir"] = dir_ + "/fp16.resume";
  std::vector<int> status = Run(c);
  ASSERT_EQ(status.size(), 1u);
  EXPECT_FALSE(WIFEXITED(status[0]) && WEXITSTATUS(status[0]) == 0);
  EXPECT_NE(Log("fp16", 0).find("checkpoint_every"), std::string::npos) << Log("fp16", 0);
}

}  // namespace
}  // namespace bm::train
