// LlavaModel on the CPU (llava-tiny, the text model shrunk): every parameter's
// gradient of the three parts (vision tower, projector, language model)
// against finite differences of the loss in float64, the float model against
// the float64 one, frozen tower tensors untouched, no images = the language
// model alone, and bad image positions refused.
#include "trainer/cpu/llava_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/trainer/gradcheck.h"
#include "trainer/rng.h"

namespace bm::train::cpu {
namespace {

// clip-tiny (28 px, patch 14: 4 image tokens, hidden 32, 3 layers of which 2 computed) and a
// small llama.
LlavaConfig Tiny() {
  LlavaConfig c = *LlavaPreset("llava-tiny");
  c.text.vocab = 13;
  c.text.hidden = 8;
  c.text.layers = 2;
  c.text.heads = 2;
  c.text.kv_heads = 1;
  c.text.ffn_hidden = 12;
  c.text.max_seq = 16;
  c.image_token_id = 13;
  return c;
}

constexpr int64_t kB = 2, kT = 8, kImages = 3;

// Row 0: text, an image at 1..4, text. Row 1: an image at 0..3, text, a third image cut after two
// tokens (positions 14, 15). Image positions hold id 0.
struct Batch {
  std::vector<int32_t> inputs = {5, 0, 0, 0, 0, 7,  2, 9,  //
                                 0, 0, 0, 0, 3, 11, 0, 0};
  std::vector<int32_t> targets = {0, 0, 0, 0, 7,  2, 9, 1,  //
                                  0, 0, 0, 3, 11, 0, 0, 0};
  std::vector<uint8_t> mask = {0, 0, 0, 0, 1, 1, 1, 1,  //
                               0, 0, 0, 1, 1, 0, 0, 0};
  std::vector<int64_t> positions = {1, 2, 3, 4, 8, 9, 10, 11, 14, 15, -1, -1};
  std::vector<float> pixels;

