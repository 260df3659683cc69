#include "trainer/model/config.h"

#include <map>

namespace bm::train {
namespace {

ModelConfig Gpt(std::string name, int64_t vocab, int64_t hidden, int64_t layers, int64_t heads,
                int64_t max_seq) {
  ModelConfig c;
  c.family = Family::kGpt;
  c.preset = std::move(name);
  c.vocab = vocab;
  c.hidden = hidden;
  c.layers = layers;
  c.heads = heads;
  c.kv_heads = heads;
  c.ffn_hidden = 4 * hidden;
  c.max_seq = max_seq;
  c.norm_eps = 1e-5;
  c.tied_embeddings = true;
  c.biases = true;
  return c;
}

ModelConfig Llama(std::string name, int64_t vocab, int64_t hidden, int64_t layers, int64_t heads,
                  int64_t kv_heads, int64_t ffn, int64_t max_seq, double eps) {
  ModelConfig c;
  c.family = Family::kLlama;
  c.preset = std::move(name);
  c.vocab = vocab;
  c.hidden = hidden;
  c.layers = layers;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.ffn_hidden = ffn;
  c.max_seq = max_seq;
  c.norm_eps = eps;
  c.rope_theta = 10000.0;
  c.tied_embeddings = false;
  c.biases = false;
  return c;
}

const std::map<std::string, ModelConfig, std::less<>>& Presets() {
  static const auto* presets = [] {
    auto* m = new std::map<std::string, ModelConfig, std::less<>>;
    auto add = [&](ModelConfig c) { (*m)[c.preset] = c; };
    // Published geometries: GPT-2 paper / HF gpt2 config.json; GPT-3 paper
    // table 2.1 (13B: d_model 5120, as PaddleNLP's gpt3-13B-en; the table's
    // 5140 is a typo); HF config.json fields (vocab_size, hidden_size,
    // num_hidden_layers, num_attention_heads, num_key_value_heads,
    // intermediate_size, max_position_embeddings, rms_norm_eps; rope_theta
    // 10000, tie_word_embeddings false) of meta-llama/Llama-2-7b-hf,
    // meta-llama/Llama-2-13b-hf (= lmsys/vicuna-13b-v1.5, LLaVA-1.5-13B's
    // language model) and BAAI/Aquila2-7B.
    add(Gpt("gpt2-124m", 50257, 768, 12, 12, 1024));
    add(Gpt("gpt3-6.7b", 50257, 4096, 32, 32, 2048));
    add(Gpt("gpt3-13b", 50257, 5120, 40, 40, 2048));
    add(Llama("llama2-7b", 32000, 4096, 32, 32, 32, 11008, 4096, 1e-5));
    add(Llama("llama2-13b", 32000, 5120, 40, 40, 40, 13824, 4096, 1e-5));
    add(Llama("aquila2-7b", 100008, 4096, 32, 32, 32, 11008, 2048, 1e-6));
    // Small models for CPU runs and tests.
    add(Gpt("gpt-tiny", 512, 64, 2, 4, 64));
    add(Gpt("gpt-small", 50257, 128, 4, 4, 256));
    add(Llama("llama-tiny", 512, 64, 2, 4, 2, 160, 64, 1e-5));
    add(Llama("llama-small", 50257, 128, 4, 4, 4, 352, 256, 1e-5));
    return m;
  }();
  return *presets;
}

template <typename T>
Status GetField(const nlohmann::json& value, std::string_view key, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean())
      return Errorf(ErrorCode::kInvalidArgument, "model.{} must be a boolean", key);
    *out = value.get<bool>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (!value.is_number())
      return Errorf(ErrorCode::kInvalidArgument, "model.{} must be a number", key);
    *out = value.get<double>();
  } else {
    if (!value.is_number_integer())
      return Errorf(ErrorCode::kInvalidArgument, "model.{} must be an integer", key);
    *out = value.get<int64_t>();
  }
  return Status::Ok();
}

}  // namespace

std::string_view FamilyName(Family family) { return family == Family::kGpt ? "gpt" : "llama"; }

Result<Family> ParseFamily(std::string_view name) {
  if (name == "gpt") return Family::kGpt;
  if (name == "llama") return Family::kLlama;
  return Errorf(ErrorCode::kInvalidArgument, "unknown model family '{}' (gpt, llama)", name);
}

Result<ModelConfig> Preset(std::string_view name) {
  auto it = Presets().find(name);
  if (it == Presets().end()) {
    std::string names;
    for (const auto& [n, c] : Presets()) names += (names.empty() ? "" : ", ") + n;
    return Errorf(ErrorCode::kInvalidArgument, "unknown model preset '{}' (known: {})", name,
                  names);
  }
  return it->second;
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const auto& [n, c] : Presets()) names.push_back(n);
  return names;
}

