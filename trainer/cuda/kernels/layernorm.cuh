// LayerNorm over the last dimension, forward and backward.
//
// Shapes: x, y, dy, dx [N, C]; w, b [C]; mean, rstd [N] (fp32, saved by the forward pass for
// the backward pass); dw, db [C] fp32 gradients, accumulated (+=). dx is accumulated too
// (dx += ...): the backward pass adds into the residual stream's gradient.
// eps = 1e-5. scratch: LayerNormScratchFloats(N, C) floats of device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/result.h"

namespace bm::train::cuda {

size_t LayerNormScratchFloats(int n, int channels);

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status LayerNormForward(T* y, float* mean, float* rstd, const T* x, const T* w, const T* b, int n,
                        int channels, cudaStream_t stream);
template <typename T>
Status LayerNormBackward(T* dx, float* dw, float* db, float* scratch, const T* dy, const T* x,
                         const T* w, const float* mean, const float* rstd, int n, int channels,
                         cudaStream_t stream);

// ---- CPU twins (fp32)
void LayerNormForwardCpu(float* y, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, int n, int channels);
void LayerNormBackwardCpu(float* dx, float* dw, float* db, const float* dy, const float* x,
                          const float* w, const float* mean, const float* rstd, int n,
                          int channels);

}  // namespace bm::train::cuda
