// LLaVA's frozen parts on the CPU (LlavaTrainer with a LlavaFreeze, one rank):
// no gradient buffer and no AdamW state for a frozen part, counted against the
// llava-tiny layout by hand; frozen weights bit-identical after several steps;
// the trained parts bit-identical to an emulation of freezing by the full
// model (every part trains, the frozen parts' weights put back after each
// step, no clipping); the run-config keys and their errors. DP2 / ZeRO-3
// with freezing against one process: tests/trainer/llava_train_test.cc.
#include "trainer/model/llava_freeze.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "trainer/cpu/llava_trainer.h"
#include "trainer/model/llava_layout.h"
#include "trainer/rng.h"
#include "trainer/run/run_config.h"

namespace bm::train::cpu {
namespace {

// llava-tiny by hand (trainer/model/vision_config.cc, config.cc presets).
// clip-tiny: 28 px, patch 14 (4 patches, 5 positions), hidden 32, 3 layers, MLP 64:
//   class 32 + patch conv 32·3·14·14 = 18816 + positions 5·32 = 160 + pre_layrnorm 64
//   + 3 layers × (2 norms 128 + q,k,v,o 4·(32·32+32) = 4224 + fc1 64·32+64 = 2112
//   + fc2 32·64+32 = 2080 → 8544) + post_layernorm 64
constexpr int64_t kVision = 32 + 18816 + 160 + 64 + 3 * 8544 + 64;  // 44768
// projector: linear_1 [64, 32] + 64, linear_2 [64, 64] + 64
constexpr int64_t kProjector = 64 * 32 + 64 + 64 * 64 + 64;  // 6272
// llama-tiny: vocab 512, hidden 64, 2 layers, 4 heads / 2 kv heads of 16, ffn 160, untied:
//   embed 512·64 + 2 × (2 norms 128 + q 4096 + k 2048 + v 2048 + o 4096 + 3·160·64 = 30720)
//   + norm 64 + lm_head 512·64
constexpr int64_t kText = 512 * 64 + 2 * (128 + 4096 + 2048 + 2048 + 4096 + 30720) + 64 + 512 * 64;

constexpr int64_t kB = 2, kT = 16, kImages = 3;

struct Batch {
  std::vector<int32_t> inputs, targets;
  std::vector<uint8_t> mask;
  std::vector<int64_t> positions;
  std::vector<float> pixels;

