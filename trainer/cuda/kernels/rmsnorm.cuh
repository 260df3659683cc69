// RMSNorm over the last dimension, forward and backward: y = x * rstd * w,
// rstd = 1 / sqrt(mean(x^2) + eps), eps the model's (1e-5 by default; the aquila2-7b preset's
// 1e-6).
//
// Shapes: x, y, dy, dx [N, C]; w [C]; rstd [N] fp32 (saved by forward for backward);
// dw [C] fp32, accumulated (+=); dx accumulated (+=) like LayerNormBackward.
// scratch: RmsNormScratchFloats(N, C) floats of device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/result.h"

namespace bm::train::cuda {

size_t RmsNormScratchFloats(int n, int channels);

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status RmsNormForward(T* y, float* rstd, const T* x, const T* w, int n, int channels,
                      cudaStream_t stream, float eps = 1e-5f);
template <typename T>
Status RmsNormBackward(T* dx, float* dw, float* scratch, const T* dy, const T* x, const T* w,
                       const float* rstd, int n, int channels, cudaStream_t stream);

// ---- CPU twins (fp32)
void RmsNormForwardCpu(float* y, float* rstd, const float* x, const float* w, int n, int channels,
                       float eps = 1e-5f);
void RmsNormBackwardCpu(float* dx, float* dw, const float* dy, const float* x, const float* w,
                        const float* rstd, int n, int channels);

}  // namespace bm::train::cuda
