// VisionTower<Float>: LLaVA-1.5's CLIP ViT vision tower on the CPU, forward
// and backward, over the ops in trainer/cpu/ops/. Float is float (the
// backend) or double (the oracle the float tower and the CUDA tower are
// checked against).
//
// Forward of n images, T = positions() = num_patches + 1 tokens each, N = n*T:
//   patches  [n*np, CH*P*P]  = PatchForward(pixel_values)            (im2col)
//   emb      [n, T, C]       = [class_embedding; patches @ Wpatch^T] + position_embedding
//   x_0      [N, C]          = LayerNorm(emb; pre_layrnorm)          hidden_states[0]
//   per layer l < computed_layers():
//     h      = x_l + out_proj(Attention(q|k|v(LayerNorm1(x_l))))     non-causal, all T
//     x_l+1  = h + fc2(QuickGelu(fc1(LayerNorm2(h))))                hidden_states[l+1]
//   features [n, np, C]      = x_L without each image's class token (position 0),
//                              L = computed_layers() = feature_index()
// The layers past the feature layer and post_layernorm are in the parameters
// (VisionLayout(config): the whole tower, llava-hf names, `frozen`) but never
// read; their gradients stay zero.
//
// Parameters and gradients are flat buffers in VisionLayout(config) order;
// activations for max_images are allocated once. Not thread-safe (one
// caller); the ops inside use OpenMP threads and BLAS.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/model/layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train::cpu {

template <typename Float>
class VisionTower {
 public:
  // Preconditions: Validate(config) is OK; max_images >= 1.
  VisionTower(const VisionConfig& config, int64_t max_images);

  const VisionConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }  // VisionLayout(config)
  std::vector<Float>& params() { return params_; }
  const std::vector<Float>& params() const { return params_; }
  std::vector<Float>& grads() { return grads_; }
  const std::vector<Float>& grads() const { return grads_; }

  // pixel_values [n, CH, S, S] (normalised, channels first), 1 <= n <= max_images.
  // Leaves features() [n, num_patches, C].
  void Forward(const Float* pixels, int64_t n);
  const Float* features() const { return features_.data(); }
  // hidden_states[k] of the last Forward, k in [0, computed_layers()]: [n, T, C],
  // class tokens included (for tests against transformers' output_hidden_states).
  const Float* hidden_state(int64_t k) const { return acts_.residual[k].data(); }

  // Backward of the last Forward's n images from dfeatures [n, num_patches, C]:
  // gradients accumulate into grads() (the embeddings, pre_layrnorm and the
  // computed layers). dpixels (nullable: nothing upstream) [n, CH, S, S] +=
  // the gradient of pixel_values.
  void Backward(const Float* dfeatures, int64_t n, Float* dpixels = nullptr);

  // Bytes held by parameters, gradients and activations.
  int64_t bytes() const;

 private:
  struct LayerParams {
    Float *ln1_w, *ln1_b, *qkv_w, *qkv_b, *out_w, *out_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w,
        *fc2_b;
  };
  LayerParams Layer(std::vector<Float>& buffer, int64_t l) const;
  Float* At(std::vector<Float>& buffer, const char* name) const;

  VisionConfig config_;
  ParamLayout layout_;
  int64_t max_images_;
  std::vector<Float> params_, grads_;
  // Activations of the last Forward; per computed layer [L][...]; residual
  // has L+1 entries (residual[k] = hidden_states[k]).
  struct Acts {
    std::vector<Float> patches, emb, pre_mean, pre_rstd;
    std::vector<std::vector<Float>> residual, ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2,
        ln2_mean, ln2_rstd, fc, act;
  } acts_;
  std::vector<Float> features_;
  // backward scratch
  std::vector<Float> dres_, dln_, dqkv_, datty_, dfc_, dact_, demb_, dpatch_emb_, dpatches_;
};

extern template class VisionTower<float>;
extern template class VisionTower<double>;

}  // namespace bm::train::cpu
