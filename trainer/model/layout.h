// The parameter layout: every trainable tensor of a model, in one fixed order,
// with its Hugging Face name, its shape and its offset in one flat fp32 buffer.
// Both backends keep parameters, gradients and AdamW moments in this order, so
// "the parameters" of a model are one std::vector<float> on the host.
//
// Shapes are as the trainer uses them: a linear layer's weight is [out, in]
// (y = x W^T + b, llm.c's matmul_forward). Hugging Face's GPT-2 stores its
// Conv1D weights as [in, out]: those tensors have transposed_in_checkpoint set,
// and the checkpoint writer/reader transposes them.
//
// Order, llama (HF LlamaForCausalLM names):
//   model.embed_tokens.weight                 [V, C]
//   per layer i, prefix model.layers.i.:
//     input_layernorm.weight                  [C]
//     self_attn.q_proj.weight                 [C, C]      } contiguous: one fused
//     self_attn.k_proj.weight                 [KV, C]     } q|k|v weight of
//     self_attn.v_proj.weight                 [KV, C]     } [C + 2 KV, C]
//     self_attn.o_proj.weight                 [C, C]
//     post_attention_layernorm.weight         [C]
//     mlp.gate_proj.weight                    [F, C]      } contiguous: one fused
//     mlp.up_proj.weight                      [F, C]      } gate|up weight [2F, C]
//     mlp.down_proj.weight                    [C, F]
//   model.norm.weight                         [C]
//   lm_head.weight                            [V, C]      (absent when tied)
//
// Order, gpt (HF GPT2LMHeadModel names):
//   transformer.wte.weight                    [V, C]
//   transformer.wpe.weight                    [maxT, C]
//   per layer i, prefix transformer.h.i.:
//     ln_1.weight, ln_1.bias                  [C]
//     attn.c_attn.weight                      [3C, C]    (checkpoint: [C, 3C])
//     attn.c_attn.bias                        [3C]
//     attn.c_proj.weight                      [C, C]     (checkpoint: transposed)
//     attn.c_proj.bias                        [C]
//     ln_2.weight, ln_2.bias                  [C]
//     mlp.c_fc.weight                         [F, C]     (checkpoint: [C, F])
//     mlp.c_fc.bias                           [F]
//     mlp.c_proj.weight                       [C, F]     (checkpoint: [F, C])
//     mlp.c_proj.bias                         [C]
//   transformer.ln_f.weight, ln_f.bias        [C]
//   (the classifier is tied to wte)
//
// A rank of a tensor- or pipeline-parallel layout holds a part of the model
// (trainer/model/shard.h says which): ParamLayout(config, part) is that part's
// layout, in the same order and names, with local shapes (heads, kv_heads,
// ffn_hidden and vocabulary rows split across tensor-parallel ranks) and only
// the units of its stage. ParamLayout(config) is the whole model.
//
// Values only; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trainer/model/config.h"

namespace bm::train {

enum class InitKind {
  kNormal,          // N(0, 0.02)
  kNormalResidual,  // N(0, 0.02 / sqrt(2 L)): projections into the residual stream
  kZeros,           // biases
  kOnes,            // norm weights
};

struct ParamTensor {
  std::string name;            // Hugging Face name
  std::vector<int64_t> shape;  // trainer shape ([out, in] for linear weights)
  int64_t offset = 0;          // in floats, in the flat buffer
  int64_t numel = 0;
  bool transposed_in_checkpoint = false;  // GPT-2 Conv1D weights
  bool weight_decay = false;              // AdamW decays matrices only, not norms or biases
  InitKind init = InitKind::kNormal;
  // Never computed, so never updated (LLaVA's vision layers past the feature
  // layer and post_layernorm): kept so checkpoints round-trip; its gradient
  // stays zero and weight_decay is false, so AdamW leaves it as loaded.
  bool frozen = false;
};

// A contiguous range of the flat buffer that is used together: the
// embeddings, one transformer layer, or the final norm and head. The units of
// a layout tile it in order. Gradients are reduced across data-parallel ranks
// a unit at a time (as each one's backward finishes) and ZeRO-3 gathers
// parameters a unit at a time (trainer/dist/shard_plan.h).
struct ParamUnit {
  std::string name;  // "embeddings", "layer 3", "final"
  int64_t offset = 0;
  int64_t numel = 0;
};

// The part of a model one rank holds (trainer/model/shard.h derives it from a
// layout): layers [layer_begin, layer_end) by their global indices; the
// embeddings (the first pipeline stage) and the final norm and classifier (the
// last); and the widths held here. With tied embeddings and the classifier on
// another stage than the embeddings, `tied_copy` puts a copy of the token
// embedding in the final unit (Megatron's word-embedding copy on the last stage).
struct ModelPart {
  int64_t layer_begin = 0, layer_end = 0;
  bool embeddings = true, head = true, tied_copy = false;
  int64_t vocab = 0;  // rows of the token embedding and the classifier (a padded share of V)
  int64_t heads = 0, kv_heads = 0, ffn_hidden = 0;
  static ModelPart Whole(const ModelConfig& config);
};

class ParamLayout {
 public:
  explicit ParamLayout(const ModelConfig& config);
  // Preconditions: part's widths divide the model's as shard.h makes them.
  ParamLayout(const ModelConfig& config, const ModelPart& part);

  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  int64_t total() const { return total_; }  // == ParameterCount(config)
  // nullptr when no tensor has that name.
  const ParamTensor* Find(const std::string& name) const;
  // Index of a tensor in tensors(), by name; -1 if absent.
  int Index(const std::string& name) const;
  // The units: embeddings, layers 0..L-1, final (its norm and, untied, lm_head);
  // a part's: those it holds, in that order.
  const std::vector<ParamUnit>& units() const { return units_; }