Result<ModelConfig> ApplyOverrides(ModelConfig c, const nlohmann::json& overrides) {
  if (overrides.is_null()) return c;
  if (!overrides.is_object())
    return Status(ErrorCode::kInvalidArgument, "model overrides must be a table");
  bool mha = c.kv_heads == c.heads;
  bool kv_set = false;
  for (const auto& [key, value] : overrides.items()) {
    if (key == "family") {
      if (!value.is_string())
        return Status(ErrorCode::kInvalidArgument, "model.family must be a string");
      BM_ASSIGN_OR_RETURN(c.family, ParseFamily(value.get<std::string>()));
    } else if (key == "vocab") {
      BM_TRY(GetField(value, key, &c.vocab));
    } else if (key == "hidden") {
      BM_TRY(GetField(value, key, &c.hidden));
    } else if (key == "layers") {
      BM_TRY(GetField(value, key, &c.layers));
    } else if (key == "heads") {
      BM_TRY(GetField(value, key, &c.heads));
    } else if (key == "kv_heads") {
      BM_TRY(GetField(value, key, &c.kv_heads));
      kv_set = true;
    } else if (key == "ffn_hidden") {
      BM_TRY(GetField(value, key, &c.ffn_hidden));
    } else if (key == "max_seq") {
      BM_TRY(GetField(value, key, &c.max_seq));
    } else if (key == "norm_eps") {
      BM_TRY(GetField(value, key, &c.norm_eps));
    } else if (key == "rope_theta") {
      BM_TRY(GetField(value, key, &c.rope_theta));
    } else if (key == "tied_embeddings") {
      BM_TRY(GetField(value, key, &c.tied_embeddings));
    } else if (key == "biases") {
      BM_TRY(GetField(value, key, &c.biases));
    } else {
      return Errorf(ErrorCode::kInvalidArgument,
                    "unknown model field '{}' (family, vocab, hidden, layers, heads, kv_heads, "
                    "ffn_hidden, max_seq, norm_eps, rope_theta, tied_embeddings, biases)",
                    key);
    }
  }
  if (mha && !kv_set) c.kv_heads = c.heads;
  return c;
}

Status Validate(const ModelConfig& c) {
  auto positive = [](std::string_view name, int64_t v) -> Status {
    if (v <= 0)
      return Errorf(ErrorCode::kInvalidArgument, "model.{} must be positive (got {})", name, v);
    return Status::Ok();
  };
  BM_TRY(positive("vocab", c.vocab));
  BM_TRY(positive("hidden", c.hidden));
  BM_TRY(positive("layers", c.layers));
  BM_TRY(positive("heads", c.heads));
  BM_TRY(positive("kv_heads", c.kv_heads));
  BM_TRY(positive("ffn_hidden", c.ffn_hidden));
  BM_TRY(positive("max_seq", c.max_seq));
  if (c.hidden % c.heads != 0)
    return Errorf(ErrorCode::kInvalidArgument, "heads ({}) must divide hidden ({})", c.heads,
                  c.hidden);
  if (c.heads % c.kv_heads != 0)
    return Errorf(ErrorCode::kInvalidArgument, "kv_heads ({}) must divide heads ({})", c.kv_heads,
                  c.heads);
  if (c.vocab > (int64_t{1} << 31) - 1)
    return Errorf(ErrorCode::kInvalidArgument, "vocab ({}) does not fit int32 token ids", c.vocab);
  if (!(c.norm_eps > 0))
    return Status(ErrorCode::kInvalidArgument, "model.norm_eps must be positive");
  if (c.family == Family::kLlama) {
    if (c.head_dim() % 2 != 0)
      return Errorf(ErrorCode::kInvalidArgument, "RoPE needs an even head size (hidden/heads = {})",
                    c.head_dim());
    if (c.biases)
      return Status(ErrorCode::kUnsupported, "llama models without biases only (biases = false)");
    if (!(c.rope_theta > 0))
      return Status(ErrorCode::kInvalidArgument, "model.rope_theta must be positive");
  } else {
    if (c.kv_heads != c.heads)
      return Status(ErrorCode::kUnsupported,
                    "gpt models use multi-head attention (kv_heads = heads)");
    if (!c.biases) return Status(ErrorCode::kUnsupported, "gpt models have biases (biases = true)");
  }
  return Status::Ok();
}

