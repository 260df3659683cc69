#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/vision_embed.cuh"

namespace bm::train::cuda {
namespace {

// ---- kernels: one thread an output element (the positions' gradient: one a column).

// The pixel index of element (row, col) of the im2col matrix (PatchIm2Col's contract).
__host__ __device__ inline size_t PixelIndex(size_t row, int col, int image_size, int patch) {
  const int grid = image_size / patch, np = grid * grid, pp = patch * patch;
  const size_t img = row / np;
  const int p = static_cast<int>(row % np), py = p / grid, px = p % grid;
  const int c = col / pp, ky = (col % pp) / patch, kx = col % patch;
  return ((img * 3 + c) * image_size + py * patch + ky) * static_cast<size_t>(image_size) +
         px * patch + kx;
}

template <typename T>
__global__ void PatchIm2ColKernel(T* rows, const float* pixels, size_t total, int image_size,
                                  int patch) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int cols = 3 * patch * patch;
  rows[i] = FromF<T>(pixels[PixelIndex(i / cols, static_cast<int>(i % cols), image_size, patch)]);
}

template <typename T>
__global__ void VisionEmbedForwardKernel(T* x, const T* patches, const T* cls, const T* pos,
                                         size_t total, int np, int c) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const size_t row = i / c;
  const int col = static_cast<int>(i % c), t = static_cast<int>(row % (np + 1));
  const size_t img = row / (np + 1);
  float v = t == 0 ? ToF(cls[col]) : ToF(patches[(img * np + t - 1) * c + col]);
  x[i] = FromF<T>(v + ToF(pos[static_cast<size_t>(t) * c + col]));
}

// One thread a (t, c) column of the positions; images in order.
template <typename T>
__global__ void VisionEmbedBackwardKernel(float* dcls, float* dpos, const T* dx, int n, int np,
                                          int c) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t width = static_cast<size_t>(np + 1) * c;
  if (i >= width) return;
  float sum = 0.0f;
  for (int img = 0; img < n; ++img) sum += ToF(dx[img * width + i]);
  dpos[i] += sum;
  if (i < static_cast<size_t>(c)) dcls[i] += sum;
}

template <typename T>
__global__ void DropClassRowsKernel(T* out, const T* x, size_t total, int np, int c) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const size_t row = i / c, img = row / np;
  out[i] = x[(row + img + 1) * c + i % c];
}

template <typename T>
__global__ void InsertClassRowsKernel(T* x, const T* rows, size_t total, int np, int c) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const size_t row = i / c;
  const int t = static_cast<int>(row % (np + 1));
  const size_t img = row / (np + 1);
  x[i] = t == 0 ? FromF<T>(0.0f) : rows[(img * np + t - 1) * c + i % c];
}

Status CheckPatches(int image_size, int patch) {
  if (patch <= 0 || image_size <= 0 || image_size % patch != 0) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "patch embedding: image size {} is not a multiple of the patch size {}",
                  image_size, patch);
  }
  return Status::Ok();
}

}  // namespace

// ---- launchers

template <typename T>
Status PatchIm2Col(T* rows, const float* pixels, int n, int image_size, int patch,
                   cudaStream_t stream) {
  BM_TRY(CheckPatches(image_size, patch));
  const size_t total = static_cast<size_t>(n) * image_size * image_size * 3;
  if (total == 0) return Status::Ok();
  PatchIm2ColKernel<T>
      <<<CeilDiv(total, 256), 256, 0, stream>>>(rows, pixels, total, image_size, patch);
  BM_LAUNCH_CHECK("PatchIm2ColKernel", "n={} S={} P={}", n, image_size, patch);
  return Status::Ok();
}

template <typename T>
Status VisionEmbedForward(T* x, const T* patches, const T* cls, const T* pos, int n, int np,
                          int channels, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * (np + 1) * channels;
  if (total == 0) return Status::Ok();
  VisionEmbedForwardKernel<T>
      <<<CeilDiv(total, 256), 256, 0, stream>>>(x, patches, cls, pos, total, np, channels);
  BM_LAUNCH_CHECK("VisionEmbedForwardKernel", "n={} np={} C={}", n, np, channels);
  return Status::Ok();
}

template <typename T>
Status VisionEmbedBackward(float* dcls, float* dpos, const T* dx, int n, int np, int channels,
                           cudaStream_t stream) {
  const size_t width = static_cast<size_t>(np + 1) * channels;
  if (width == 0 || n == 0) return Status::Ok();
  VisionEmbedBackwardKernel<T>
      <<<CeilDiv(width, 256), 256, 0, stream>>>(dcls, dpos, dx, n, np, channels);
  BM_LAUNCH_CHECK("VisionEmbedBackwardKernel", "n={} np={} C={}", n, np, channels);
  return Status::Ok();
}