  // Two rows of 16: row 0 an image at 2..5, row 1 images at 0..3 and 8..11; text elsewhere.
  explicit Batch(uint64_t seed) {
    for (int64_t i = 0; i < kB * kT; ++i) {
      inputs.push_back(static_cast<int32_t>(UniformIntAt(seed, 1, i, 512)));
      targets.push_back(static_cast<int32_t>(UniformIntAt(seed, 2, i, 512)));
      mask.push_back(i % 3 != 0);
    }
    for (int64_t p : {2, 3, 4, 5, 16, 17, 18, 19, 24, 25, 26, 27}) positions.push_back(p);
    for (int64_t i = 0; i < kImages * 3 * 28 * 28; ++i)
      pixels.push_back(static_cast<float>(NormalAt(seed, 3, i)));
  }
  LlavaMicroBatch View() const {
    return {inputs.data(), targets.data(),   mask.data(), kB, kT,
            pixels.data(), positions.data(), kImages};
  }
};

std::unique_ptr<LlavaTrainer> Make(const LlavaFreeze& freeze, int zero = 0) {
  BackendOptions o;
  o.max_batch = kB;
  o.max_seq = kT;
  o.threads = 2;
  o.zero = zero;
  Result<std::unique_ptr<LlavaTrainer>> t =
      LlavaTrainer::Create(*LlavaPreset("llava-tiny"), o, kImages, freeze);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(*t) : nullptr;
}

std::vector<float> Init() {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  return InitLlavaParameters(c, LlavaLayout(c), 5);
}

AdamWStep Step(int64_t step) {
  AdamWStep s;
  s.lr = 1e-2f;  // large: every trained weight moves
  s.weight_decay = 0.1f;
  s.grad_clip = 0.0f;  // no clipping: the norm (trained parts only when frozen) does not matter
  s.step = step;
  return s;
}

// Trains `steps` steps of two micro-batches. restore: after each step the
// parts named there are put back as in `init` (the emulation of freezing).
struct Trained {
  std::vector<float> weights;
  std::vector<double> losses;
};
Trained Train(LlavaTrainer& t, const std::vector<float>& init, int steps,
              const LlavaFreeze& restore = {}) {
  Trained out;
  EXPECT_TRUE(t.SetParameters(init).ok());
  const LlavaLayout& l = t.layout();
  std::vector<float> w(init.size());
  for (int s = 1; s <= steps; ++s) {
    EXPECT_TRUE(t.ZeroGrad().ok());
    double loss = 0;
    for (int g = 0; g < 2; ++g) {
      Batch b(100 * s + g);
      Result<LossSum> r = t.ForwardBackward(b.View(), 1.0f / 40, g == 1);
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (r.ok()) loss += r->sum;
    }
    out.losses.push_back(loss);
    EXPECT_TRUE(t.OptimizerStep(Step(s)).ok());
    if (!restore.any()) continue;
    EXPECT_TRUE(t.GetParameters(w).ok());
    auto put = [&](int64_t begin, int64_t end) {
      std::copy(init.begin() + begin, init.begin() + end, w.begin() + begin);
    };
    if (restore.vision_tower) put(l.vision_offset(), l.projector_offset());
    if (restore.projector) put(l.projector_offset(), l.text_offset());
    if (restore.language_model) put(l.text_offset(), l.total());
    EXPECT_TRUE(t.SetParameters(w).ok());
  }
  out.weights.resize(init.size());
  EXPECT_TRUE(t.GetParameters(out.weights).ok());
  return out;
}

// [begin, end) of two buffers bitwise equal / all different.
bool Same(const std::vector<float>& a, const std::vector<float>& b, int64_t begin, int64_t end) {
  return std::equal(a.begin() + begin, a.begin() + end, b.begin() + begin);
}
int64_t Moved(const std::vector<float>& a, const std::vector<float>& b, int64_t begin,
              int64_t end) {
  int64_t n = 0;
  for (int64_t i = begin; i < end; ++i) n += a[i] != b[i];
  return n;
}

TEST(LlavaFreeze, TheLayoutIsCountedByHand) {
  const LlavaLayout l(*LlavaPreset("llava-tiny"));
  EXPECT_EQ(l.vision().total(), kVision);
  EXPECT_EQ(l.projector().total(), kProjector);
  EXPECT_EQ(l.text().total(), kText);
}

TEST(LlavaFreeze, FrozenPartsHoldNoGradientsAndNoOptimizerState) {
  using S = LlavaTrainer::TrainingState;
  auto expect = [](const LlavaFreeze& f, const S& want) {
    std::unique_ptr<LlavaTrainer> t = Make(f);
    ASSERT_TRUE(t);
    const S s = t->training_state();
    EXPECT_EQ(s.vision_grads, want.vision_grads);
    EXPECT_EQ(s.vision_moments, want.vision_moments);
    EXPECT_EQ(s.projector_grads, want.projector_grads);
    EXPECT_EQ(s.projector_moments, want.projector_moments);
    EXPECT_EQ(s.text_grads, want.text_grads);
    EXPECT_EQ(s.text_moments, want.text_moments);
  };
  // full: gradients and m, v for everything
  expect({}, {kVision, 2 * kVision, kProjector, 2 * kProjector, kText, 2 * kText});
  // pretrain: the projector alone
  expect(*LlavaFreezeForStage("pretrain"), {0, 0, kProjector, 2 * kProjector, 0, 0});
  // finetune: the projector and the language model
  expect(*LlavaFreezeForStage("finetune"), {0, 0, kProjector, 2 * kProjector, kText, 2 * kText});
  // a frozen language model under the tower and projector training
  expect({false, false, true}, {kVision, 2 * kVision, kProjector, 2 * kProjector, 0, 0});
}

TEST(LlavaFreeze, FrozenLanguageModelReleasesItsGradientBytes) {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  Model<float> full(c.text, kB, kT), frozen(c.text, kB, kT);
  frozen.FreezeWeights();
  EXPECT_TRUE(frozen.grads().empty());
  EXPECT_EQ(full.bytes() - frozen.bytes(), kText * static_cast<int64_t>(sizeof(float)));
}

TEST(LlavaFreeze, PretrainEqualsTheFullModelWithFrozenPartsPutBack) {
  const LlavaFreeze pretrain = *LlavaFreezeForStage("pretrain");
  const std::vector<float> init = Init();
  std::unique_ptr<LlavaTrainer> frozen = Make(pretrain), full = Make({});
  ASSERT_TRUE(frozen && full);
  const Trained a = Train(*frozen, init, 4);
  const Trained b = Train(*full, init, 4, pretrain);
  const LlavaLayout& l = frozen->layout();
  // frozen: bit for bit as loaded
  EXPECT_TRUE(Same(a.weights, init, l.vision_offset(), l.projector_offset()));
  EXPECT_TRUE(Same(a.weights, init, l.text_offset(), l.total()));
  // the projector trained, bit for bit as the emulation's
  EXPECT_GT(Moved(a.weights, init, l.projector_offset(), l.text_offset()), kProjector * 9 / 10);
  EXPECT_TRUE(Same(a.weights, b.weights, l.projector_offset(), l.text_offset()));
  EXPECT_EQ(a.losses, b.losses);
  EXPECT_GT(a.losses.front(), a.losses.back());
}

TEST(LlavaFreeze, FinetuneEqualsTheFullModelWithTheTowerPutBack) {
  const LlavaFreeze finetune = *LlavaFreezeForStage("finetune");
  const std::vector<float> init = Init();
  std::unique_ptr<LlavaTrainer> frozen = Make(finetune), full = Make({});
  ASSERT_TRUE(frozen && full);
  const Trained a = Train(*frozen, init, 3);
  const Trained b = Train(*full, init, 3, finetune);
  const LlavaLayout& l = frozen->layout();
  EXPECT_TRUE(Same(a.weights, init, l.vision_offset(), l.projector_offset()));
  EXPECT_GT(Moved(a.weights, init, l.projector_offset(), l.total()), kProjector + kText / 2);
  EXPECT_TRUE(Same(a.weights, b.weights, l.projector_offset(), l.total()));
  EXPECT_EQ(a.losses, b.losses);
}

TEST(LlavaFreeze, TheEmulationCanFail) {
  // Without putting the frozen parts back the full model's projector differs.
  const LlavaFreeze pretrain = *LlavaFreezeForStage("pretrain");
  const std::vector<float> init = Init();
  std::unique_ptr<LlavaTrainer> frozen = Make(pretrain), full = Make({});
  ASSERT_TRUE(frozen && full);
  const Trained a = Train(*frozen, init, 3);
  const Trained b = Train(*full, init, 3);
  const LlavaLayout& l = frozen->layout();
  EXPECT_GT(Moved(a.weights, b.weights, l.projector_offset(), l.text_offset()), kProjector / 2);
}

TEST(LlavaFreeze, StagesNamesAndErrors) {
  EXPECT_EQ(*LlavaFreezeForStage("pretrain"), (LlavaFreeze{true, false, true}));
  EXPECT_EQ(*LlavaFreezeForStage("finetune"), (LlavaFreeze{true, false, false}));
  EXPECT_EQ(*LlavaFreezeForStage("full"), LlavaFreeze{});
  EXPECT_NE(LlavaFreezeForStage("stage1").status().message().find("pretrain"), std::string::npos);
  EXPECT_EQ(*LlavaFreezeFromNames({"language_model", "vision_tower"}),
            (LlavaFreeze{true, false, true}));
  EXPECT_EQ(LlavaFreezeFromNames({"vision_tower", "projector"})->Names(),
            (std::vector<std::string>{"vision_tower", "projector"}));
  EXPECT_NE(LlavaFreezeFromNames({"vision"}).status().message().find("unknown part 'vision'"),
            std::string::npos);
  EXPECT_NE(LlavaFreezeFromNames({"vision_tower", "vision_tower"}).status().message().find("twice"),
            std::string::npos);
  Status all = LlavaFreezeFromNames({"vision_tower", "projector", "language_model"}).status();
  EXPECT_NE(all.message().find("nothing would train"), std::string::npos);
  Status proj = LlavaFreezeFromNames({"projector"}).status();
  EXPECT_EQ(proj.code(), ErrorCode::kUnsupported);
  // the CUDA trainer's spelling: the parts that train
  const LlavaTrainable pretrain = TrainableOf(*LlavaFreezeForStage("pretrain"));
  EXPECT_FALSE(pretrain.tower);
  EXPECT_TRUE(pretrain.projector);
  EXPECT_FALSE(pretrain.language_model);
  // the trainer refuses what Validate refuses
  BackendOptions o;
  o.max_batch = kB;
  o.max_seq = kT;
  Result<std::unique_ptr<LlavaTrainer>> t =
      LlavaTrainer::Create(*LlavaPreset("llava-tiny"), o, kImages, LlavaFreeze{true, true, true});
  EXPECT_FALSE(t.ok());
}

TEST(LlavaFreeze, RunConfigKeys) {
  nlohmann::json base = {{"mode", "pretrain"},
                         {"data", "/d"},
                         {"out_dir", "/o"},
                         {"model", {{"preset", "llava-tiny"}}}};
  nlohmann::json j = base;
  j["llava_stage"] = "pretrain";
  Result<RunConfig> c = ParseRunConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->freeze_set);
  EXPECT_EQ(c->freeze, (LlavaFreeze{true, false, true}));
  j = base;
  j["freeze"] = {"vision_tower"};
  c = ParseRunConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->freeze, (LlavaFreeze{true, false, false}));
  EXPECT_FALSE(ParseRunConfig(base)->freeze_set);
  auto error = [&](nlohmann::json bad) {
    Result<RunConfig> r = ParseRunConfig(bad);
    return r.ok() ? std::string("ok") : r.status().message();
  };
  j = base;
  j["freeze"] = {"vision_tower"};
  j["llava_stage"] = "finetune";
  EXPECT_NE(error(j).find("use one"), std::string::npos) << error(j);
  j = base;
  j["freeze"] = "vision_tower";
  EXPECT_NE(error(j).find("must be a list"), std::string::npos) << error(j);
  j["freeze"] = {1};
  EXPECT_NE(error(j).find("not a part name"), std::string::npos) << error(j);
  j["freeze"] = {"mm_projector"};
  EXPECT_NE(error(j).find("unknown part 'mm_projector'"), std::string::npos) << error(j);
  // model.trainable (the parts that train): the complement is frozen; with another key an error
  j = base;
  j["model"]["trainable"] = {"projector"};
  c = ParseRunConfig(j);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->freeze, (LlavaFreeze{true, false, true}));
  j["llava_stage"] = "pretrain";
  EXPECT_NE(error(j).find("use one"), std::string::npos) << error(j);
  j = base;
  j["model"]["trainable"] = {"vision_tower", "language_model"};  // a frozen projector alone
  EXPECT_NE(error(j).find("not supported"), std::string::npos) << error(j);
  j = base;
  j["mode"] = "evaluate";
  j["init"] = "/ckpt";
  j["llava_stage"] = "finetune";
  EXPECT_NE(error(j).find("evaluate trains nothing"), std::string::npos) << error(j);
  j = base;
  j["llava_stage"] = "align";
  EXPECT_NE(error(j).find("llava_stage 'align'"), std::string::npos) << error(j);
}

}  // namespace
}  // namespace bm::train::cpu
