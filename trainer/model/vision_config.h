// VisionConfig and LlavaConfig: the geometry of LLaVA-1.5's vision tower
// (a CLIP ViT, Hugging Face CLIPVisionModel), of its projector, and of the
// whole model (vision tower → projector → LLaMA language model), with presets,
// exact parameter counts and FLOPs per image. Values only; thread-safe.
//
// The vision tower, as LLaVA-1.5 runs it (openai/clip-vit-large-patch14-336):
//   patch embedding (a P×P stride-P convolution without bias, as a matmul),
//   a class token, learned positions (num_patches + 1), pre_layrnorm, then
//   `layers` pre-LN encoder layers (LayerNorm → attention with q/k/v/out
//   biases, no RoPE, non-causal → residual; LayerNorm → fc1 → quick-GELU →
//   fc2 → residual). LLaVA takes hidden_states[feature_layer] (transformers'
//   output_hidden_states: index 0 is the embeddings after pre_layrnorm, index
//   k the output of encoder layer k-1; negative indices count from the end,
//   -1 = the last layer), and its patch tokens only (the class token dropped):
//   [num_patches, hidden] per image. post_layernorm and the layers after the
//   feature layer are part of the checkpoint but never computed.
//
// The projector "mlp2x_gelu": Linear(vision.hidden → text.hidden), GELU (erf),
// Linear(text.hidden → text.hidden), both with biases.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"

namespace bm::train {

struct VisionConfig {
  std::string preset;          // the preset it started from ("" = none)
  int64_t image_size = 336;    // S: pixel_values are [3, S, S]
  int64_t patch = 14;          // P
  int64_t channels = 3;        // input channels (RGB)
  int64_t hidden = 1024;       // C_v
  int64_t layers = 24;         // encoder layers in the checkpoint
  int64_t heads = 16;          // NH
  int64_t mlp = 4096;          // fc1's width
  double norm_eps = 1e-5;      // every LayerNorm's
  int64_t feature_layer = -2;  // hidden_states index (LLaVA's mm_vision_select_layer)

  int64_t grid() const { return image_size / patch; }      // patches per side (24)
  int64_t num_patches() const { return grid() * grid(); }  // 576
  int64_t positions() const { return num_patches() + 1; }  // + the class token (577)
  int64_t head_dim() const { return hidden / heads; }
  int64_t patch_dim() const { return channels * patch * patch; }  // a patch flattened (588)
  // The hidden_states index feature_layer names, in [0, layers].
  int64_t feature_index() const {
    return feature_layer < 0 ? layers + 1 + feature_layer : feature_layer;
  }
  // Encoder layers run to reach it (0..computed_layers()-1): 23 for ViT-L and -2.
  int64_t computed_layers() const { return feature_index(); }

  bool operator==(const VisionConfig&) const = default;
};

// "clip-vit-l-14-336" (LLaVA-1.5's tower), "clip-vit-l-14" (224 px), and
// "clip-tiny" (image 28, patch 14, hidden 32, 3 layers, 4 heads, mlp 64) for tests.
Result<VisionConfig> VisionPreset(std::string_view name);
std::vector<std::string> VisionPresetNames();

// Applies {"image_size": 224, ...}. Known keys: image_size, patch, channels,
// hidden, layers, heads, mlp, norm_eps, feature_layer. Unknown keys or wrong
// types are kInvalidArgument naming the key.
Result<VisionConfig> ApplyVisionOverrides(VisionConfig config, const nlohmann::json& overrides);

// Positive sizes, patch divides image_size, heads divide hidden, feature_layer
// within [-(layers + 1), layers]; messages name the fields ("vision.patch (15)
// must divide vision.image_size (336)").
Status Validate(const VisionConfig& config);

// Every parameter of the tower, the unused ones included (post_layernorm and
// the layers past the feature layer): 303,507,456 for clip-vit-l-14-336.
int64_t ParameterCount(const VisionConfig& config);
// The parameters the features depend on (embeddings, pre_layrnorm, the computed layers).
int64_t UsedParameterCount(const VisionConfig& config);

inline constexpr std::string_view kProjectorMlp2xGelu = "mlp2x_gelu";

struct LlavaConfig {
  std::string preset;
  VisionConfig vision;
  ModelConfig text;  // the language model (llama family)
  std::string projector{kProjectorMlp2xGelu};
  // The placeholder id of `<image>` in token streams (the dataset's
  // stats.image_token_id): the text vocabulary size, outside the text vocabulary.
  int64_t image_token_id = 0;

  int64_t image_tokens() const { return vision.num_patches(); }  // per image in the sequence
  bool operator==(const LlavaConfig&) const = default;
};

// "llava-1.5-13b" (clip-vit-l-14-336 + llama2-13b, image_token_id 32000),
// "llava-1.5-7b" (clip-vit-l-14-336 + llama2-7b) and "llava-tiny" (clip-tiny
// + llama-tiny, image_token_id 512).
Result<LlavaConfig> LlavaPreset(std::string_view name);
std::vector<std::string> LlavaPresetNames();

// Validate(vision), Validate(text), a llama-family text model, a known
// projector ("mlp2x_gelu"), 0 <= image_token_id < 2^31 - 1.
Status Validate(const LlavaConfig& config);

// Projector parameters: vision.hidden*H + H + H*H + H (H = text.hidden).
int64_t ProjectorParameterCount(const LlavaConfig& config);
// Vision tower (all of it) + projector + language model: 13,350,839,296 for
// llava-1.5-13b (liuhaotian/llava-v1.5-13b's vocabulary of 32000; llava-hf's
// pads it to 32064: 13,351,494,656).
int64_t ParameterCount(const LlavaConfig& config);

// Forward FLOPs of one image (multiply-adds counted as 2), exact for the
// matmuls: the patch embedding, the computed encoder layers (q/k/v/out, fc1,
// fc2 and the two attention products over `positions` tokens), and the
// projector over num_patches tokens. Norms, softmax and activations are not
// counted (as the LM's PaLM figure does not count them). A training step
// costs 3x the forward of what is trained (forward + input and weight
// gradients) and 2x of what only passes gradients through.
struct FlopsPerImage {
  double vision = 0;  // the tower up to the feature layer
  double projector = 0;
  double total() const { return vision + projector; }
};
FlopsPerImage ForwardFlopsPerImage(const LlavaConfig& config);

nlohmann::json ToJson(const VisionConfig& config);
Result<VisionConfig> VisionConfigFromJson(const nlohmann::json& json);
// {"preset", "vision": {...}, "text": {...}, "projector", "image_token_id"}
nlohmann::json ToJson(const LlavaConfig& config);
Result<LlavaConfig> LlavaConfigFromJson(const nlohmann::json& json);

}  // namespace bm::train
