#include "trainer/checkpoint/llava_checkpoint.h"

#include <algorithm>
#include <map>
#include <set>

#include "trainer/checkpoint/hf_config.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/llava_layout.h"

namespace bm::train {
namespace {

bool IsVocabTensor(const std::string& name) {
  return name.ends_with("embed_tokens.weight") || name.ends_with("lm_head.weight");
}

// A whole-layout tensor's shape in the file, its rows padded for the embedding and head.
std::vector<int64_t> SavedShape(const ParamTensor& t, const LlavaConfig& config) {
  std::vector<int64_t> shape = t.shape;
  if (IsVocabTensor(t.name)) shape[0] = SavedVocab(config);
  return shape;
}

// One layout tensor read from `file` under any of `names`. Checks the shape (the vocabulary
// tensors may have more rows) and reads the first t.numel values into out.
Status ReadTensor(const MappedSafetensors& file, const ParamTensor& t,
                  const std::vector<std::string>& names, std::span<float> out,
                  std::set<std::string>* used) {
  const MappedSafetensors::Tensor* n = nullptr;
  for (const std::string& name : names)
    if ((n = file.Find(name))) break;
  if (!n)
    return Errorf(ErrorCode::kInvalidArgument, "{}: tensor {} is missing (the model needs it)",
                  file.path(), names.front());
  const bool rows_may_grow = IsVocabTensor(t.name) && n->shape.size() == 2 &&
                             n->shape[1] == t.shape[1] && n->shape[0] >= t.shape[0];
  if (n->shape != t.shape && !rows_may_grow)
    return Errorf(ErrorCode::kInvalidArgument, "{}: tensor {} has shape {}, the model needs {}",
                  file.path(), n->name, nlohmann::json(n->shape).dump(),
                  nlohmann::json(t.shape).dump());
  file.Read(*n, 0, out.subspan(t.offset, t.numel));
  used->insert(n->name);
  return Status::Ok();
}

Status RefuseUnexpected(const MappedSafetensors& file, const std::set<std::string>& used,
                        const std::string& what) {
  for (const MappedSafetensors::Tensor& n : file.tensors())
    if (!used.count(n.name) && !n.name.ends_with("rotary_emb.inv_freq") &&
        !n.name.ends_with("position_ids"))
      return Errorf(ErrorCode::kInvalidArgument, "{}: unexpected tensor {} (not in {})",
                    file.path(), n.name, what);
  return Status::Ok();
}

template <typename T>
Status Get(const nlohmann::json& j, const char* key, const char* where, T* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return Errorf(ErrorCode::kInvalidArgument, "config.json: {}.{} is missing", where, key);
  try {
    *out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    return Errorf(ErrorCode::kInvalidArgument, "config.json: {}.{} has the wrong type", where, key);
  }
  return Status::Ok();
}

}  // namespace

int64_t SavedVocab(const LlavaConfig& config) {
  return std::max(config.text.vocab, config.image_token_id + 1);
}

nlohmann::ordered_json LlavaHuggingFaceConfig(const LlavaConfig& c, int64_t eot_id) {
  const VisionConfig& v = c.vision;
  nlohmann::ordered_json vision;
  vision["model_type"] = "clip_vision_model";
  vision["hidden_size"] = v.hidden;
  vision["intermediate_size"] = v.mlp;
  vision["num_hidden_layers"] = v.layers;
  vision["num_attention_heads"] = v.heads;
  vision["image_size"] = v.image_size;
  vision["patch_size"] = v.patch;
  vision["num_channels"] = v.channels;
  vision["layer_norm_eps"] = v.norm_eps;
  vision["hidden_act"] = "quick_gelu";
  vision["attention_dropout"] = 0.0;
  nlohmann::ordered_json text = HuggingFaceConfig(c.text, eot_id);
  text.erase("benchmake");
  text["vocab_size"] = SavedVocab(c);
  nlohmann::ordered_json j;
  j["architectures"] = {"LlavaForConditionalGeneration"};
  j["model_type"] = "llava";
  j["image_token_index"] = c.image_token_id;
  j["vision_feature_layer"] = v.feature_layer;
  j["vision_feature_select_strategy"] = "default";
  j["projector_hidden_act"] = "gelu";
  j["multimodal_projector_bias"] = true;
  j["image_seq_length"] = c.image_tokens();
  j["tie_word_embeddings"] = false;
  j["vision_config"] = vision;
  j["text_config"] = text;
  j["torch_dtype"] = "float32";
  j["benchmake"] = ToJson(c);
  return j;
}

Result<LlavaConfig> LlavaConfigFromHuggingFace(const nlohmann::json& j) {
  if (!j.is_object()) return Status(ErrorCode::kInvalidArgument, "config.json is not an object");
  if (j.contains("benchmake")) return LlavaConfigFromJson(j["benchmake"]);
  if (!j.contains("model_type") || j["model_type"] != "llava")
    return Errorf(ErrorCode::kInvalidArgument, "config.json has model_type {}, not llava",
                  j.contains("model_type") ? j["model_type"].dump() : "(none)");
  LlavaConfig c;
  BM_TRY(Get(j, "image_token_index", "", &c.image_token_id));
  std::string strategy, act;
  BM_TRY(Get(j, "vision_feature_select_strategy", "", &strategy));
  BM_TRY(Get(j, "projector_hidden_act", "", &act));
  if (strategy != "default" || act != "gelu")
    return Errorf(ErrorCode::kInvalidArgument,
                  "config.json: vision_feature_select_strategy '{}' and projector_hidden_act "
                  "'{}'; LLaVA-1.5 is 'default' and 'gelu'",
                  strategy, act);
  if (!j.contains("vision_config") || !j.contains("text_config"))
    return Status(ErrorCode::kInvalidArgument, "config.json: vision_config or text_config missing");
  const nlohmann::json& v = j["vision_config"];
  VisionConfig& vc = c.vision;
  vc.preset.clear();
  BM_TRY(Get(j, "vision_feature_layer", "", &vc.feature_layer));
  BM_TRY(Get(v, "hidden_size", "vision_config", &vc.hidden));
  BM_TRY(Get(v, "intermediate_size", "vision_config", &vc.mlp));
  BM_TRY(Get(v, "num_hidden_layers", "vision_config", &vc.layers));
  BM_TRY(Get(v, "num_attention_heads", "vision_config", &vc.heads));
  BM_TRY(Get(v, "image_size", "vision_config", &vc.image_size));
  BM_TRY(Get(v, "patch_size", "vision_config", &vc.patch));
  // CLIPVisionConfig's defaults for what llava-hf's configs leave out; of the wrong type, an error.
  vc.channels = 3;
  vc.norm_eps = 1e-5;
  std::string vision_act = "quick_gelu";
  if (v.contains("num_channels")) BM_TRY(Get(v, "num_channels", "vision_config", &vc.channels));
  if (v.contains("layer_norm_eps")) BM_TRY(Get(v, "layer_norm_eps", "vision_config", &vc.norm_eps));
  if (v.contains("hidden_act")) BM_TRY(Get(v, "hidden_act", "vision_config", &vision_act));
  if (vision_act != "quick_gelu")
    return Errorf(ErrorCode::kInvalidArgument,
                  "config.json: vision_config.hidden_act '{}'; "
                  "CLIP's is quick_gelu",
                  vision_act);
  nlohmann::json text = j["text_config"];
  text.erase("benchmake");
  Result<ModelConfig> t = ModelConfigFromHuggingFace(text);
  if (!t.ok()) return t.status().WithContext("text_config");
  c.text = *t;
  c.preset.clear();
  BM_TRY(Validate(c));
  return c;
}

Result<LlavaConfig> ReadLlavaCheckpointConfig(const std::string& dir) {
  BM_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(dir + "/" + kConfigFile));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Errorf(ErrorCode::kCorrupt, "{}/{} is not JSON", dir, kConfigFile);
  Result<LlavaConfig> c = LlavaConfigFromHuggingFace(j);
  if (!c.ok()) return c.status().WithContext(dir + "/" + kConfigFile);
  return c;
}

