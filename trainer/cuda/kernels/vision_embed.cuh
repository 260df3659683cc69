// The vision tower's embeddings (CLIP's CLIPVisionEmbeddings) and the choice of its patch rows.
//
// PatchIm2Col: pixel_values [n, 3, S, S] (CHW fp32, normalised) → rows [n * G * G, 3 * P * P] with
//   G = S / P: row img * G*G + py * G + px holds the patch at (py, px), column c * P*P + ky * P +
//   kx its pixel (c, py * P + ky, px * P + kx): the flattening of the conv weight [C, 3, P, P], so
//   that rows · weightᵀ is the stride-P convolution (CLIP's patch_embedding, no bias). No backward
//   (the pixels are inputs).
// VisionEmbedForward: x [n, np + 1, C] = [class; patches [n, np, C]] + positions [np + 1, C]
//   (class [C]); np = G * G.
// VisionEmbedBackward: from dx [n, np + 1, C], dclass[c] += Σ_img dx[img, 0, c] and
//   dpos[t, c] += Σ_img dx[img, t, c] (fp32, accumulated; images summed in order by one thread a
//   column: deterministic, no atomics). The patches' gradient is DropClassRows(dx).
// DropClassRows: out [n, np, C] = rows 1..np of each image's x [n, np + 1, C] (the patch tokens:
//   the patch embedding's gradient, and LLaVA's features, which leave the class token out).
// InsertClassRows: x [n, np + 1, C] = [0; rows [n, np, C]] (written: the features' gradient
//   into the residual stream's, the class token's row zero).
#pragma once

#include <cuda_runtime_api.h>

#include "base/result.h"

namespace bm::train::cuda {

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status PatchIm2Col(T* rows, const float* pixels, int n, int image_size, int patch,
                   cudaStream_t stream);
template <typename T>
Status VisionEmbedForward(T* x, const T* patches, const T* cls, const T* pos, int n, int np,
                          int channels, cudaStream_t stream);
template <typename T>
Status VisionEmbedBackward(float* dcls, float* dpos, const T* dx, int n, int np, int channels,
                           cudaStream_t stream);
template <typename T>
Status DropClassRows(T* out, const T* x, int n, int np, int channels, cudaStream_t stream);
template <typename T>
Status InsertClassRows(T* x, const T* rows, int n, int np, int channels, cudaStream_t stream);

// ---- CPU twins (fp32)
void PatchIm2ColCpu(float* rows, const float* pixels, int n, int image_size, int patch);
void VisionEmbedForwardCpu(float* x, const float* patches, const float* cls, const float* pos,
                           int n, int np, int channels);
void VisionEmbedBackwardCpu(float* dcls, float* dpos, const float* dx, int n, int np, int channels);
void DropClassRowsCpu(float* out, const float* x, int n, int np, int channels);
void InsertClassRowsCpu(float* x, const float* rows, int n, int np, int channels);

}  // namespace bm::train::cuda
