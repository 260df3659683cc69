#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/norm_reduce.cuh"
#include "trainer/cuda/kernels/norm_rows.cuh"

namespace bm::train::cuda {
namespace {

constexpr float kEps = 1e-5f;

// ---- kernels: one warp per row.

template <typename T>
__global__ void LayerNormForwardKernel(T* y, float* mean_out, float* rstd_out, const T* x,
                                       const T* w, const T* b, int n, int channels) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* xr = x + static_cast<size_t>(row) * channels;
  float sum = 0.0f;
  for (int c = lane; c < channels; c += 32) sum += ToF(xr[c]);
  float mean = WarpSum(sum) / channels;
  float var = 0.0f;
  for (int c = lane; c < channels; c += 32) {
    float d = ToF(xr[c]) - mean;
    var += d * d;
  }
  float rstd = rsqrtf(WarpSum(var) / channels + kEps);
  T* yr = y + static_cast<size_t>(row) * channels;
  for (int c = lane; c < channels; c += 32) {
    yr[c] = FromF<T>((ToF(xr[c]) - mean) * rstd * ToF(w[c]) + ToF(b[c]));
  }
  if (lane == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

template <typename T>
__global__ void LayerNormBackwardKernel(T* dx, const T* dy, const T* x, const T* w,
                                        const float* mean_in, const float* rstd_in, int n,
                                        int channels) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  size_t off = static_cast<size_t>(row) * channels;
  float mean = mean_in[row], rstd = rstd_in[row];
  float s1 = 0.0f, s2 = 0.0f;  // sum(dy*w), sum(dy*w*xhat)
  for (int c = lane; c < channels; c += 32) {
    float g = ToF(dy[off + c]) * ToF(w[c]);
    float xh = (ToF(x[off + c]) - mean) * rstd;
    s1 += g;
    s2 += g * xh;
  }
  s1 = WarpSum(s1) / channels;
  s2 = WarpSum(s2) / channels;
  for (int c = lane; c < channels; c += 32) {
    float g = ToF(dy[off + c]) * ToF(w[c]);
    float xh = (ToF(x[off + c]) - mean) * rstd;
    float d = rstd * (g - s1 - xh * s2);
    dx[off + c] = FromF<T>(ToF(dx[off + c]) + d);
  }
}

// Vectorized twins of the kernels above (16-byte accesses; C a multiple of 16 / sizeof(T)).
template <typename T>
__global__ void LayerNormForwardVecKernel(T* y, float* mean_out, float* rstd_out, const T* x,
                                          const T* w, const T* b, int n, int channels) {
  constexpr int V = Pack16<T>::kN;
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* xr = x + static_cast<size_t>(row) * channels;
  float sum = 0.0f;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> p = Load16(xr + c);
#pragma unroll
    for (int k = 0; k < V; ++k) sum += ToF(p.v[k]);
  }
  float mean = WarpSum(sum) / channels;
  float var = 0.0f;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> p = Load16(xr + c);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float d = ToF(p.v[k]) - mean;
      var += d * d;
    }
  }
  float rstd = rsqrtf(WarpSum(var) / channels + kEps);
  T* yr = y + static_cast<size_t>(row) * channels;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> p = Load16(xr + c), pw = Load16(w + c), pb = Load16(b + c), o;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      o.v[k] = FromF<T>((ToF(p.v[k]) - mean) * rstd * ToF(pw.v[k]) + ToF(pb.v[k]));
    }
    Store16(yr + c, o);
  }
  if (lane == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

template <typename T>
__global__ void LayerNormBackwardVecKernel(T* dx, const T* dy, const T* x, const T* w,
                                           const float* mean_in, const float* rstd_in, int n,
                                           int channels) {
  constexpr int V = Pack16<T>::kN;
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  size_t off = static_cast<size_t>(row) * channels;
  float mean = mean_in[row], rstd = rstd_in[row];
  float s1 = 0.0f, s2 = 0.0f;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> pg = Load16(dy + off + c), px = Load16(x + off + c), pw = Load16(w + c);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float g = ToF(pg.v[k]) * ToF(pw.v[k]);
      s1 += g;
      s2 += g * (ToF(px.v[k]) - mean) * rstd;
    }
  }
  s1 = WarpSum(s1) / channels;
  s2 = WarpSum(s2) / channels;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> pg = Load16(dy + off + c), px = Load16(x + off + c), pw = Load16(w + c);
    Pack16<T> pd = Load16(dx + off + c);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float g = ToF(pg.v[k]) * ToF(pw.v[k]);
      float xh = (ToF(px.v[k]) - mean) * rstd;
      pd.v[k] = FromF<T>(ToF(pd.v[k]) + rstd * (g - s1 - xh * s2));
    }
    Store16(dx + off + c, pd);
  }
}

}  // namespace

// The column pass's chunks or the fused backward's blocks, a weight and a bias partial each.
size_t LayerNormScratchFloats(int n, int channels) {
  return 2 * std::max<size_t>(NormChunks(n), RowBlocks(n)) * static_cast<size_t>(channels);
}

// ---- launchers

