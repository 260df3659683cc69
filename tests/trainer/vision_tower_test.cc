// The vision tower and the projector on the CPU: a hand case against an
// independent numpy float64 reference (tests/trainer/clip_tiny_reference.py,
// transformers' CLIPVisionModel and LLaVA's mlp2x_gelu written out in numpy),
// finite-difference gradients of the double instances, and the float
// instances against the double ones on the clip-tiny / llava-tiny presets.
#include "trainer/cpu/vision_tower.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/trainer/gradcheck.h"
#include "trainer/cpu/projector.h"
#include "trainer/model/llava_layout.h"

namespace bm::train::cpu {
namespace {

using testing::Dot;
using testing::ExpectGradientMatches;
using testing::RandomVector;
using Vec = std::vector<double>;

// clip_tiny_reference.py's case: channels 2, image 2, patch 1, hidden 4, 2 heads, mlp 5,
// 2 layers, feature_layer -2; its projector maps to H = 3.
VisionConfig HandConfig() {
  return *ApplyVisionOverrides(*VisionPreset("clip-tiny"), {{"channels", 2},
                                                            {"image_size", 2},
                                                            {"patch", 1},
                                                            {"hidden", 4},
                                                            {"heads", 2},
                                                            {"mlp", 5},
                                                            {"layers", 2},
                                                            {"feature_layer", -2}});
}

double HandValue(int64_t i) { return 0.5 * std::sin(0.37 * static_cast<double>(i) + 0.1); }

// Printed by `python3 tests/trainer/clip_tiny_reference.py` (numpy float64).
const Vec kHandFeatures = {
    0.615556076617388,   -0.453956666052578, 0.438951245928803, 0.815994768290211,
    0.683459498139747,   -0.488932611997957, 0.454408619465685, 0.735161132289476,
    -0.0702452906069194, -0.6019175001309,   0.400482654074463, 0.140450774435294,
    -0.138414549841878,  -0.40624235200427,  0.375978666853321, 0.668998919785389};
const Vec kHandProjected = {0.47878488698979,  0.282553408238763, 0.0785620652637569,
                            0.487361831171138, 0.283108263091055, 0.0704785662827927,
                            0.575022941681512, 0.252208193255127, -0.0446626880689165,
                            0.524492855402699, 0.2551467512575,   0.00848072552663279};

template <typename Float>
void CheckHandCase(double tolerance) {
  const VisionConfig v = HandConfig();
  ASSERT_TRUE(Validate(v).ok());
  VisionTower<Float> tower(v, 1);
  ASSERT_EQ(tower.layout().total(), 338);  // the script's count, in the checkpoint's order
  for (int64_t i = 0; i < 338; ++i) tower.params()[i] = static_cast<Float>(HandValue(i));
  std::vector<Float> pixels(8);
  for (int64_t j = 0; j < 8; ++j) pixels[j] = static_cast<Float>(std::sin(0.9 * j) - 0.2);
  tower.Forward(pixels.data(), 1);
  for (size_t i = 0; i < kHandFeatures.size(); ++i)
    EXPECT_NEAR(tower.features()[i], kHandFeatures[i], tolerance) << i;

  LlavaConfig l = *LlavaPreset("llava-tiny");
  l.vision = v;
  l.text.hidden = 3;
  Projector<Float> projector(l, 4);
  ASSERT_EQ(projector.layout().total(), 4 * 3 + 3 + 3 * 3 + 3);
  for (int64_t j = 0; j < projector.layout().total(); ++j)
    projector.params()[j] = static_cast<Float>(HandValue(338 + j));
  projector.Forward(tower.features(), 4);
  for (size_t i = 0; i < kHandProjected.size(); ++i)
    EXPECT_NEAR(projector.output()[i], kHandProjected[i], tolerance) << i;

  // layer 1 and post_layernorm are past the feature layer: the features do not depend on them
  const std::vector<Float> before(tower.features(), tower.features() + 16);
  const ParamTensor* fc1 =
      tower.layout().Find("vision_tower.vision_model.encoder.layers.1.mlp.fc1.weight");
  const ParamTensor* post = tower.layout().Find("vision_tower.vision_model.post_layernorm.bias");
  ASSERT_TRUE(fc1 && post);
  tower.params()[fc1->offset] += 3;
  tower.params()[post->offset] += 3;
  tower.Forward(pixels.data(), 1);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(tower.features()[i], before[i]) << i;
}

TEST(VisionTowerTest, HandCaseMatchesNumpyReferenceDouble) { CheckHandCase<double>(1e-12); }
TEST(VisionTowerTest, HandCaseMatchesNumpyReferenceFloat) { CheckHandCase<float>(2e-6); }

// clip-tiny with random weights larger than the init, so every path carries signal.
template <typename Float>
void RandomWeights(VisionTower<Float>& tower, uint64_t seed) {
  Vec w = RandomVector(tower.layout().total(), seed, 0.3);
  for (size_t i = 0; i < w.size(); ++i) tower.params()[i] = static_cast<Float>(w[i]);
}

TEST(VisionTowerTest, FiniteDifferences) {
  const VisionConfig v = *VisionPreset("clip-tiny");  // 28 px, patch 14, 3 layers, 2 computed
  const int64_t n = 2, np = v.num_patches(), C = v.hidden;
  const int64_t pixel_count = n * v.channels * v.image_size * v.image_size;
  VisionTower<double> tower(v, n);
  RandomWeights(tower, 1);
  Vec pixels = RandomVector(pixel_count, 2), dfeatures = RandomVector(n * np * C, 3);
  tower.Forward(pixels.data(), n);
  Vec dpixels(pixel_count, 0.0);
  tower.Backward(dfeatures.data(), n, dpixels.data());
  const Vec analytic = tower.grads();
  auto f = [&] {
    tower.Forward(pixels.data(), n);
    return Dot(Vec(tower.features(), tower.features() + n * np * C), dfeatures);
  };
  for (const ParamTensor& t : tower.layout().tensors()) {
    Vec x(tower.params().begin() + t.offset, tower.params().begin() + t.offset + t.numel);
    Vec g(analytic.begin() + t.offset, analytic.begin() + t.offset + t.numel);
    if (t.frozen) {  // never computed: no gradient
      EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](double d) { return d == 0; })) << t.name;
      continue;
    }
    if (t.name.ends_with("k_proj.bias")) {  // softmax ignores it (FloatMatchesDouble says why)
      EXPECT_TRUE(std::all_of(g.begin(), g.end(), [](double d) { return std::abs(d) < 1e-12; }))
          << t.name;
      continue;
    }
    auto ft = [&] {
      std::copy(x.begin(), x.end(), tower.params().begin() + t.offset);
      return f();
    };
    ExpectGradientMatches(x, g, ft, t.name.c_str(), 1e-6, 25);
    std::copy(x.begin(), x.end(), tower.params().begin() + t.offset);
  }
  ExpectGradientMatches(pixels, dpixels, f, "pixel_values", 1e-6, 60);
}