Status SaveLlavaModel(const std::string& dir, const LlavaConfig& config,
                      std::span<const float> params, int64_t eot_id) {
  const LlavaLayout layout(config);
  if (static_cast<int64_t>(params.size()) != layout.total())
    return Errorf(ErrorCode::kInternal, "SaveLlavaModel: {} floats for a model of {}",
                  params.size(), layout.total());
  std::vector<SafetensorsWriter::Tensor> tensors;
  for (const ParamTensor& t : layout.whole().tensors())
    tensors.push_back({t.name, SavedShape(t, config)});
  BM_ASSIGN_OR_RETURN(
      std::unique_ptr<SafetensorsWriter> file,
      SafetensorsWriter::Create(dir + "/" + kModelFile, tensors, {{"format", "pt"}}));
  const std::vector<float> zeros((SavedVocab(config) - config.text.vocab) * config.text.hidden,
                                 0.0f);
  for (const ParamTensor& t : layout.whole().tensors()) {
    BM_TRY(file->Append(params.data() + t.offset, t.numel));
    if (IsVocabTensor(t.name) && !zeros.empty())
      BM_TRY(file->Append(zeros.data(), static_cast<int64_t>(zeros.size())));
  }
  BM_TRY(file->Commit());
  return WriteFileAtomically(dir + "/" + kConfigFile,
                             LlavaHuggingFaceConfig(config, eot_id).dump(2) + "\n");
}

