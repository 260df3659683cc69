#include "trainer/model/vision_config.h"

#include <map>

namespace bm::train {
namespace {

VisionConfig Clip(std::string name, int64_t image, int64_t patch, int64_t hidden, int64_t layers,
                  int64_t heads, int64_t mlp) {
  VisionConfig v;
  v.preset = std::move(name);
  v.image_size = image;
  v.patch = patch;
  v.hidden = hidden;
  v.layers = layers;
  v.heads = heads;
  v.mlp = mlp;
  return v;
}

const std::map<std::string, VisionConfig, std::less<>>& VisionPresets() {
  static const auto* presets = [] {
    auto* m = new std::map<std::string, VisionConfig, std::less<>>;
    auto add = [&](VisionConfig c) { (*m)[c.preset] = c; };
    // openai/clip-vit-large-patch14(-336) config.json vision_config: hidden_size
    // 1024, intermediate_size 4096, num_hidden_layers 24, num_attention_heads 16,
    // patch_size 14, image_size 336 (224), layer_norm_eps 1e-5, hidden_act
    // quick_gelu; LLaVA-1.5's mm_vision_select_layer -2.
    add(Clip("clip-vit-l-14-336", 336, 14, 1024, 24, 16, 4096));
    add(Clip("clip-vit-l-14", 224, 14, 1024, 24, 16, 4096));
    add(Clip("clip-tiny", 28, 14, 32, 3, 4, 64));
    return m;
  }();
  return *presets;
}

LlavaConfig Llava(std::string name, const char* vision, const char* text, int64_t image_token) {
  LlavaConfig c;
  c.preset = std::move(name);
  c.vision = VisionPresets().find(vision)->second;
  c.text = *Preset(text);
  c.image_token_id = image_token;
  return c;
}

const std::map<std::string, LlavaConfig, std::less<>>& LlavaPresets() {
  static const auto* presets = [] {
    auto* m = new std::map<std::string, LlavaConfig, std::less<>>;
    auto add = [&](LlavaConfig c) { (*m)[c.preset] = c; };
    // liuhaotian/llava-v1.5-13b and -7b: CLIP ViT-L/14-336 + Vicuna v1.5
    // (LLaMA-2 geometry, vocabulary 32000), mm_projector_type mlp2x_gelu.
    add(Llava("llava-1.5-13b", "clip-vit-l-14-336", "llama2-13b", 32000));
    add(Llava("llava-1.5-7b", "clip-vit-l-14-336", "llama2-7b", 32000));
    add(Llava("llava-tiny", "clip-tiny", "llama-tiny", 512));
    return m;
  }();
  return *presets;
}

template <typename Map>
std::string Names(const Map& map) {
  std::string names;
  for (const auto& [n, c] : map) names += (names.empty() ? "" : ", ") + n;
  return names;
}

Status GetInt(const nlohmann::json& value, std::string_view key, int64_t* out) {
  if (!value.is_number_integer())
    return Errorf(ErrorCode::kInvalidArgument, "vision.{} must be an integer", key);
  *out = value.get<int64_t>();
  return Status::Ok();
}

}  // namespace

Result<VisionConfig> VisionPreset(std::string_view name) {
  auto it = VisionPresets().find(name);
  if (it == VisionPresets().end())
    return Errorf(ErrorCode::kInvalidArgument, "unknown vision preset '{}' (known: {})", name,
                  Names(VisionPresets()));
  return it->second;
}

std::vector<std::string> VisionPresetNames() {
  std::vector<std::string> names;
  for (const auto& [n, c] : VisionPresets()) names.push_back(n);
  return names;
}

Result<VisionConfig> ApplyVisionOverrides(VisionConfig c, const nlohmann::json& overrides) {
  if (overrides.is_null()) return c;
  if (!overrides.is_object())
    return Status(ErrorCode::kInvalidArgument, "vision overrides must be a table");
  for (const auto& [key, value] : overrides.items()) {
    if (key == "image_size") {
      BM_TRY(GetInt(value, key, &c.image_size));
    } else if (key == "patch") {
      BM_TRY(GetInt(value, key, &c.patch));
    } else if (key == "channels") {
      BM_TRY(GetInt(value, key, &c.channels));
    } else if (key == "hidden") {
      BM_TRY(GetInt(value, key, &c.hidden));
    } else if (key == "layers") {
      BM_TRY(GetInt(value, key, &c.layers));
    } else if (key == "heads") {
      BM_TRY(GetInt(value, key, &c.heads));
    } else if (key == "mlp") {
      BM_TRY(GetInt(value, key, &c.mlp));
    } else if (key == "feature_layer") {
      BM_TRY(GetInt(value, key, &c.feature_layer));
    } else if (key == "norm_eps") {
      if (!value.is_number())
        return Status(ErrorCode::kInvalidArgument, "vision.norm_eps must be a number");
      c.norm_eps = value.get<double>();
    } else {
      return Errorf(ErrorCode::kInvalidArgument,
                    "unknown vision field '{}' (image_size, patch, channels, hidden, layers, "
                    "heads, mlp, norm_eps, feature_layer)",
                    key);
    }
  }
  return c;
}

Status Validate(const VisionConfig& c) {
  auto positive = [](std::string_view name, int64_t v) -> Status {
    if (v <= 0)
      return Errorf(ErrorCode::kInvalidArgument, "vision.{} must be positive (got {})", name, v);
    return Status::Ok();
  };
  BM_TRY(positive("image_size", c.image_size));
  BM_TRY(positive("patch", c.patch));
  BM_TRY(positive("channels", c.channels));
  BM_TRY(positive("hidden", c.hidden));
  BM_TRY(positive("layers", c.layers));
  BM_TRY(positive("heads", c.heads));
  BM_TRY(positive("mlp", c.mlp));
  if (c.image_size % c.patch != 0)
    return Errorf(ErrorCode::kInvalidArgument,
                  "vision.patch ({}) must divide vision.image_size ({})", c.patch, c.image_size);
  if (c.hidden % c.heads != 0)
    return Errorf(ErrorCode::kInvalidArgument, "vision.heads ({}) must divide vision.hidden ({})",
                  c.heads, c.hidden);
  if (c.feature_layer < -(c.layers + 1) || c.feature_layer > c.layers)
    return Errorf(ErrorCode::kInvalidArgument,
                  "vision.feature_layer ({}) must lie in [{}, {}] (a hidden_states index of a "
                  "{}-layer tower)",
                  c.feature_layer, -(c.layers + 1), c.layers, c.layers);
  if (!(c.norm_eps > 0))
    return Status(ErrorCode::kInvalidArgument, "vision.norm_eps must be positive");
  return Status::Ok();
}

namespace {
int64_t VisionLayerParameters(const VisionConfig& c) {
  const int64_t C = c.hidden, M = c.mlp;
  return 4 * (C * C + C)  // q, k, v, out projections with biases
         + 2 * 2 * C      // layer_norm1, layer_norm2
         + (C * M + M)    // fc1
         + (M * C + C);   // fc2
}
int64_t VisionEmbeddingParameters(const VisionConfig& c) {
  return c.hidden                    // class_embedding
         + c.hidden * c.patch_dim()  // patch_embedding (no bias)
         + c.positions() * c.hidden  // position_embedding
         + 2 * c.hidden;             // pre_layrnorm
}
}  // namespace

int64_t ParameterCount(const VisionConfig& c) {
  return VisionEmbeddingParameters(c) + c.layers * VisionLayerParameters(c) +
         2 * c.hidden;  // post_layernorm
}

int64_t UsedParameterCount(const VisionConfig& c) {
  return VisionEmbeddingParameters(c) + c.computed_layers() * VisionLayerParameters(c);
}

Result<LlavaConfig> LlavaPreset(std::string_view name) {
  auto it = LlavaPresets().find(name);
  if (it == LlavaPresets().end())
    return Errorf(ErrorCode::kInvalidArgument, "unknown LLaVA preset '{}' (known: {})", name,
                  Names(LlavaPresets()));
  return it->second;
}

std::vector<std::string> LlavaPresetNames() {
  std::vector<std::string> names;
  for (const auto& [n, c] : LlavaPresets()) names.push_back(n);
  return names;
}

Status Validate(const LlavaConfig& c) {
  BM_TRY(Validate(c.vision));
  BM_TRY(Validate(c.text));
  if (c.text.family != Family::kLlama)
    return Errorf(ErrorCode::kUnsupported,
                  "LLaVA's language model must be of the llama family (got {})",
                  FamilyName(c.text.family));
  if (c.projector != kProjectorMlp2xGelu)
    return Errorf(ErrorCode::kUnsupported, "unknown LLaVA projector '{}' (known: {})", c.projector,
                  kProjectorMlp2xGelu);
  if (c.image_token_id < 0 || c.image_token_id >= (int64_t{1} << 31) - 1)
    return Errorf(ErrorCode::kInvalidArgument,
                  "image_token_id ({}) must be a non-negative int32 token id", c.image_token_id);
  return Status::Ok();
}

int64_t ProjectorParameterCount(const LlavaConfig& c) {
  const int64_t Cv = c.vision.hidden, H = c.text.hidden;
  return Cv * H + H + H * H + H;
}

int64_t ParameterCount(const LlavaConfig& c) {
  return ParameterCount(c.vision) + ProjectorParameterCount(c) + ParameterCount(c.text);
}

FlopsPerImage ForwardFlopsPerImage(const LlavaConfig& c) {
  const VisionConfig& v = c.vision;
  const double C = static_cast<double>(v.hidden), M = static_cast<double>(v.mlp);
  const double T = static_cast<double>(v.positions());
  const double np = static_cast<double>(v.num_patches());
  const double H = static_cast<double>(c.text.hidden);
  FlopsPerImage f;
  const double patch = 2.0 * np * static_cast<double>(v.patch_dim()) * C;
  const double per_layer = 2.0 * T * (4.0 * C * C + 2.0 * C * M)  // projections, fc1, fc2
                           + 4.0 * T * T * C;                     // q k^T and att v
  f.vision = patch + static_cast<double>(v.computed_layers()) * per_layer;
  f.projector = 2.0 * np * (C * H + H * H);
  return f;
}

nlohmann::json ToJson(const VisionConfig& c) {
  return {{"preset", c.preset},     {"image_size", c.image_size},
          {"patch", c.patch},       {"channels", c.channels},
          {"hidden", c.hidden},     {"layers", c.layers},
          {"heads", c.heads},       {"mlp", c.mlp},
          {"norm_eps", c.norm_eps}, {"feature_layer", c.feature_layer}};
}

Result<VisionConfig> VisionConfigFromJson(const nlohmann::json& json) {
  if (!json.is_object())
    return Status(ErrorCode::kInvalidArgument, "vision config must be an object");
  nlohmann::json rest = json;
  std::string preset = json.value("preset", "");
  rest.erase("preset");
  BM_ASSIGN_OR_RETURN(VisionConfig c, ApplyVisionOverrides(VisionConfig{}, rest));
  c.preset = preset;
  BM_TRY(Validate(c));
  return c;
}

nlohmann::json ToJson(const LlavaConfig& c) {
  return {{"preset", c.preset},
          {"vision", ToJson(c.vision)},
          {"text", ToJson(c.text)},
          {"projector", c.projector},
          {"image_token_id", c.image_token_id}};
}

Result<LlavaConfig> LlavaConfigFromJson(const nlohmann::json& json) {
  if (!json.is_object())
    return Status(ErrorCode::kInvalidArgument, "LLaVA config must be an object");
  for (const char* key : {"vision", "text", "image_token_id"})
    if (!json.contains(key))
      return Errorf(ErrorCode::kInvalidArgument, "LLaVA config lacks '{}'", key);
  for (const auto& [key, value] : json.items())
    if (key != "preset" && key != "vision" && key != "text" && key != "projector" &&
        key != "image_token_id")
      return Errorf(ErrorCode::kInvalidArgument,
                    "unknown LLaVA config field '{}' (preset, vision, text, projector, "
                    "image_token_id)",
                    key);
  LlavaConfig c;
  c.preset = json.value("preset", "");
  BM_ASSIGN_OR_RETURN(c.vision, VisionConfigFromJson(json["vision"]));
  BM_ASSIGN_OR_RETURN(c.text, ModelConfigFromJson(json["text"]));
  if (json.contains("projector")) {
    if (!json["projector"].is_string())
      return Status(ErrorCode::kInvalidArgument, "LLaVA config's projector must be a string");
    c.projector = json["projector"].get<std::string>();
  }
  if (!json["image_token_id"].is_number_integer())
    return Status(ErrorCode::kInvalidArgument, "LLaVA config's image_token_id must be an integer");
  c.image_token_id = json["image_token_id"].get<int64_t>();
  BM_TRY(Validate(c));
  return c;
}

}  // namespace bm::train
