// ModelConfig: the geometry of a decoder-only transformer, its presets, and
// the exact parameter count and FLOPs per token derived from it.
//
// Two families:
//   gpt    LayerNorm, GELU (tanh), learned positions, tied embeddings, biases
//          (GPT-2 / GPT-3; Hugging Face GPT2LMHeadModel).
//   llama  RMSNorm, RoPE (Hugging Face "rotate_half" pairing), SwiGLU, grouped-
//          query attention through kv_heads, untied output, no biases
//          (Hugging Face LlamaForCausalLM).
//
// Every field can be overridden from the BENCHFILE (ApplyOverrides). Counts are
// exact and computed without allocating anything, so they hold for 13B models
// on a laptop. Values only; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::train {

enum class Family { kGpt, kLlama };

std::string_view FamilyName(Family family);  // "gpt" | "llama"
Result<Family> ParseFamily(std::string_view name);

struct ModelConfig {
  Family family = Family::kLlama;
  std::string preset;      // the preset it started from ("" = none)
  int64_t vocab = 0;       // V: embedding rows and classifier outputs
  int64_t hidden = 0;      // C
  int64_t layers = 0;      // L
  int64_t heads = 0;       // NH, query heads
  int64_t kv_heads = 0;    // KVH; == heads without grouped-query attention
  int64_t ffn_hidden = 0;  // F: gpt 4*C usually; llama the SwiGLU width
  int64_t max_seq = 0;     // gpt: rows of the position table; llama: longest sequence
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;   // llama only
  bool tied_embeddings = false;  // the classifier reuses the token embedding
  bool biases = false;           // linear layers and LayerNorms have biases (gpt)

  int64_t head_dim() const { return hidden / heads; }  // HS
  int64_t kv_dim() const { return kv_heads * head_dim(); }
  // Width of the fused q|k|v projection output: (NH + 2*KVH) * HS.
  int64_t qkv_dim() const { return hidden + 2 * kv_dim(); }

  bool operator==(const ModelConfig&) const = default;
};

// Presets with their real geometry: gpt2-124m, gpt3-6.7b, gpt3-13b, llama2-7b,
// llama2-13b, aquila2-7b; and small ones for CPU runs: gpt-tiny, llama-tiny (tests), llama-small
// (the default pipeline), gpt-small.
Result<ModelConfig> Preset(std::string_view name);
std::vector<std::string> PresetNames();

// Applies {"hidden": 256, "layers": 4, ...}. Known keys: family, vocab, hidden,
// layers, heads, kv_heads, ffn_hidden, max_seq, norm_eps, rope_theta,
// tied_embeddings, biases. Unknown keys or wrong types are kInvalidArgument.
// Setting heads without kv_heads keeps multi-head attention (kv_heads = heads)
// when the preset had kv_heads == heads.
Result<ModelConfig> ApplyOverrides(ModelConfig config, const nlohmann::json& overrides);

// Semantic checks: positive sizes, heads divide hidden, kv_heads divide heads,
// even head_dim for RoPE, gpt needs biases-compatible settings, ... The message
// names the fields and values ("heads (12) must divide hidden (100)").
Status Validate(const ModelConfig& config);

// Whether `config` can be split over TP tensor-parallel ranks and PP pipeline
// stages (trainer/model/shard.h): TP must divide heads, kv_heads and
// ffn_hidden and not exceed vocab; PP must not exceed layers.
// kInvalidArgument naming the numbers otherwise.
Status CheckModelParallel(const ModelConfig& config, int tp, int pp);

// Exact number of unique trainable parameters (tied embeddings counted once).
int64_t ParameterCount(const ModelConfig& config);
// Parameters outside embeddings, position table and (untied) classifier.
int64_t NonEmbeddingParameterCount(const ModelConfig& config);

// Training FLOPs per token, the two definitions benchmark suites use:
//   six_n = 6 * N                       (FlagPerf's code)
//   palm  = 6 * N + 12 * L * H * Q * T  (PaLM appendix B; H*Q = hidden, T = seq_len)
// N = ParameterCount (all unique parameters, as ../shared/bench/torch_reference.py's
// headline "all" figure).
struct FlopsPerToken {
  double six_n = 0;
  double palm = 0;
};
FlopsPerToken TrainingFlopsPerToken(const ModelConfig& config, int64_t seq_len);
// The same from the numbers alone (a model known only by N, L and hidden: an
// external trainer's log).
FlopsPerToken TrainingFlopsPerToken(double parameters, int64_t layers, int64_t hidden,
                                    int64_t seq_len);

nlohmann::json ToJson(const ModelConfig& config);
Result<ModelConfig> ModelConfigFromJson(const nlohmann::json& json);

}  // namespace bm::train
