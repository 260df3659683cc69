// clip_vision_dump: the CPU vision tower's output for tests/gpu/clip_vision_check.py.
//
//   clip_vision_dump OUT_DIR [PRESET [IMAGES [SEED]]]   (defaults: clip-vit-l-14-336 2 1)
//
// Writes, atomically, into OUT_DIR:
//   tower.safetensors    the tower's random weights, named as a transformers CLIPVisionModel's
//                        state dict ("vision_model.embeddings.class_embedding", ...), the
//                        projector's as "multi_modal_projector.linear_1.weight", ...
//                        (projector to hidden 5120, llava-1.5-13b's)
//   outputs.safetensors  pixel_values [n, 3, S, S], features [n, num_patches, C] (what
//                        VisionTower<float> computes: hidden_states[feature_layer] without
//                        the class token), projected [n * num_patches, 5120] (Projector<float>)
//   config.json          the VisionConfig (trainer/model/vision_config.h's ToJson)
// Exit 0, or 1 with a message on stderr.
#include <cstdio>
#include <fstream>
#include <string>

#include "trainer/checkpoint/safetensors.h"
#include "trainer/cpu/projector.h"
#include "trainer/cpu/vision_tower.h"
#include "trainer/model/llava_layout.h"
#include "trainer/rng.h"

namespace bm::train {
namespace {

// Weights of a trained network's scale: norms near 1, small biases, matrices N(0, 0.04).
void RandomWeights(const ParamLayout& layout, uint64_t seed, std::vector<float>& out) {
  for (size_t t = 0; t < layout.tensors().size(); ++t) {
    const ParamTensor& p = layout.tensors()[t];
    for (int64_t j = 0; j < p.numel; ++j) {
      const double z = NormalAt(seed, t, static_cast<uint64_t>(j));
      const double v = p.init == InitKind::kOnes    ? 1.0 + 0.1 * z
                       : p.init == InitKind::kZeros ? 0.05 * z
                                                    : 0.04 * z;
      out[p.offset + j] = static_cast<float>(v);
    }
  }
}

std::vector<TensorSource> Named(const ParamLayout& layout, const std::vector<float>& values,
                                const std::string& from, const std::string& to) {
  std::vector<TensorSource> out;
  for (const ParamTensor& p : layout.tensors())
    out.push_back({to + p.name.substr(from.size()), p.shape, values.data() + p.offset, {}});
  return out;
}

int Run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: clip_vision_dump OUT_DIR [PRESET [IMAGES [SEED]]]\n");
    return 1;
  }
  const std::string dir = argv[1];
  const std::string preset = argc > 2 ? argv[2] : "clip-vit-l-14-336";
  const int64_t n = argc > 3 ? std::stoll(argv[3]) : 2;
  const uint64_t seed = argc > 4 ? std::stoull(argv[4]) : 1;
  Result<VisionConfig> v = VisionPreset(preset);
  if (!v.ok()) {
    std::fprintf(stderr, "clip_vision_dump: %s\n", v.status().message().c_str());
    return 1;
  }
  LlavaConfig llava = *LlavaPreset("llava-1.5-13b");
  llava.vision = *v;
  cpu::VisionTower<float> tower(*v, n);
  cpu::Projector<float> projector(llava, n * v->num_patches());
  RandomWeights(tower.layout(), seed, tower.params());
  RandomWeights(projector.layout(), seed + 1, projector.params());
  const int64_t pixel_count = n * v->channels * v->image_size * v->image_size;
  std::vector<float> pixels(pixel_count);
  for (int64_t i = 0; i < pixel_count; ++i)  // normalised pixel values are of order 1
    pixels[i] = static_cast<float>(NormalAt(seed, 1000, static_cast<uint64_t>(i)));
  tower.Forward(pixels.data(), n);
  projector.Forward(tower.features(), n * v->num_patches());

  std::vector<TensorSource> weights =
      Named(tower.layout(), tower.params(), kVisionTowerPrefix, "vision_model.");
  for (TensorSource& t : Named(projector.layout(), projector.params(), "", ""))
    weights.push_back(std::move(t));
  const int64_t np = v->num_patches(), C = v->hidden, H = llava.text.hidden;
  std::vector<TensorSource> outputs = {
      {"pixel_values", {n, v->channels, v->image_size, v->image_size}, pixels.data(), {}},
      {"features", {n, np, C}, tower.features(), {}},
      {"projected", {n * np, H}, projector.output(), {}}};
  for (const auto& [file, tensors] :
       {std::pair{"tower.safetensors", &weights}, std::pair{"outputs.safetensors", &outputs}}) {
    Status s = WriteSafetensors(dir + "/" + file, *tensors, {{"preset", preset}});
    if (!s.ok()) {
      std::fprintf(stderr, "clip_vision_dump: %s\n", s.message().c_str());
      return 1;
    }
  }
  std::ofstream(dir + "/config.json") << ToJson(*v).dump(2) << "\n";
  std::printf("clip_vision_dump: %s, %lld images, seed %llu -> %s\n", preset.c_str(),
              static_cast<long long>(n), static_cast<unsigned long long>(seed), dir.c_str());
  return 0;
}

}  // namespace
}  // namespace bm::train

int main(int argc, char** argv) { return bm::train::Run(argc, argv); }
