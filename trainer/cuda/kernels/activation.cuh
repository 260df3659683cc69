// Activations: GELU (tanh approximation, GPT-2's), exact GELU and quick-GELU (CLIP's), and
// SwiGLU (LLaMA's), forward and backward.
//
// GELU:       out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise over n.
// GELU (erf): out[i] = 0.5 x (1 + erf(x / sqrt(2)))   (torch's nn.GELU(): LLaVA's projector)
// quick-GELU: out[i] = x sigmoid(1.702 x)             (CLIP's hidden_act "quick_gelu")
// SwiGLU: in [N, 2F] holds gate g = in[:, :F] and up u = in[:, F:]; out [N, F] = silu(g) * u.
// Backward passes write (not accumulate) the input gradient. SwigluBackward can also write the
// forward output `out` (null: not), which costs no extra read: the backward pass of an MLP
// whose activation was not kept recomputes it there, just before the down projection's
// weight gradient needs it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/result.h"

namespace bm::train::cuda {

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status GeluForward(T* out, const T* in, size_t n, cudaStream_t stream);
template <typename T>
Status GeluBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream);
template <typename T>
Status GeluErfForward(T* out, const T* in, size_t n, cudaStream_t stream);
template <typename T>
Status GeluErfBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream);
template <typename T>
Status QuickGeluForward(T* out, const T* in, size_t n, cudaStream_t stream);
template <typename T>
Status QuickGeluBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream);
template <typename T>
Status SwigluForward(T* out, const T* in, int rows, int ffn, cudaStream_t stream);
template <typename T>
Status SwigluBackward(T* din, T* out, const T* dout, const T* in, int rows, int ffn,
                      cudaStream_t stream);

// ---- CPU twins (fp32)
void GeluForwardCpu(float* out, const float* in, size_t n);
void GeluBackwardCpu(float* din, const float* dout, const float* in, size_t n);
void GeluErfForwardCpu(float* out, const float* in, size_t n);
void GeluErfBackwardCpu(float* din, const float* dout, const float* in, size_t n);
void QuickGeluForwardCpu(float* out, const float* in, size_t n);
void QuickGeluBackwardCpu(float* din, const float* dout, const float* in, size_t n);
void SwigluForwardCpu(float* out, const float* in, int rows, int ffn);
void SwigluBackwardCpu(float* din, const float* dout, const float* in, int rows, int ffn);

}  // namespace bm::train::cuda
