#include "trainer/checkpoint/hf_config.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

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

namespace {

using nlohmann::json;

Status Bad(std::string_view key, std::string_view what) {
  return Errorf(ErrorCode::kInvalidArgument, "config.json: {} {}", key, what);
}

// j[key] into *out when present and not null (transformers writes null for "unset"); a missing
// key keeps *out unless `required`. A value of another type is an error naming the key (after
// `parent`, the object j sits under).
template <typename T>
Status Read(const json& j, const char* key, T* out, bool required = false,
            std::string_view parent = "") {
  const std::string name = parent.empty() ? key : fmt::format("{}.{}", parent, key);
  if (!j.contains(key) || j[key].is_null())
    return required ? Bad(name, "is missing") : Status::Ok();
  const json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return Bad(name, "must be a boolean");
  } else if constexpr (std::is_same_v<T, double>) {
    if (!v.is_number()) return Bad(name, "must be a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return Bad(name, "must be a string");
  } else {
    if (!v.is_number_integer()) return Bad(name, "must be an integer");
  }
  *out = v.get<T>();
  return Status::Ok();
}

// A field that changes what the model computes in a way this trainer's families cannot follow
// must hold the value that they compute (or be absent): otherwise the checkpoint would load and
// train another model than the one it was saved from.
template <typename T>
Status Require(const json& j, const char* key, std::initializer_list<T> followed) {
  T value = *followed.begin();
  BM_TRY(Read(j, key, &value));
  for (const T& f : followed)
    if (value == f) return Status::Ok();
  return Bad(key, fmt::format("= {} is not supported: this trainer computes {} = {}",
                              json(value).dump(), key, json(*followed.begin()).dump()));
}

// RoPE's settings: transformers 4 writes rope_theta and rope_scaling (null, or an object whose
// rope_type — "type" before 4.43 — names a scaling), transformers 5 one rope_parameters object
// holding rope_type and rope_theta. Only the "default" type (no scaling, the whole head
// rotated) is this trainer's RoPE.
Status ReadRope(const json& j, double* theta) {
  BM_TRY(Read(j, "rope_theta", theta));
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    const json& rope = j[key];
    if (!rope.is_object()) return Bad(key, "must be an object or null");
    std::string type = "default";
    BM_TRY(Read(rope, rope.contains("rope_type") ? "rope_type" : "type", &type, false, key));
    if (type != "default")
      return Bad(key, fmt::format("has rope_type '{}', which this trainer does not compute (its "
                                  "RoPE is the unscaled 'default')",
                                  type));
    double partial = 1.0;
    BM_TRY(Read(rope, "partial_rotary_factor", &partial, false, key));
    if (partial != 1.0)
      return Bad(key, fmt::format("has partial_rotary_factor {}; this trainer rotates the whole "
                                  "head (1.0)",
                                  partial));
    BM_TRY(Read(rope, "rope_theta", theta, false, key));
  }
  return Status::Ok();
}

Status ReadLlama(const json& j, ModelConfig* c) {
  c->family = Family::kLlama;
  c->max_seq = 2048;  // LlamaConfig's defaults
  c->norm_eps = 1e-6;
  c->rope_theta = 10000.0;
  c->tied_embeddings = false;
  c->biases = false;
  BM_TRY(Read(j, "vocab_size", &c->vocab, true));
  BM_TRY(Read(j, "hidden_size", &c->hidden, true));
  BM_TRY(Read(j, "intermediate_size", &c->ffn_hidden, true));
  BM_TRY(Read(j, "num_hidden_layers", &c->layers, true));
  BM_TRY(Read(j, "num_attention_heads", &c->heads, true));
  c->kv_heads = c->heads;  // num_key_value_heads null: multi-head attention
  BM_TRY(Read(j, "num_key_value_heads", &c->kv_heads));
  BM_TRY(Read(j, "max_position_embeddings", &c->max_seq));
  BM_TRY(Read(j, "rms_norm_eps", &c->norm_eps));
  BM_TRY(Read(j, "tie_word_embeddings", &c->tied_embeddings));
  BM_TRY(ReadRope(j, &c->rope_theta));
  BM_TRY(Require<std::string>(j, "hidden_act", {"silu"}));
  BM_TRY(Require(j, "attention_bias", {false}));
  BM_TRY(Require(j, "mlp_bias", {false}));
  if (c->heads > 0) BM_TRY(Require(j, "head_dim", {c->hidden / c->heads}));
  return Status::Ok();
}

Status ReadGpt2(const json& j, ModelConfig* c) {
  c->family = Family::kGpt;
  c->norm_eps = 1e-5;  // GPT2Config's defaults
  c->tied_embeddings = true;
  c->biases = true;
  BM_TRY(Read(j, "vocab_size", &c->vocab, true));
  BM_TRY(Read(j, "n_embd", &c->hidden, true));
  BM_TRY(Read(j, "n_layer", &c->layers, true));
  BM_TRY(Read(j, "n_head", &c->heads, true));
  c->kv_heads = c->heads;
  c->ffn_hidden = 4 * c->hidden;  // n_inner null: 4 * n_embd
  BM_TRY(Read(j, "n_inner", &c->ffn_hidden));
  BM_TRY(Read(j, "n_positions", &c->max_seq, true));
  BM_TRY(Read(j, "layer_norm_epsilon", &c->norm_eps));
  BM_TRY(Read(j, "tie_word_embeddings", &c->tied_embeddings));
  // transformers' ACT2FN: gelu_new and gelu_pytorch_tanh are both the tanh GELU.
  BM_TRY(Require<std::string>(j, "activation_function", {"gelu_new", "gelu_pytorch_tanh"}));
  BM_TRY(Require(j, "scale_attn_weights", {true}));
  BM_TRY(Require(j, "scale_attn_by_inverse_layer_idx", {false}));
  return Status::Ok();
}

}  // namespace

Result<ModelConfig> ModelConfigFromHuggingFace(const nlohmann::json& j) {
  if (!j.is_object()) return Status(ErrorCode::kInvalidArgument, "config.json is not an object");
  if (j.contains("benchmake")) return ModelConfigFromJson(j["benchmake"]);
  std::string type;
  BM_TRY(Read(j, "model_type", &type));
  ModelConfig c;
  if (type == "llama") {
    BM_TRY(ReadLlama(j, &c));
  } else if (type == "gpt2") {
    BM_TRY(ReadGpt2(j, &c));
  } else {
    return Errorf(ErrorCode::kInvalidArgument,
                  "config.json has model_type '{}'; llama and gpt2 are supported", type);
  }
  BM_TRY(Validate(c));
  return c;
}

}  // namespace bm::train