TEST(VisionTowerTest, FloatMatchesDouble) {
  const VisionConfig v = *VisionPreset("clip-tiny");
  const int64_t n = 3, np = v.num_patches(), C = v.hidden;
  const int64_t pixel_count = n * v.channels * v.image_size * v.image_size;
  VisionTower<double> d(v, 4);  // more room than used
  VisionTower<float> f(v, 4);
  RandomWeights(d, 5);
  RandomWeights(f, 5);
  Vec pixels = RandomVector(pixel_count, 6), dfeatures = RandomVector(n * np * C, 7);
  std::vector<float> pixels_f(pixels.begin(), pixels.end());
  std::vector<float> dfeatures_f(dfeatures.begin(), dfeatures.end());
  d.Forward(pixels.data(), n);
  f.Forward(pixels_f.data(), n);
  double worst = 0;
  for (int64_t i = 0; i < n * np * C; ++i)
    worst = std::max(worst, std::abs(f.features()[i] - d.features()[i]));
  EXPECT_LT(worst, 2e-5);
  Vec dpixels(pixel_count, 0.0);
  std::vector<float> dpixels_f(pixel_count, 0.0f);
  d.Backward(dfeatures.data(), n, dpixels.data());
  f.Backward(dfeatures_f.data(), n, dpixels_f.data());
  for (const ParamTensor& t : d.layout().tensors()) {
    double scale = 0, err = 0;
    for (int64_t i = t.offset; i < t.offset + t.numel; ++i) {
      scale = std::max(scale, std::abs(d.grads()[i]));
      err = std::max(err, std::abs(f.grads()[i] - d.grads()[i]));
    }
    if (t.frozen) {
      EXPECT_EQ(scale, 0.0) << t.name;
      EXPECT_EQ(err, 0.0) << t.name;
    } else if (t.name.ends_with("k_proj.bias")) {
      // A key bias adds q·b to every score of a query's row, which softmax ignores: its
      // gradient is 0 but for rounding (1e-19 in double, 1e-6 in float).
      EXPECT_LT(scale, 1e-12) << t.name;
      EXPECT_LT(err, 1e-5) << t.name;
    } else {
      EXPECT_GT(scale, 0.0) << t.name;
      EXPECT_LE(err, 1e-4 * scale) << t.name;
    }
  }
  double scale = 0, err = 0;
  for (int64_t i = 0; i < pixel_count; ++i) {
    scale = std::max(scale, std::abs(dpixels[i]));
    err = std::max(err, std::abs(dpixels_f[i] - dpixels[i]));
  }
  EXPECT_LE(err, 1e-4 * scale);
}

TEST(VisionTowerTest, BackwardAccumulatesAndNeedsNoUpstream) {
  const VisionConfig v = *VisionPreset("clip-tiny");
  const int64_t np = v.num_patches(), C = v.hidden;
  VisionTower<double> tower(v, 1);
  RandomWeights(tower, 8);
  Vec pixels = RandomVector(v.channels * v.image_size * v.image_size, 9);
  Vec dfeatures = RandomVector(np * C, 10);
  tower.Forward(pixels.data(), 1);
  tower.Backward(dfeatures.data(), 1);  // no pixel gradient wanted
  const Vec once = tower.grads();
  tower.Backward(dfeatures.data(), 1);
  for (size_t i = 0; i < once.size(); ++i) ASSERT_NEAR(tower.grads()[i], 2 * once[i], 1e-12) << i;
  EXPECT_GT(tower.bytes(), static_cast<int64_t>(2 * once.size() * sizeof(double)));
}