Result<std::vector<float>> LoadLlavaParameters(const std::string& path, const LlavaConfig& config) {
  BM_ASSIGN_OR_RETURN(MappedSafetensors file, MappedSafetensors::Open(path));
  const LlavaLayout layout(config);
  std::vector<float> params(layout.total());
  std::set<std::string> used;
  for (const ParamTensor& t : layout.whole().tensors()) {
    // llava-hf's names, then transformers >= 4.52's, then 5.x's (its CLIPVisionModel has no
    // vision_model level: model.vision_tower.embeddings...)
    std::vector<std::string> names = {t.name};
    const std::string tower = kVisionTowerPrefix;
    if (t.name.starts_with("language_model.model.")) {
      names.push_back("model.language_model." + t.name.substr(21));
    } else if (t.name == "language_model.lm_head.weight") {
      names.push_back("lm_head.weight");
    } else {
      names.push_back("model." + t.name);
      if (t.name.starts_with(tower))
        names.push_back("model.vision_tower." + t.name.substr(tower.size()));
    }
    BM_TRY(ReadTensor(file, t, names, params, &used));
  }
  BM_TRY(RefuseUnexpected(file, used, "a LLaVA model"));
  return params;
}

Result<std::vector<float>> LoadLlavaFromParts(const std::string& clip_path,
                                              const std::string& llama_path,
                                              const LlavaConfig& config, uint64_t seed) {
  const LlavaLayout layout(config);
  std::vector<float> params = InitLlavaParameters(config, layout, seed);
  BM_ASSIGN_OR_RETURN(MappedSafetensors clip, MappedSafetensors::Open(clip_path));
  BM_ASSIGN_OR_RETURN(MappedSafetensors llama, MappedSafetensors::Open(llama_path));
  std::set<std::string> clip_used, llama_used;
  const std::string tower = kVisionTowerPrefix, lm = kLanguageModelPrefix;
  for (const ParamTensor& t : layout.whole().tensors()) {
    if (t.name.starts_with(tower)) {
      BM_TRY(
          ReadTensor(clip, t, {"vision_model." + t.name.substr(tower.size())}, params, &clip_used));
    } else if (t.name.starts_with(lm)) {
      BM_TRY(ReadTensor(llama, t, {t.name.substr(lm.size())}, params, &llama_used));
    }
  }
  BM_TRY(RefuseUnexpected(llama, llama_used, "a LLaMA model"));
  return params;
}

}  // namespace bm::train
