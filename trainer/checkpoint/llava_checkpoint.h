// LLaVA-1.5 model checkpoints: a directory with model.safetensors (fp32, the
// llava-hf tensor names of trainer/model/llava_layout.h — the names
// transformers' LlavaForConditionalGeneration loads: vision_tower.vision_model.*,
// multi_modal_projector.*, language_model.model.*, language_model.lm_head.weight)
// and config.json (a transformers LlavaConfig: vision_config (clip_vision_model),
// text_config (llama), image_token_index, vision_feature_layer,
// vision_feature_select_strategy "default", projector_hidden_act "gelu"; our
// LlavaConfig rides along under "benchmake").
//
// transformers embeds input_ids before it overwrites the image positions, so
// its token embedding needs a row for image_token_index: when our text
// vocabulary does not reach it (image_token_id = the text vocabulary size,
// llava-tiny's 512), the saved embed_tokens and lm_head get zero rows up to
// image_token_index + 1 and text_config.vocab_size says so (llava-hf pads 32000
// to 32064 the same way). A loader takes the first text.vocab rows of both:
// the extra rows' logits are not the text model's (compare logits[..., :vocab]).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/model/vision_config.h"

namespace bm::train {

// The vocabulary rows saved for the embedding and the head: max(vocab, image_token_id + 1).
int64_t SavedVocab(const LlavaConfig& config);

// transformers' config.json of the model.
nlohmann::ordered_json LlavaHuggingFaceConfig(const LlavaConfig& config, int64_t eot_id);
// From "benchmake" when present, else from the transformers fields (every
// geometry field present: examples/tools/hf_to_benchmake.py --llava writes
// them all); kInvalidArgument naming the missing or unsupported field.
Result<LlavaConfig> LlavaConfigFromHuggingFace(const nlohmann::json& json);
Result<LlavaConfig> ReadLlavaCheckpointConfig(const std::string& dir);

// Writes DIR/model.safetensors and DIR/config.json (atomically each). params:
// LlavaLayout(config).whole() order.
Status SaveLlavaModel(const std::string& dir, const LlavaConfig& config,
                      std::span<const float> params, int64_t eot_id);

// The whole model from a safetensors file with llava-hf names (transformers
// >= 4.52's names are accepted too: model.vision_tower.*,
// model.multi_modal_projector.*, model.language_model.*, lm_head.weight).
// Refuses, naming the tensor and file, a missing tensor, an unexpected one, a
// wrong shape (embed_tokens and lm_head may have more rows: the first
// text.vocab are taken).
Result<std::vector<float>> LoadLlavaParameters(const std::string& path, const LlavaConfig& config);

// LLaVA's pretraining start: the tower from a CLIP checkpoint (transformers'
// CLIPVisionModel or CLIPModel: vision_model.* names; the text tower and the
// projection heads are ignored), the language model from a LLaMA checkpoint
// (model.*, lm_head.weight), the projector drawn from InitLlavaParameters(seed).
Result<std::vector<float>> LoadLlavaFromParts(const std::string& clip_path,
                                              const std::string& llama_path,
                                              const LlavaConfig& config, uint64_t seed);

}  // namespace bm::train