template <typename T>
Status DropClassRows(T* out, const T* x, int n, int np, int channels, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * np * channels;
  if (total == 0) return Status::Ok();
  DropClassRowsKernel<T><<<CeilDiv(total, 256), 256, 0, stream>>>(out, x, total, np, channels);
  BM_LAUNCH_CHECK("DropClassRowsKernel", "n={} np={} C={}", n, np, channels);
  return Status::Ok();
}

template <typename T>
Status InsertClassRows(T* x, const T* rows, int n, int np, int channels, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(n) * (np + 1) * channels;
  if (total == 0) return Status::Ok();
  InsertClassRowsKernel<T><<<CeilDiv(total, 256), 256, 0, stream>>>(x, rows, total, np, channels);
  BM_LAUNCH_CHECK("InsertClassRowsKernel", "n={} np={} C={}", n, np, channels);
  return Status::Ok();
}

#define BM_INSTANTIATE(T)                                                                        \
  template Status PatchIm2Col<T>(T*, const float*, int, int, int, cudaStream_t);                 \
  template Status VisionEmbedForward<T>(T*, const T*, const T*, const T*, int, int, int,         \
                                        cudaStream_t);                                           \
  template Status VisionEmbedBackward<T>(float*, float*, const T*, int, int, int, cudaStream_t); \
  template Status DropClassRows<T>(T*, const T*, int, int, int, cudaStream_t);                   \
  template Status InsertClassRows<T>(T*, const T*, int, int, int, cudaStream_t);
BM_INSTANTIATE(float)
BM_INSTANTIATE(bf16)
BM_INSTANTIATE(fp16)
#undef BM_INSTANTIATE

// ---- CPU twins: the loops of the contracts, written out.

void PatchIm2ColCpu(float* rows, const float* pixels, int n, int image_size, int patch) {
  const int grid = image_size / patch, pp = patch * patch;
  for (int img = 0; img < n; ++img)
    for (int py = 0; py < grid; ++py)
      for (int px = 0; px < grid; ++px) {
        float* row = rows + (static_cast<size_t>(img) * grid * grid + py * grid + px) * 3 * pp;
        for (int c = 0; c < 3; ++c)
          for (int ky = 0; ky < patch; ++ky)
            for (int kx = 0; kx < patch; ++kx) {
              const int y = py * patch + ky, x = px * patch + kx;
              row[c * pp + ky * patch + kx] =
                  pixels[((static_cast<size_t>(img) * 3 + c) * image_size + y) * image_size + x];
            }
      }
}

void VisionEmbedForwardCpu(float* x, const float* patches, const float* cls, const float* pos,
                           int n, int np, int channels) {
  for (int img = 0; img < n; ++img)
    for (int t = 0; t <= np; ++t) {
      const float* src =
          t == 0 ? cls : patches + (static_cast<size_t>(img) * np + t - 1) * channels;
      float* dst = x + (static_cast<size_t>(img) * (np + 1) + t) * channels;
      for (int c = 0; c < channels; ++c)
        dst[c] = src[c] + pos[static_cast<size_t>(t) * channels + c];
    }
}

void VisionEmbedBackwardCpu(float* dcls, float* dpos, const float* dx, int n, int np,
                            int channels) {
  const size_t width = static_cast<size_t>(np + 1) * channels;
  for (size_t i = 0; i < width; ++i) {
    double sum = 0.0;
    for (int img = 0; img < n; ++img) sum += dx[img * width + i];
    dpos[i] += static_cast<float>(sum);
    if (i < static_cast<size_t>(channels)) dcls[i] += static_cast<float>(sum);
  }
}

void DropClassRowsCpu(float* out, const float* x, int n, int np, int channels) {
  for (int img = 0; img < n; ++img)
    for (int p = 0; p < np; ++p)
      for (int c = 0; c < channels; ++c)
        out[(static_cast<size_t>(img) * np + p) * channels + c] =
            x[(static_cast<size_t>(img) * (np + 1) + p + 1) * channels + c];
}

void InsertClassRowsCpu(float* x, const float* rows, int n, int np, int channels) {
  for (int img = 0; img < n; ++img)
    for (int t = 0; t <= np; ++t)
      for (int c = 0; c < channels; ++c)
        x[(static_cast<size_t>(img) * (np + 1) + t) * channels + c] =
            t == 0 ? 0.0f : rows[(static_cast<size_t>(img) * np + t - 1) * channels + c];
}

}  // namespace bm::train::cuda