template <typename T>
Status LayerNormForward(T* y, float* mean, float* rstd, const T* x, const T* w, const T* b, int n,
                        int channels, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool vec = Vectorizable<T>(channels, x, y) && Vectorizable<T>(channels, w, b);
  const auto row_kernel = [&](auto p) {
    LaunchNormForwardRow<T, decltype(p)::value, true>(y, mean, rstd, x, w, b, n, kEps, stream);
  };
  if (vec && WithRowPacks<T>(channels, RowPacksBuilt{}, row_kernel)) {
    // launched
  } else if (vec) {
    LayerNormForwardVecKernel<T>
        <<<CeilDiv(n, 8), 256, 0, stream>>>(y, mean, rstd, x, w, b, n, channels);
  } else {
    LayerNormForwardKernel<T>
        <<<CeilDiv(n, 8), 256, 0, stream>>>(y, mean, rstd, x, w, b, n, channels);
  }
  BM_LAUNCH_CHECK("LayerNormForwardKernel", "N={} C={}", n, channels);
  return Status::Ok();
}

template <typename T>
Status LayerNormBackward(T* dx, float* dw, float* db, float* scratch, const T* dy, const T* x,
                         const T* w, const float* mean, const float* rstd, int n, int channels,
                         cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool vec = Vectorizable<T>(channels, dx, dy) && Vectorizable<T>(channels, x, w);
  int chunks = 0;
  if (vec && (chunks = LaunchNormBackwardRows<T, true>(dx, scratch, dy, x, w, mean, rstd, n,
                                                       channels, stream)) > 0) {
    BM_LAUNCH_CHECK("NormBackwardRowKernel", "N={} C={}", n, channels);
    return LaunchNormColumnFinish(dw, db, scratch, scratch + static_cast<size_t>(chunks) * channels,
                                  chunks, channels, stream);
  }
  if (vec) {
    LayerNormBackwardVecKernel<T>
        <<<CeilDiv(n, 8), 256, 0, stream>>>(dx, dy, x, w, mean, rstd, n, channels);
  } else {
    LayerNormBackwardKernel<T>
        <<<CeilDiv(n, 8), 256, 0, stream>>>(dx, dy, x, w, mean, rstd, n, channels);
  }
  BM_LAUNCH_CHECK("LayerNormBackwardKernel", "N={} C={}", n, channels);
  chunks = static_cast<int>(NormChunks(n));
  float* pw = scratch;
  float* pb = scratch + static_cast<size_t>(chunks) * channels;
  BM_TRY(LaunchNormColumnPartials<T>(pw, pb, dy, x, mean, rstd, n, channels, chunks, stream));
  BM_TRY(LaunchNormColumnFinish(dw, db, pw, pb, chunks, channels, stream));
  return Status::Ok();
}

template Status LayerNormForward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, int, int, cudaStream_t);
template Status LayerNormForward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*,
                                       int, int, cudaStream_t);
template Status LayerNormForward<fp16>(fp16*, float*, float*, const fp16*, const fp16*, const fp16*,
                                       int, int, cudaStream_t);
template Status LayerNormBackward<float>(float*, float*, float*, float*, const float*, const float*,
                                         const float*, const float*, const float*, int, int,
                                         cudaStream_t);
template Status LayerNormBackward<bf16>(bf16*, float*, float*, float*, const bf16*, const bf16*,
                                        const bf16*, const float*, const float*, int, int,
                                        cudaStream_t);
template Status LayerNormBackward<fp16>(fp16*, float*, float*, float*, const fp16*, const fp16*,
                                        const fp16*, const float*, const float*, int, int,
                                        cudaStream_t);

// ---- CPU twins

void LayerNormForwardCpu(float* y, float* mean, float* rstd, const float* x, const float* w,
                         const float* b, int n, int channels) {
  for (int r = 0; r < n; ++r) {
    const float* xr = x + static_cast<size_t>(r) * channels;
    double m = 0.0;
    for (int c = 0; c < channels; ++c) m += xr[c];
    m /= channels;
    double v = 0.0;
    for (int c = 0; c < channels; ++c) v += (xr[c] - m) * (xr[c] - m);
    float rs = static_cast<float>(1.0 / std::sqrt(v / channels + kEps));
    for (int c = 0; c < channels; ++c) {
      y[static_cast<size_t>(r) * channels + c] = static_cast<float>((xr[c] - m) * rs) * w[c] + b[c];
    }
    mean[r] = static_cast<float>(m);
    rstd[r] = rs;
  }
}

void LayerNormBackwardCpu(float* dx, float* dw, float* db, const float* dy, const float* x,
                          const float* w, const float* mean, const float* rstd, int n,
                          int channels) {
  for (int r = 0; r < n; ++r) {
    size_t off = static_cast<size_t>(r) * channels;
    double s1 = 0.0, s2 = 0.0;
    for (int c = 0; c < channels; ++c) {
      double g = dy[off + c] * w[c];
      double xh = (x[off + c] - mean[r]) * rstd[r];
      s1 += g;
      s2 += g * xh;
      dw[c] += static_cast<float>(dy[off + c] * xh);
      db[c] += dy[off + c];
    }
    s1 /= channels;
    s2 /= channels;
    for (int c = 0; c < channels; ++c) {
      double g = dy[off + c] * w[c];
      double xh = (x[off + c] - mean[r]) * rstd[r];
      dx[off + c] += static_cast<float>(rstd[r] * (g - s1 - xh * s2));
    }
  }
}

}  // namespace bm::train::cuda
