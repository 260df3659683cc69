// Model checkpoints: a directory with model.safetensors (Hugging Face tensor
// names, fp32; GPT-2's Conv1D weights transposed to [in, out] as HF stores
// them) and config.json (trainer/checkpoint/hf_config.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"

namespace bm::train {

inline constexpr char kModelFile[] = "model.safetensors";
inline constexpr char kConfigFile[] = "config.json";

// Writes DIR/model.safetensors and DIR/config.json (atomically each).
Status SaveModel(const std::string& dir, const ModelConfig& config, std::span<const float> params,
                 int64_t eot_id);

// Reads parameters for `config` from a safetensors file into layout order.
// Refuses, naming the tensor, a missing tensor, an unexpected one, or a shape
// that differs from the model's ("tensor X has shape [64, 32] in FILE, the
// model needs [64, 64]"); and any file the safetensors reader refuses.
Result<std::vector<float>> LoadParameters(const std::string& safetensors_path,
                                          const ModelConfig& config);
// The same checks, then the parameters by range (trainer/model/layout.h's ParamSource) from
// the file mapped read-only: values are read (and widened, transposed) only as they are asked
// for, so each rank of a run reads only what it keeps and none holds the file. The source
// keeps the mapping alive.
Result<ParamSource> CheckpointParameters(const std::string& safetensors_path,
                                         const ModelConfig& config);

// The ModelConfig of a checkpoint directory (its config.json).
Result<ModelConfig> ReadCheckpointConfig(const std::string& dir);

}  // namespace bm::train