Status CheckModelParallel(const ModelConfig& c, int tp, int pp) {
  if (tp < 1 || pp < 1)
    return Errorf(ErrorCode::kInvalidArgument, "TP ({}) and PP ({}) must be >= 1", tp, pp);
  auto divides = [&](const char* what, int64_t n) -> Status {
    if (n % tp == 0) return Status::Ok();
    return Errorf(ErrorCode::kInvalidArgument,
                  "tensor parallelism TP{} splits {} across ranks, but the model's {} ({}) is not "
                  "divisible by {}",
                  tp, what, what, n, tp);
  };
  BM_TRY(divides("heads", c.heads));
  if (c.kv_heads % tp != 0)
    return Errorf(ErrorCode::kInvalidArgument,
                  "tensor parallelism TP{} splits the key/value heads across ranks, but the "
                  "model's kv_heads ({}) is not divisible by {} (grouped-query attention: choose "
                  "a TP that divides kv_heads = {})",
                  tp, c.kv_heads, tp, c.kv_heads);
  BM_TRY(divides("ffn_hidden", c.ffn_hidden));
  if (c.vocab < tp)
    return Errorf(ErrorCode::kInvalidArgument,
                  "tensor parallelism TP{} splits the vocabulary ({} tokens) across more ranks "
                  "than it has tokens",
                  tp, c.vocab);
  if (pp > c.layers)
    return Errorf(ErrorCode::kInvalidArgument,
                  "pipeline parallelism PP{} needs at least as many layers as stages; the model "
                  "has {}",
                  pp, c.layers);
  return Status::Ok();
}

int64_t NonEmbeddingParameterCount(const ModelConfig& c) {
  const int64_t C = c.hidden, F = c.ffn_hidden, KV = c.kv_dim();
  int64_t per_layer = 0;
  if (c.family == Family::kGpt) {
    per_layer += 2 * C;                            // ln_1 weight, bias
    per_layer += C * (C + 2 * KV) + (C + 2 * KV);  // c_attn
    per_layer += C * C + C;                        // attn.c_proj
    per_layer += 2 * C;                            // ln_2
    per_layer += C * F + F;                        // c_fc
    per_layer += F * C + C;                        // mlp.c_proj
    return per_layer * c.layers + 2 * C;           // + ln_f
  }
  per_layer += C;                           // input_layernorm
  per_layer += C * C + 2 * KV * C + C * C;  // q, k, v, o
  per_layer += C;                           // post_attention_layernorm
  per_layer += 3 * C * F;                   // gate, up, down
  if (c.biases) per_layer += C + 2 * KV + C + 2 * F + C;
  return per_layer * c.layers + C;  // + final norm
}

int64_t ParameterCount(const ModelConfig& c) {
  int64_t n = NonEmbeddingParameterCount(c) + c.vocab * c.hidden;
  if (c.family == Family::kGpt) n += c.max_seq * c.hidden;
  if (!c.tied_embeddings) n += c.vocab * c.hidden;
  return n;
}

FlopsPerToken TrainingFlopsPerToken(double parameters, int64_t layers, int64_t hidden,
                                    int64_t seq_len) {
  FlopsPerToken f;
  f.six_n = 6.0 * parameters;
  f.palm = f.six_n + 12.0 * static_cast<double>(layers) * static_cast<double>(hidden) *
                         static_cast<double>(seq_len);
  return f;
}

FlopsPerToken TrainingFlopsPerToken(const ModelConfig& c, int64_t seq_len) {
  return TrainingFlopsPerToken(static_cast<double>(ParameterCount(c)), c.layers, c.hidden, seq_len);
}

nlohmann::json ToJson(const ModelConfig& c) {
  return {{"family", FamilyName(c.family)},
          {"preset", c.preset},
          {"vocab", c.vocab},
          {"hidden", c.hidden},
          {"layers", c.layers},
          {"heads", c.heads},
          {"kv_heads", c.kv_heads},
          {"ffn_hidden", c.ffn_hidden},
          {"max_seq", c.max_seq},
          {"norm_eps", c.norm_eps},
          {"rope_theta", c.rope_theta},
          {"tied_embeddings", c.tied_embeddings},
          {"biases", c.biases}};
}

Result<ModelConfig> ModelConfigFromJson(const nlohmann::json& json) {
  if (!json.is_object())
    return Status(ErrorCode::kInvalidArgument, "model config must be an object");
  ModelConfig base;
  base.kv_heads = -1;  // so a missing kv_heads is caught below
  if (json.contains("preset") && !json["preset"].is_string())
    return Status(ErrorCode::kInvalidArgument, "model.preset must be a string");
  nlohmann::json rest = json;
  std::string preset = json.value("preset", "");
  rest.erase("preset");
  BM_ASSIGN_OR_RETURN(ModelConfig c, ApplyOverrides(base, rest));
  c.preset = preset;
  if (c.kv_heads == -1) c.kv_heads = c.heads;
  BM_TRY(Validate(c));
  return c;
}

}  // namespace bm::train
