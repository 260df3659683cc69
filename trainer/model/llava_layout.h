// The parameter layout of LLaVA-1.5: the vision tower, the projector and the
// language model in one flat buffer, with Hugging Face's llava-hf names
// (llava-hf/llava-1.5-13b-hf), and each part's own layout for the classes
// that compute it (trainer/cpu/vision_tower.h, projector.h, model.h).
//
// Order, vision tower (names prefixed "vision_tower.vision_model."; shapes as
// the trainer uses them, a linear weight [out, in]):
//   unit "vision embeddings":
//     embeddings.class_embedding                [C]
//     embeddings.patch_embedding.weight         [C, 3, P, P]   (conv, no bias)
//     embeddings.position_embedding.weight      [positions, C]
//     pre_layrnorm.weight, pre_layrnorm.bias    [C]            (sic, CLIP's name)
//   unit "vision layer i", prefix encoder.layers.i.:
//     layer_norm1.weight, layer_norm1.bias      [C]
//     self_attn.q_proj.weight                   [C, C]  } contiguous: one fused
//     self_attn.k_proj.weight                   [C, C]  } q|k|v weight [3C, C]
//     self_attn.v_proj.weight                   [C, C]  }
//     self_attn.q_proj.bias                     [C]     } contiguous: one fused
//     self_attn.k_proj.bias                     [C]     } q|k|v bias [3C]
//     self_attn.v_proj.bias                     [C]     }
//     self_attn.out_proj.weight, .bias          [C, C], [C]
//     layer_norm2.weight, layer_norm2.bias      [C]
//     mlp.fc1.weight, mlp.fc1.bias              [M, C], [M]
//     mlp.fc2.weight, mlp.fc2.bias              [C, M], [C]
//   unit "vision final":
//     post_layernorm.weight, post_layernorm.bias [C]
// Layers i >= computed_layers() and post_layernorm are `frozen` (never
// computed; no weight decay, so AdamW leaves them as loaded).
//
// Projector (prefix "multi_modal_projector."), unit "projector":
//   linear_1.weight [H, C], linear_1.bias [H], linear_2.weight [H, H], linear_2.bias [H]
//
// Language model: ParamLayout(text) with every name prefixed "language_model."
// (language_model.model.embed_tokens.weight, ..., language_model.lm_head.weight)
// and its units' names prefixed "language model ".
//
// Whole model = vision tower, then projector, then language model. Values only.
#pragma once

#include <string>
#include <vector>

#include "trainer/model/layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train {

inline constexpr const char* kVisionTowerPrefix = "vision_tower.vision_model.";
inline constexpr const char* kProjectorPrefix = "multi_modal_projector.";
inline constexpr const char* kLanguageModelPrefix = "language_model.";

// The tower's layout with `prefix` before every name: "vision_model." gives a
// transformers CLIPVisionModel checkpoint's names.
ParamLayout VisionLayout(const VisionConfig& config,
                         const std::string& prefix = kVisionTowerPrefix);
ParamLayout ProjectorLayout(const LlavaConfig& config,
                            const std::string& prefix = kProjectorPrefix);

class LlavaLayout {
 public:
  explicit LlavaLayout(const LlavaConfig& config);

  // Every tensor with its llava-hf name and its offset in the whole buffer.
  const ParamLayout& whole() const { return whole_; }
  // Each part's layout, offsets relative to the part's start in the whole
  // buffer; vision() and projector() carry the llava-hf names, text() the
  // LLaMA names without the prefix (what Model<Float> takes).
  const ParamLayout& vision() const { return vision_; }
  const ParamLayout& projector() const { return projector_; }
  const ParamLayout& text() const { return text_; }
  int64_t vision_offset() const { return 0; }
  int64_t projector_offset() const { return vision_.total(); }
  int64_t text_offset() const { return vision_.total() + projector_.total(); }
  int64_t total() const { return whole_.total(); }  // == ParameterCount(config)

 private:
  ParamLayout vision_, projector_, text_, whole_;
};

// Initial weights: InitParameters(config.text, layout.whole(), seed) (value j
// of whole-layout tensor t from NormalAt(seed, kStreamInit + t, j); the
// tower's residual projections scaled by the text model's depth as the LM's).
// Pretraining loads CLIP's and the LM's weights instead.
std::vector<float> InitLlavaParameters(const LlavaConfig& config, const LlavaLayout& layout,
                                       uint64_t seed);

}  // namespace bm::train
