// Projector<Float>: LLaVA-1.5's "mlp2x_gelu" projector on the CPU, forward
// and backward: image features [rows, C_v] (the vision tower's patch tokens)
// to language-model embeddings [rows, H]:
//   out = linear_2(GeluErf(linear_1(features)))
// linear_1 [H, C_v] + bias, the exact (erf) GELU of nn.GELU(), linear_2 [H, H] + bias.
// Float is float (the backend) or double (the oracle).
//
// Parameters and gradients are flat buffers in ProjectorLayout(config) order
// (llava-hf names); activations for max_rows rows are allocated once. Not
// thread-safe (one caller).
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/model/layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train::cpu {

template <typename Float>
class Projector {
 public:
  // Preconditions: Validate(config) is OK; max_rows >= 1.
  Projector(const LlavaConfig& config, int64_t max_rows);

  const ParamLayout& layout() const { return layout_; }  // ProjectorLayout(config)
  int64_t in_features() const { return in_; }            // C_v
  int64_t out_features() const { return out_; }          // H
  std::vector<Float>& params() { return params_; }
  const std::vector<Float>& params() const { return params_; }
  std::vector<Float>& grads() { return grads_; }
  const std::vector<Float>& grads() const { return grads_; }

  // features [rows, C_v], 1 <= rows <= max_rows. Leaves output() [rows, H].
  void Forward(const Float* features, int64_t rows);
  const Float* output() const { return out2_.data(); }

  // Backward of the last Forward from dout [rows, H]: gradients accumulate
  // into grads(); dfeatures (nullable: nothing upstream) [rows, C_v] +=.
  void Backward(const Float* dout, int64_t rows, Float* dfeatures = nullptr);

 private:
  ParamLayout layout_;
  int64_t in_, out_;
  std::vector<Float> params_, grads_;
  std::vector<Float> features_, out1_, act_, out2_, dact_, dout1_;
  int64_t w1_, b1_, w2_, b2_;  // offsets of linear_1.weight, .bias, linear_2.weight, .bias
};

extern template class Projector<float>;
extern template class Projector<double>;

}  // namespace bm::train::cpu
