// LLaVA's vision tower (a CLIP ViT, trainer/model/vision_config.h) and its projector on one GPU:
// forward and backward with the trainer's matmuls (cuBLASLt) and kernels, 16-bit compute (bf16
// or fp16; fp32 as a checking mode) over fp32 master parameters and fp32 gradients, as CudaModel
// holds the language model's. Separate modules that the LLaVA model calls in turn:
//
//   pixel_values [n, 3, S, S] ──CudaVisionTower──▶ features [n, num_patches, C_v]
//                              ──CudaProjector───▶ embeddings [n * num_patches, H]
//
// and back: CudaProjector::Backward(d embeddings) gives d features, which
// CudaVisionTower::Backward takes.
//
// The tower: im2col + one matmul (the patch convolution), the class token and positions,
// pre_layrnorm, then computed_layers() pre-LN encoder layers (LayerNorm, the fused q|k|v
// projection, non-causal attention, the output projection added to the residual stream;
// LayerNorm, fc1, quick-GELU, fc2 added to it), and the patch rows of the last one computed
// (hidden_states[feature_layer], the class token's row dropped). post_layernorm and the layers
// past the feature layer are held (the layout's whole) but never computed; their gradients stay
// zero. The projector "mlp2x_gelu": Linear(C_v → H), GELU (erf), Linear(H → H).
//
// Parameters and gradients are flat in the modules' ParamLayouts (VisionLayout, ProjectorLayout
// of trainer/model/llava_layout.h): host copies through Set/Get, the device buffers through
// master() / grad() (an optimizer updates master() in place and calls RefreshWorkingCopy()).
// Gradients are accumulated (+=) by Backward until ZeroGradients(); deterministic (no atomics
// in any kernel used; cuBLASLt's algorithms are fixed per shape).
//
// Activations for `max_images` images are allocated at Create (one arena per module); Forward
// with more is an error. A frozen tower (LLaVA-1.5 trains it in neither stage) is created
// forward only: no gradients, and one layer's activations and two residual streams reused by
// every layer instead of every layer's kept for a backward (CLIP-L/14-336 at 16 images: an
// arena of 0.4 GiB; stage 2 of LLaVA-1.5-7B held about 6.3 GiB more with every layer's, run
// 105). Every call is queued on options.stream; outputs are valid when the stream reaches them,
// until the next Forward. Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/model/layout.h"
#include "trainer/model/vision_config.h"

namespace bm::train::cuda {

struct CudaVisionOptions {
  DType dtype = DType::kBF16;  // activations and the matmuls' working weights
  int max_images = 1;          // per Forward call
  // kAuto: our tensor-core kernels for 16-bit head_dim 64 / 128 (CLIP-L/14's 64), else the
  // reference kernel; kReference; kCudnn: cuDNN's fused attention (16-bit only).
  AttentionImpl attention = AttentionImpl::kAuto;
  cudaStream_t stream = nullptr;
};

class CudaVisionTower {
 public:
  // Errors: an invalid config, norm_eps other than 1e-5 (the LayerNorm kernels'), channels other
  // than 3, max_images < 1, kCudnn in fp32 or with a shape cuDNN refuses, or no device memory.
  // frozen: forward only (above); Backward is refused, grad() is null, GetGradients reads zeros;
  // in 16 bits master() is null too (the working copy alone: GetParameters widens it).
  static Result<std::unique_ptr<CudaVisionTower>> Create(const VisionConfig& config,
                                                         const CudaVisionOptions& options,
                                                         bool frozen = false);
  ~CudaVisionTower();
  CudaVisionTower(const CudaVisionTower&) = delete;
  CudaVisionTower& operator=(const CudaVisionTower&) = delete;

  const VisionConfig& config() const;
  const train::ParamLayout& layout() const;  // VisionLayout(config)

  // Host <-> device, flat in layout() order (layout().total() floats).
  Status SetParameters(std::span<const float> flat);
  Status GetParameters(std::vector<float>* flat);
  Status GetGradients(std::vector<float>* flat);
  Status ZeroGradients();
  // The working copy from the masters again (after an update of master() on the device).
  Status RefreshWorkingCopy();
  float* master();
  float* grad();
  // Device bytes held: parameters, gradients, working copy and the activation arena.
  size_t device_bytes() const;
  // device_bytes() line by line: the parameters' buffers, then the arena's plan (its entries).
  std::string memory_summary() const;

  // pixels: device, fp32 CHW [n, 3, S, S], 1 <= n <= max_images. Computes the features.
  Status Forward(const float* pixels, int n);
  // The last Forward's features: device, [n * num_patches, hidden] of options.dtype.
  const void* features() const;
  // dfeatures: device, like features(). Adds the parameters' gradients (the pixels get none).
  Status Backward(const void* dfeatures);

 private:
  struct Impl;
  explicit CudaVisionTower(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class CudaProjector {
 public:
  // `max_rows`: image tokens per call at most (images * num_patches). Errors: a projector other
  // than "mlp2x_gelu", max_rows < 1, no device memory.
  static Result<std::unique_ptr<CudaProjector>> Create(const LlavaConfig& config, int max_rows,
                                                       const CudaVisionOptions& options);
  ~CudaProjector();
  CudaProjector(const CudaProjector&) = delete;
  CudaProjector& operator=(const CudaProjector&) = delete;

  const train::ParamLayout& layout() const;  // ProjectorLayout(config)
  Status SetParameters(std::span<const float> flat);
  Status GetParameters(std::vector<float>* flat);
  Status GetGradients(std::vector<float>* flat);
  Status ZeroGradients();
  Status RefreshWorkingCopy();
  float* master();
  float* grad();
  size_t device_bytes() const;         // as CudaVisionTower's
  std::string memory_summary() const;  // as CudaVisionTower's
  // A frozen projector's: frees the gradient buffer (grad() null; GetGradients reads zeros;
  // Backward refused) and, in 16 bits, the masters (master() null; the working copy is kept).
  void Freeze();

  // features: device [rows, vision.hidden] of options.dtype (CudaVisionTower::features()); the
  // caller's, read again by Backward: keep it unchanged until then.
  Status Forward(const void* features, int rows);
  // [rows, text.hidden] of options.dtype: the image tokens' embeddings for the language model.
  const void* output() const;
  // doutput: device, like output(). Adds the gradients and writes dfeatures().
  Status Backward(const void* doutput);
  const void* dfeatures() const;  // [rows, vision.hidden]

 private:
  struct Impl;
  explicit CudaProjector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::train::cuda
