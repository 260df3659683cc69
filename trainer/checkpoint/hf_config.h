// config.json in Hugging Face's format, so that transformers loads a llama
// checkpoint as LlamaForCausalLM and a gpt one as GPT2LMHeadModel. Our own
// ModelConfig rides along under the key "benchmake" (transformers keeps
// unknown keys as attributes and ignores them).
#pragma once

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "trainer/model/config.h"

namespace bm::train {

// eot_id: the end-of-text token (bos/eos ids of the config); -1 when unknown.
nlohmann::ordered_json HuggingFaceConfig(const ModelConfig& config, int64_t eot_id);

// Reads a ModelConfig back: from "benchmake" when present, else from the
// Hugging Face fields (model_type llama or gpt2). kInvalidArgument otherwise.
Result<ModelConfig> ModelConfigFromHuggingFace(const nlohmann::json& json);

}  // namespace bm::train
