#include "trainer/model/llava_layout.h"

#include <fmt/format.h>

namespace bm::train {

ParamLayout VisionLayout(const VisionConfig& v, const std::string& prefix) {
  const int64_t C = v.hidden, M = v.mlp, P = v.patch;
  ParamLayout layout;
  layout.StartUnit("vision embeddings");
  layout.Add(prefix + "embeddings.class_embedding", {C}, InitKind::kNormal);
  layout.Add(prefix + "embeddings.patch_embedding.weight", {C, v.channels, P, P}, InitKind::kNormal)
      .weight_decay = true;
  layout.Add(prefix + "embeddings.position_embedding.weight", {v.positions(), C},
             InitKind::kNormal);
  layout.Add(prefix + "pre_layrnorm.weight", {C}, InitKind::kOnes);
  layout.Add(prefix + "pre_layrnorm.bias", {C}, InitKind::kZeros);
  for (int64_t l = 0; l < v.layers; ++l) {
    layout.StartUnit(fmt::format("vision layer {}", l));
    const std::string p = fmt::format("{}encoder.layers.{}.", prefix, l);
    const size_t first = layout.tensors().size();
    layout.Add(p + "layer_norm1.weight", {C}, InitKind::kOnes);
    layout.Add(p + "layer_norm1.bias", {C}, InitKind::kZeros);
    for (const char* w : {"q", "k", "v"})
      layout.Add(fmt::format("{}self_attn.{}_proj.weight", p, w), {C, C}, InitKind::kNormal);
    for (const char* w : {"q", "k", "v"})
      layout.Add(fmt::format("{}self_attn.{}_proj.bias", p, w), {C}, InitKind::kZeros);
    layout.Add(p + "self_attn.out_proj.weight", {C, C}, InitKind::kNormalResidual);
    layout.Add(p + "self_attn.out_proj.bias", {C}, InitKind::kZeros);
    layout.Add(p + "layer_norm2.weight", {C}, InitKind::kOnes);
    layout.Add(p + "layer_norm2.bias", {C}, InitKind::kZeros);
    layout.Add(p + "mlp.fc1.weight", {M, C}, InitKind::kNormal);
    layout.Add(p + "mlp.fc1.bias", {M}, InitKind::kZeros);
    layout.Add(p + "mlp.fc2.weight", {C, M}, InitKind::kNormalResidual);
    layout.Add(p + "mlp.fc2.bias", {C}, InitKind::kZeros);
    if (l >= v.computed_layers()) layout.MarkFrozen(first);
  }
  layout.StartUnit("vision final");
  const size_t first = layout.tensors().size();
  layout.Add(prefix + "post_layernorm.weight", {C}, InitKind::kOnes);
  layout.Add(prefix + "post_layernorm.bias", {C}, InitKind::kZeros);
  layout.MarkFrozen(first);
  return layout;
}

ParamLayout ProjectorLayout(const LlavaConfig& c, const std::string& prefix) {
  const int64_t Cv = c.vision.hidden, H = c.text.hidden;
  ParamLayout layout;
  layout.StartUnit("projector");
  layout.Add(prefix + "linear_1.weight", {H, Cv}, InitKind::kNormal);
  layout.Add(prefix + "linear_1.bias", {H}, InitKind::kZeros);
  layout.Add(prefix + "linear_2.weight", {H, H}, InitKind::kNormal);
  layout.Add(prefix + "linear_2.bias", {H}, InitKind::kZeros);
  return layout;
}

LlavaLayout::LlavaLayout(const LlavaConfig& c)
    : vision_(VisionLayout(c.vision)), projector_(ProjectorLayout(c)), text_(c.text) {
  whole_.Append(vision_, "");
  whole_.Append(projector_, "");
  whole_.Append(text_, kLanguageModelPrefix, "language model ");
}

std::vector<float> InitLlavaParameters(const LlavaConfig& config, const LlavaLayout& layout,
                                       uint64_t seed) {
  return InitParameters(config.text, layout.whole(), seed);
}

}  // namespace bm::train
