// ParamLayout: where each parameter tensor lives in the flat parameter buffer. The same
// offsets index the fp32 master weights, their bf16 working copy, the fp32 gradients and the
// two AdamW moments. Weight matrices (decayed) come first, then vectors (biases and norm
// gains, not decayed), so AdamW runs as two launches. Each tensor starts at a multiple of
// 64 elements; padding stays zero.
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

class ParamLayout {
 public:
  explicit ParamLayout(const ModelSpec& spec);

  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  size_t total() const { return total_; }          // elements, padding included
  size_t decay_end() const { return decay_end_; }  // [0, decay_end) is decayed
  size_t count() const;                            // parameters, padding excluded
  const ParamTensor* Find(const std::string& name) const;

  size_t wte = 0, wpe = 0, lm_head = 0, normf_w = 0, normf_b = 0;
  std::vector<LayerParams> layers;

 private:
  size_t Add(std::string name, int rows, int cols, bool decay);
  std::vector<ParamTensor> tensors_;
  size_t total_ = 0, decay_end_ = 0;
};

}  // namespace bm::train::cuda
