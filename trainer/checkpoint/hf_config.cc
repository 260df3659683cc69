#include "trainer/checkpoint/hf_config.h"

namespace bm::train {

nlohmann::ordered_json HuggingFaceConfig(const ModelConfig& c, int64_t eot_id) {
  nlohmann::ordered_json j;
  nlohmann::json eot = eot_id >= 0 ? nlohmann::json(eot_id) : nlohmann::json(nullptr);
  if (c.family == Family::kLlama) {
    j["architectures"] = {"LlamaForCausalLM"};
    j["model_type"] = "llama";
    j["vocab_size"] = c.vocab;
    j["hidden_size"] = c.hidden;
    j["intermediate_size"] = c.ffn_hidden;
    j["num_hidden_layers"] = c.layers;
    j["num_attention_heads"] = c.heads;
    j["num_key_value_heads"] = c.kv_heads;
    j["head_dim"] = c.head_dim();
    j["max_position_embeddings"] = c.max_seq;
    j["rms_norm_eps"] = c.norm_eps;
    j["rope_theta"] = c.rope_theta;
    j["rope_scaling"] = nullptr;
    j["hidden_act"] = "silu";
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
    j["attention_dropout"] = 0.0;
    j["initializer_range"] = 0.02;
    j["tie_word_embeddings"] = c.tied_embeddings;
    j["bos_token_id"] = eot;
    j["eos_token_id"] = eot;
  } else {
    j["architectures"] = {"GPT2LMHeadModel"};
    j["model_type"] = "gpt2";
    j["vocab_size"] = c.vocab;
    j["n_embd"] = c.hidden;
    j["n_layer"] = c.layers;
    j["n_head"] = c.heads;
    j["n_inner"] = c.ffn_hidden;
    j["n_positions"] = c.max_seq;
    j["n_ctx"] = c.max_seq;
    j["layer_norm_epsilon"] = c.norm_eps;
    j["activation_function"] = "gelu_new";
    j["attn_pdrop"] = 0.0;
    j["embd_pdrop"] = 0.0;
    j["resid_pdrop"] = 0.0;
    j["scale_attn_weights"] = true;
    j["initializer_range"] = 0.02;
    j["tie_word_embeddings"] = c.tied_embeddings;
    j["bos_token_id"] = eot;
    j["eos_token_id"] = eot;
  }
  j["torch_dtype"] = "float32";
  j["benchmake"] = ToJson(c);
  return j;
}

Result<ModelConfig> ModelConfigFromHuggingFace(const nlohmann::json& j) {
  if (!j.is_object()) return Status(ErrorCode::kInvalidArgument, "config.json is not an object");
  if (j.contains("benchmake")) return ModelConfigFromJson(j["benchmake"]);
  const std::string type = j.value("model_type", "");
  ModelConfig c;
  try {
    if (type == "llama") {
      c.family = Family::kLlama;
      c.vocab = j.at("vocab_size");
      c.hidden = j.at("hidden_size");
      c.ffn_hidden = j.at("intermediate_size");
      c.layers = j.at("num_hidden_layers");
      c.heads = j.at("num_attention_heads");
      c.kv_heads = j.value("num_key_value_heads", c.heads);
      c.max_seq = j.value("max_position_embeddings", int64_t{2048});
      c.norm_eps = j.value("rms_norm_eps", 1e-6);
      c.rope_theta = j.value("rope_theta", 10000.0);
      c.tied_embeddings = j.value("tie_word_embeddings", false);
      c.biases = false;
    } else if (type == "gpt2") {
      c.family = Family::kGpt;
      c.vocab = j.at("vocab_size");
      c.hidden = j.at("n_embd");
      c.layers = j.at("n_layer");
      c.heads = j.at("n_head");
      c.kv_heads = c.heads;
      c.ffn_hidden = j.contains("n_inner") && !j["n_inner"].is_null() ? j["n_inner"].get<int64_t>()
                                                                      : 4 * c.hidden;
      c.max_seq = j.at("n_positions");
      c.norm_eps = j.value("layer_norm_epsilon", 1e-5);
      c.tied_embeddings = j.value("tie_word_embeddings", true);
      c.biases = true;
    } else {
      return Errorf(ErrorCode::kInvalidArgument,
                    "config.json has model_type '{}'; llama and gpt2 are supported", type);
    }
  } catch (const nlohmann::json::exception& e) {
    return Errorf(ErrorCode::kInvalidArgument, "config.json: {}", e.what());
  }
  BM_TRY(Validate(c));
  return c;
}

}  // namespace bm::train
