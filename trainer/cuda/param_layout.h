// ParamLayout: where each parameter tensor lives in the flat parameter buffer. The same
// offsets index the fp32 master weights, their bf16 working copy, the fp32 gradients and the
// two AdamW moments (or, with ZeRO, the unit buffers and shards that stand for them:
// trainer/cuda/cuda_data_parallel.h).
//
// The buffer is tiled by units, in the order the forward pass uses them: the embeddings
// (wte, gpt's wpe), each layer (its weight matrices, then its vectors: biases and norm gains),
// and the final unit (the untied lm_head, then the final norm). Gradients are reduced across
// data-parallel ranks a unit at a time and ZeRO-3 gathers parameters a unit at a time. Each
// tensor starts at a multiple of 64 elements and each unit's size is a multiple of
// `unit_align` (64 × the data-parallel ranks under ZeRO, so that every rank's slice of every
// unit is 64-aligned); padding stays zero. Weight matrices are decayed, vectors not:
// segments() lists the runs of each, so AdamW runs as one launch per run.
//
// Under tensor parallelism (ModelSpec::tp > 1) the tensors are this rank's share, named as the
// whole model's: trainer/model/shard.h says which rows or columns.
//
// Names follow Hugging Face's (model.layers.N.self_attn..., transformer.h.N....) except that
// the fused projections are single tensors: llama "model.layers.N.self_attn.qkv_proj.weight"
// [(H+2Hkv)*D, C] (q rows, then k, then v) and "model.layers.N.mlp.gate_up_proj.weight"
// [2F, C] (gate rows, then up); gpt keeps c_attn [3C, C] but stored [out, in] (not Conv1D's
// transposed [in, out]).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "trainer/cuda/model_spec.h"

namespace bm::train::cuda {

struct ParamTensor {
  std::string name;
  int rows = 0, cols = 1;  // [rows, cols] row-major; vectors have cols = 1
  size_t offset = 0;       // in elements
  bool decay = false;
  size_t numel() const { return static_cast<size_t>(rows) * cols; }
};

// Offsets of one layer's tensors (element offsets into the flat buffer); absent ones are 0.
struct LayerParams {
  size_t norm1_w = 0, norm1_b = 0, qkv_w = 0, qkv_b = 0, proj_w = 0, proj_b = 0;
  size_t norm2_w = 0, norm2_b = 0, fc_w = 0, fc_b = 0, fc2_w = 0, fc2_b = 0;
};

struct Range {
  size_t offset = 0, numel = 0;
  bool decay = false;  // segments only
  size_t end() const { return offset + numel; }
};

class ParamLayout {
 public:
  // unit_align: a multiple of 64.
  explicit ParamLayout(const ModelSpec& spec, size_t unit_align = 64);

  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  size_t total() const { return total_; }  // elements, padding included
  size_t count() const;                    // parameters, padding excluded
  const ParamTensor* Find(const std::string& name) const;
  // Unit 0 the embeddings, 1..L the layers, L+1 the final unit; they tile [0, total()). A
  // pipeline stage has its units only: the embeddings on the first, the final on the last.
  const std::vector<Range>& units() const { return units_; }
  int unit_of_layer(int l) const { return l + (embeddings_ ? 1 : 0); }
  int final_unit() const { return static_cast<int>(units_.size()) - 1; }  // the last stage's
  bool has_head() const { return head_; }  // lm_head and the final norm (the last stage)
  // Maximal runs of decayed / not decayed elements, tiling [0, total()) (padding goes with
  // the tensor before it).
  const std::vector<Range>& segments() const { return segments_; }
  // The gradients that a micro-batch writing fresh gradients only adds to, so they are zeroed
  // first: all but the weight matrices whose products write their gradient whole (every
  // layer's four and, on the stage with the head, the LM head's, which is wte when tied);
  // padding included. Sorted, disjoint.
  std::vector<Range> AddedGradients() const;

  size_t wte = 0, wpe = 0, lm_head = 0, normf_w = 0, normf_b = 0;
  std::vector<LayerParams> layers;

 private:
  size_t Add(std::string name, int rows, int cols, bool decay);
  void EndUnit();
  std::vector<ParamTensor> tensors_;
  std::vector<Range> units_, segments_;
  size_t total_ = 0, unit_align_ = 64;
  bool embeddings_ = true, head_ = false;
};

}  // namespace bm::train::cuda
