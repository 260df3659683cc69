#include "trainer/checkpoint/model_checkpoint.h"

#include <nlohmann/json.hpp>
#include <set>

#include "trainer/checkpoint/hf_config.h"
#include "trainer/checkpoint/safetensors.h"

namespace bm::train {
namespace {

// [rows, cols] -> [cols, rows]
void Transpose(const float* in, int64_t rows, int64_t cols, float* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * rows + r] = in[r * cols + c];
}

std::vector<int64_t> CheckpointShape(const ParamTensor& t) {
  if (!t.transposed_in_checkpoint) return t.shape;
  return {t.shape[1], t.shape[0]};
}

}  // namespace

Status SaveModel(const std::string& dir, const ModelConfig& config, std::span<const float> params,
                 int64_t eot_id) {
  ParamLayout layout(config);
  if (static_cast<int64_t>(params.size()) != layout.total())
    return Errorf(ErrorCode::kInternal, "SaveModel: {} floats for a model of {}", params.size(),
                  layout.total());
  std::vector<NamedTensor> tensors;
  for (const ParamTensor& t : layout.tensors()) {
    NamedTensor n{t.name, CheckpointShape(t), std::vector<float>(t.numel)};
    if (t.transposed_in_checkpoint) {
      Transpose(params.data() + t.offset, t.shape[0], t.shape[1], n.data.data());
    } else {
      std::copy(params.begin() + t.offset, params.begin() + t.offset + t.numel, n.data.begin());
    }
    tensors.push_back(std::move(n));
  }
  BM_TRY(WriteSafetensors(dir + "/" + kModelFile, tensors, {{"format", "pt"}}));
  return WriteFileAtomically(dir + "/" + kConfigFile,
                             HuggingFaceConfig(config, eot_id).dump(2) + "\n");
}

Result<std::vector<float>> LoadParameters(const std::string& path, const ModelConfig& config) {
  BM_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensors(path));
  ParamLayout layout(config);
  std::vector<float> params(layout.total());
  std::set<std::string> expected;
  for (const ParamTensor& t : layout.tensors()) {
    expected.insert(t.name);
    const NamedTensor* n = file.Find(t.name);
    if (!n)
      return Errorf(ErrorCode::kInvalidArgument, "{}: tensor {} is missing (the model needs it)",
                    path, t.name);
    std::vector<int64_t> shape = CheckpointShape(t);
    if (n->shape != shape)
      return Errorf(ErrorCode::kInvalidArgument, "{}: tensor {} has shape {}, the model needs {}",
                    path, t.name, nlohmann::json(n->shape).dump(), nlohmann::json(shape).dump());
    if (t.transposed_in_checkpoint) {
      Transpose(n->data.data(), shape[0], shape[1], params.data() + t.offset);
    } else {
      std::copy(n->data.begin(), n->data.end(), params.begin() + t.offset);
    }
  }
  for (const NamedTensor& n : file.tensors) {
    // HF GPT-2 files may carry attention-mask buffers; they are not parameters.
    if (n.name.ends_with(".attn.bias") || n.name.ends_with(".attn.masked_bias")) continue;
    if (n.name == "lm_head.weight" && config.tied_embeddings) continue;
    if (!expected.count(n.name))
      return Errorf(ErrorCode::kInvalidArgument, "{}: unexpected tensor {} (not in a {} model)",
                    path, n.name, FamilyName(config.family));
  }
  return params;
}

Result<ModelConfig> ReadCheckpointConfig(const std::string& dir) {
  BM_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(dir + "/" + kConfigFile));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Errorf(ErrorCode::kCorrupt, "{}/{} is not JSON", dir, kConfigFile);
  Result<ModelConfig> c = ModelConfigFromHuggingFace(j);
  if (!c.ok()) return c.status().WithContext(dir + "/" + kConfigFile);
  return c;
}

}  // namespace bm::train