// feature_layer 0 is hidden_states[0], the embeddings after pre_layrnorm: no layer runs.
TEST(VisionTowerTest, FeatureLayerZeroIsThePreLayerNormEmbeddings) {
  VisionConfig v = *VisionPreset("clip-tiny");
  v.feature_layer = 0;
  VisionTower<double> tower(v, 1);
  RandomWeights(tower, 11);
  Vec pixels = RandomVector(v.channels * v.image_size * v.image_size, 12);
  tower.Forward(pixels.data(), 1);
  // the class token's row of hidden_states[0]: LayerNorm(class + position 0), by hand
  const ParamLayout& layout = tower.layout();
  auto at = [&](const char* name) {
    return tower.params().data() + layout.Find(std::string(kVisionTowerPrefix) + name)->offset;
  };
  const int64_t C = v.hidden;
  Vec row(C);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < C; ++i) {
    row[i] = at("embeddings.class_embedding")[i] + at("embeddings.position_embedding.weight")[i];
    mean += row[i] / C;
  }
  for (int64_t i = 0; i < C; ++i) var += (row[i] - mean) * (row[i] - mean) / C;
  for (int64_t i = 0; i < C; ++i) {
    const double expected = (row[i] - mean) / std::sqrt(var + 1e-5) * at("pre_layrnorm.weight")[i] +
                            at("pre_layrnorm.bias")[i];
    EXPECT_NEAR(tower.hidden_state(0)[i], expected, 1e-12) << i;
  }
  // the features are hidden_states[0]'s patch rows
  for (int64_t i = 0; i < v.num_patches() * C; ++i)
    EXPECT_EQ(tower.features()[i], tower.hidden_state(0)[C + i]);
}

TEST(ProjectorTest, FiniteDifferencesAndFloatMatchesDouble) {
  const LlavaConfig l = *LlavaPreset("llava-tiny");  // 32 -> 64
  const int64_t rows = 5, Cv = l.vision.hidden, H = l.text.hidden;
  Projector<double> d(l, rows);
  Projector<float> f(l, rows);
  EXPECT_EQ(d.in_features(), Cv);
  EXPECT_EQ(d.out_features(), H);
  Vec w = RandomVector(d.layout().total(), 1, 0.3);
  std::copy(w.begin(), w.end(), d.params().begin());
  std::copy(w.begin(), w.end(), f.params().begin());
  Vec x = RandomVector(rows * Cv, 2), dout = RandomVector(rows * H, 3);
  d.Forward(x.data(), rows);
  Vec dx(rows * Cv, 0.0);
  d.Backward(dout.data(), rows, dx.data());
  const Vec analytic = d.grads();
  auto fx = [&] {
    d.Forward(x.data(), rows);
    return Dot(Vec(d.output(), d.output() + rows * H), dout);
  };
  for (const ParamTensor& t : d.layout().tensors()) {
    Vec p(d.params().begin() + t.offset, d.params().begin() + t.offset + t.numel);
    Vec g(analytic.begin() + t.offset, analytic.begin() + t.offset + t.numel);
    auto ft = [&] {
      std::copy(p.begin(), p.end(), d.params().begin() + t.offset);
      return fx();
    };
    ExpectGradientMatches(p, g, ft, t.name.c_str(), 1e-6, 60);
    std::copy(p.begin(), p.end(), d.params().begin() + t.offset);
  }
  ExpectGradientMatches(x, dx, fx, "features", 1e-6, 60);

  std::vector<float> xf(x.begin(), x.end()), doutf(dout.begin(), dout.end());
  d.Forward(x.data(), rows);
  f.Forward(xf.data(), rows);
  for (int64_t i = 0; i < rows * H; ++i) EXPECT_NEAR(f.output()[i], d.output()[i], 1e-5) << i;
  std::vector<float> dxf(rows * Cv, 0.0f);
  f.Backward(doutf.data(), rows, dxf.data());
  for (size_t i = 0; i < analytic.size(); ++i)
    EXPECT_NEAR(f.grads()[i], analytic[i], 1e-4 * (1 + std::abs(analytic[i]))) << i;
  for (int64_t i = 0; i < rows * Cv; ++i) EXPECT_NEAR(dxf[i], dx[i], 1e-4 * (1 + std::abs(dx[i])));
  // no upstream: the parameters' gradients only
  f.Backward(doutf.data(), rows);
  for (size_t i = 0; i < analytic.size(); ++i)
    EXPECT_NEAR(f.grads()[i], 2 * analytic[i], 2e-4 * (1 + std::abs(analytic[i]))) << i;
}

}  // namespace
}  // namespace bm::train::cpu