  explicit Batch(const LlavaConfig& c) {
    const int64_t n = kImages * 3 * c.vision.image_size * c.vision.image_size;
    pixels = testing::RandomFloats(n, 21, 1.0);
  }
  LlavaMicroBatch View(int64_t images = kImages) const {
    return {inputs.data(), targets.data(),   mask.data(), kB, kT,
            pixels.data(), positions.data(), images};
  }
};

// The whole model's starting values: the init times 10 plus noise, so every path carries signal.
std::vector<double> Values(const LlavaConfig& c, const LlavaLayout& layout) {
  std::vector<float> init = InitLlavaParameters(c, layout, 3);
  std::vector<double> v(init.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = init[i] * 4.0 + 0.05 * NormalAt(9, 9, i);
  return v;
}

// Each tensor of `part` (a layout over `params`) against finite differences of f; frozen
// tensors have no gradient at all.
void CheckPart(const ParamLayout& layout, std::vector<double>& params,
               const std::vector<double>& grads, const std::function<double()>& f,
               const std::string& part) {
  for (const ParamTensor& t : layout.tensors()) {
    std::vector<double> g(grads.begin() + t.offset, grads.begin() + t.offset + t.numel);
    if (t.frozen) {
      EXPECT_EQ(g, std::vector<double>(t.numel, 0.0)) << part << " " << t.name;
      continue;
    }
    std::vector<double> x(params.begin() + t.offset, params.begin() + t.offset + t.numel);
    auto ft = [&] {
      std::copy(x.begin(), x.end(), params.begin() + t.offset);
      return f();
    };
    testing::ExpectGradientMatches(x, g, ft, (part + " " + t.name).c_str(), 1e-6, 40);
    std::copy(x.begin(), x.end(), params.begin() + t.offset);
  }
}

TEST(LlavaModelGradCheck, AllThreePartsAgainstFiniteDifferences) {
  const LlavaConfig c = Tiny();
  ASSERT_TRUE(Validate(c).ok()) << Validate(c).message();
  LlavaModel<double> model(c, kB, kT, kImages);
  const std::vector<double> values = Values(c, model.layout());
  ASSERT_TRUE(model.SetParameters(values).ok());
  Batch batch(c);
  const double scale = 0.37;
  double sum = 0;
  int64_t count = 0;
  ASSERT_TRUE(model.ForwardBackward(batch.View(), scale, &sum, &count).ok());
  EXPECT_EQ(count, 6);
  EXPECT_TRUE(std::isfinite(sum));
  const std::vector<double> tower_g = model.tower().grads(), proj_g = model.projector().grads(),
                            text_g = model.text().grads();
  std::vector<double> losses(kB * kT);
  auto f = [&] {
    EXPECT_TRUE(model.TokenLosses(batch.View(), losses.data()).ok());
    double s = 0;
    for (int64_t n = 0; n < kB * kT; ++n) s += batch.mask[n] ? scale * losses[n] : 0.0;
    return s;
  };
  EXPECT_NEAR(f(), scale * sum, 1e-12 * std::abs(sum));
  CheckPart(model.tower().layout(), model.tower().params(), tower_g, f, "tower");
  CheckPart(model.projector().layout(), model.projector().params(), proj_g, f, "projector");
  CheckPart(model.text().layout(), model.text().params(), text_g, f, "text");
  // the whole model's gradient buffer is the three parts in LlavaLayout order
  std::vector<double> whole(model.layout().total());
  ASSERT_TRUE(model.GetGradients(whole).ok());
  EXPECT_TRUE(
      std::equal(tower_g.begin(), tower_g.end(), whole.begin() + model.layout().vision_offset()));
  EXPECT_TRUE(
      std::equal(proj_g.begin(), proj_g.end(), whole.begin() + model.layout().projector_offset()));
  EXPECT_TRUE(
      std::equal(text_g.begin(), text_g.end(), whole.begin() + model.layout().text_offset()));
}

// An image whose tokens were all cut off (positions -1) is computed but used nowhere: its pixels
// change no loss; a used image's do.
TEST(LlavaModelGradCheck, PixelsOfAnUnusedImageChangeNothing) {
  const LlavaConfig c = Tiny();
  LlavaModel<double> model(c, kB, kT, kImages);
  ASSERT_TRUE(model.SetParameters(Values(c, model.layout())).ok());
  Batch batch(c);
  for (int64_t& p : batch.positions)
    if (p >= 14) p = -1;  // the third image wholly cut off
  std::vector<double> a(kB * kT), b(kB * kT);
  ASSERT_TRUE(model.TokenLosses(batch.View(), a.data()).ok());
  const int64_t S = c.vision.image_size, plane = 3 * S * S;
  for (int64_t i = 2 * plane; i < 3 * plane; ++i) batch.pixels[i] += 0.5f;
  ASSERT_TRUE(model.TokenLosses(batch.View(), b.data()).ok());
  EXPECT_EQ(a, b);
  for (int64_t i = 0; i < plane; ++i) batch.pixels[i] += 0.5f;  // the first image is used
  ASSERT_TRUE(model.TokenLosses(batch.View(), b.data()).ok());
  EXPECT_NE(a, b);
}

// The float model against the float64 one from the same float values: the loss and every
// tensor's gradient within a relative 1e-4 of the tensor's largest value; frozen tensors 0.
void CheckFloatAgainstDouble(const LlavaConfig& c) {
  LlavaModel<float> f32(c, kB, kT, kImages);
  LlavaModel<double> f64(c, kB, kT, kImages);
  std::vector<double> values = Values(c, f64.layout());
  std::vector<float> values32(values.begin(), values.end());
  for (size_t i = 0; i < values.size(); ++i) values[i] = values32[i];
  ASSERT_TRUE(f32.SetParameters(values32).ok());
  ASSERT_TRUE(f64.SetParameters(values).ok());
  Batch batch(c);
  double sum32 = 0, sum64 = 0;
  int64_t n32 = 0, n64 = 0;
  ASSERT_TRUE(f32.ForwardBackward(batch.View(), 0.5f, &sum32, &n32).ok());
  ASSERT_TRUE(f64.ForwardBackward(batch.View(), 0.5, &sum64, &n64).ok());
  EXPECT_EQ(n32, n64);
  EXPECT_NEAR(sum32, sum64, 1e-5 * std::abs(sum64));
  std::vector<float> g32(f32.layout().total());
  std::vector<double> g64(f64.layout().total());
  ASSERT_TRUE(f32.GetGradients(g32).ok());
  ASSERT_TRUE(f64.GetGradients(g64).ok());
  double largest = 0;
  for (double g : g64) largest = std::max(largest, std::abs(g));
  for (const ParamTensor& t : f64.layout().whole().tensors()) {
    double scale = 0, worst = 0;
    for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
      scale = std::max(scale, std::abs(g64[i]));
      worst = std::max(worst, std::abs(g32[i] - g64[i]));
    }
    if (t.frozen) {
      EXPECT_EQ(scale, 0.0) << t.name;
      EXPECT_EQ(worst, 0.0) << t.name;
      continue;
    }
    EXPECT_GT(scale, 0.0) << t.name;
    // The key biases' gradient is 0 in exact arithmetic (softmax ignores a shift of every
    // score of a row), rounding noise in both: those are held to the model's largest gradient.
    if (t.name.ends_with("k_proj.bias")) {
      EXPECT_LE(worst, 1e-6 * largest) << t.name;
      continue;
    }
    EXPECT_LE(worst, 1e-4 * scale) << t.name;
  }
}

TEST(LlavaModel, FloatMatchesDouble) { CheckFloatAgainstDouble(Tiny()); }
// The preset itself (llama-tiny's 512 ids, hidden 64), ids drawn from that vocabulary.
TEST(LlavaModel, FloatMatchesDoubleOnThePreset) {
  CheckFloatAgainstDouble(*LlavaPreset("llava-tiny"));
}

// No images: the language model's own bits (and the tower and projector get nothing).
TEST(LlavaModel, NoImagesIsTheLanguageModel) {
  const LlavaConfig c = Tiny();
  LlavaModel<float> llava(c, kB, kT, kImages);
  Model<float> plain(c.text, kB, kT);
  std::vector<double> values = Values(c, llava.layout());
  std::vector<float> v32(values.begin(), values.end());
  ASSERT_TRUE(llava.SetParameters(v32).ok());
  std::copy(v32.begin() + llava.layout().text_offset(), v32.end(), plain.params().begin());
  Batch batch(c);
  double a = 0, b = 0;
  int64_t na = 0, nb = 0;
  ASSERT_TRUE(llava.ForwardBackward(batch.View(0), 0.25f, &a, &na).ok());
  plain.ForwardBackward(batch.inputs.data(), batch.targets.data(), batch.mask.data(), kB, kT, 0.25f,
                        &b, &nb);
  EXPECT_EQ(a, b);
  EXPECT_EQ(na, nb);
  EXPECT_EQ(llava.text().grads(), plain.grads());
  for (float g : llava.tower().grads()) ASSERT_EQ(g, 0.0f);
  for (float g : llava.projector().grads()) ASSERT_EQ(g, 0.0f);
}

// A frozen tower (LLaVA-1.5's recipe): no tower gradients at all, and the projector's and the
// language model's exactly those of the trained-tower model.
TEST(LlavaModel, FrozenTowerGetsNoGradient) {
  const LlavaConfig c = Tiny();
  LlavaModel<float> trained(c, kB, kT, kImages), frozen(c, kB, kT, kImages);
  std::vector<double> values = Values(c, trained.layout());
  std::vector<float> v32(values.begin(), values.end());
  ASSERT_TRUE(trained.SetParameters(v32).ok());
  ASSERT_TRUE(frozen.SetParameters(v32).ok());
  frozen.set_train_tower(false);
  Batch batch(c);
  double a = 0, b = 0;
  int64_t na = 0, nb = 0;
  ASSERT_TRUE(trained.ForwardBackward(batch.View(), 0.25f, &a, &na).ok());
  ASSERT_TRUE(frozen.ForwardBackward(batch.View(), 0.25f, &b, &nb).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(trained.projector().grads(), frozen.projector().grads());
  EXPECT_EQ(trained.text().grads(), frozen.text().grads());
  for (float g : frozen.tower().grads()) ASSERT_EQ(g, 0.0f);
  double norm = 0;
  for (float g : trained.tower().grads()) norm += std::abs(g);
  EXPECT_GT(norm, 0.0);
}

TEST(LlavaModel, BadImagePositionsAreRefused) {
  const LlavaConfig c = Tiny();
  LlavaModel<float> model(c, kB, kT, 2);
  Batch batch(c);
  double sum = 0;
  int64_t count = 0;
  Status s = model.ForwardBackward(batch.View(), 1.0f, &sum, &count);  // 3 images, room for 2
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("3 images"), std::string::npos) << s.message();
  batch.positions[5] = 16;  // past B*T
  s = model.ForwardBackward(batch.View(2), 1.0f, &sum, &count);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("image 1 token 1 at position 16"), std::string::npos) << s.message();
  batch.positions[5] = 2;  // image 0's
  s = model.ForwardBackward(batch.View(2), 1.0f, &sum, &count);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("position 2 holds two image tokens"), std::string::npos)
      << s.message();
  std::vector<float> whole(model.layout().total() + 1);
  EXPECT_EQ(model.SetParameters(whole).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace bm::train::cpu