  // Building a layout of another model (trainer/model/llava_layout.h) from an empty one.
  ParamLayout() = default;
  void StartUnit(std::string name);  // the tensors added next belong to a new unit
  // Adds a tensor at the end of the current unit; weight_decay for matrices ([out, in]).
  ParamTensor& Add(std::string name, std::vector<int64_t> shape, InitKind init,
                   bool transposed = false);
  // Appends `other`'s units and tensors after this layout's, names prefixed
  // with `name_prefix` and units' with `unit_prefix`.
  void Append(const ParamLayout& other, const std::string& name_prefix,
              const std::string& unit_prefix = "");
  // Marks the tensors from index `first` to the last frozen, without weight
  // decay: AdamW then leaves them as they are (their gradients stay zero).
  void MarkFrozen(size_t first);

 private:
  std::vector<ParamTensor> tensors_;
  std::vector<ParamUnit> units_;
  int64_t total_ = 0;
};

// Fills a flat buffer of layout.total() floats with the initial weights for
// `seed`: value j of tensor t is computed in double from NormalAt(seed,
// kStreamInit + t, j) and rounded once, so every backend starts from the same
// bits. Deterministic for any thread count.
std::vector<float> InitParameters(const ModelConfig& config, const ParamLayout& layout,
                                  uint64_t seed);
// Values [begin, begin + out.size()) of InitParameters(config, layout, seed), the same bits,
// drawn alone: a rank that holds a slice of the model draws only that slice. Precondition:
// the range lies in [0, layout.total()).
void InitParameterRange(const ModelConfig& config, const ParamLayout& layout, uint64_t seed,
                        int64_t begin, std::span<float> out);

// Calls fn(t, first, n, at) for each tensor t that [begin, begin + count) of the flat buffer
// overlaps, in order: its elements [first, first + n) are the range's [at, at + n).
template <typename Fn>
void ForEachTensorRange(const ParamLayout& layout, int64_t begin, int64_t count, Fn&& fn) {
  const std::vector<ParamTensor>& tensors = layout.tensors();
  const int64_t end = begin + count;
  // the first tensor that ends past `begin`; the tensors lie back to back in offset order
  size_t t = static_cast<size_t>(
      std::upper_bound(tensors.begin(), tensors.end(), begin,
                       [](int64_t b, const ParamTensor& p) { return b < p.offset + p.numel; }) -
      tensors.begin());
  for (; t < tensors.size() && tensors[t].offset < end; ++t) {
    const ParamTensor& p = tensors[t];
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.numel);
    if (lo < hi) fn(t, lo - p.offset, hi - lo, lo - begin);
  }
}

// The whole model's flat parameters (ParamLayout order) by range: fills `out` with values
// [begin, begin + out.size()). Backend::SetParametersFrom asks it for what the rank holds
// only, so that no rank needs the whole model in memory.
using ParamSource = std::function<void(int64_t begin, std::span<float> out)>;
// Copies from `whole`, which must outlive the source.
ParamSource SourceOf(std::span<const float> whole);
// Draws InitParameterRange's values; the config and layout must outlive the source.
ParamSource InitialParameters(const ModelConfig& config, const ParamLayout& layout, uint64_t seed);
// Takes the whole model's flat values [begin, begin + values.size()) (Backend::GetParametersTo
// hands a gather's pieces to one as they come).
using ParamSink = std::function<void(int64_t begin, std::span<const float> values)>;

}  // namespace bm::train
