#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/norm_reduce.cuh"
#include "trainer/cuda/kernels/rmsnorm.cuh"

namespace bm::train::cuda {
namespace {

constexpr float kEps = 1e-5f;

// ---- kernels: one warp per row.

template <typename T>
__global__ void RmsNormForwardKernel(T* y, float* rstd_out, const T* x, const T* w, int n,
                                     int channels) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* xr = x + static_cast<size_t>(row) * channels;
  float ss = 0.0f;
  for (int c = lane; c < channels; c += 32) {
    float v = ToF(xr[c]);
    ss += v * v;
  }
  float rstd = rsqrtf(WarpSum(ss) / channels + kEps);
  T* yr = y + static_cast<size_t>(row) * channels;
  for (int c = lane; c < channels; c += 32) yr[c] = FromF<T>(ToF(xr[c]) * rstd * ToF(w[c]));
  if (lane == 0) rstd_out[row] = rstd;
}

template <typename T>
__global__ void RmsNormBackwardKernel(T* dx, const T* dy, const T* x, const T* w,
                                      const float* rstd_in, int n, int channels) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  size_t off = static_cast<size_t>(row) * channels;
  float rstd = rstd_in[row];
  float s2 = 0.0f;  // sum(dy*w*xhat)
  for (int c = lane; c < channels; c += 32) {
    s2 += ToF(dy[off + c]) * ToF(w[c]) * ToF(x[off + c]) * rstd;
  }
  s2 = WarpSum(s2) / channels;
  for (int c = lane; c < channels; c += 32) {
    float g = ToF(dy[off + c]) * ToF(w[c]);
    float xh = ToF(x[off + c]) * rstd;
    dx[off + c] = FromF<T>(ToF(dx[off + c]) + rstd * (g - xh * s2));
  }
}

template <typename T>
__global__ void RmsNormForwardVecKernel(T* y, float* rstd_out, const T* x, const T* w, int n,
                                        int channels) {
  constexpr int V = Pack16<T>::kN;
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* xr = x + static_cast<size_t>(row) * channels;
  float ss = 0.0f;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> p = Load16(xr + c);
#pragma unroll
    for (int k = 0; k < V; ++k) ss += ToF(p.v[k]) * ToF(p.v[k]);
  }
  float rstd = rsqrtf(WarpSum(ss) / channels + kEps);
  T* yr = y + static_cast<size_t>(row) * channels;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> p = Load16(xr + c), pw = Load16(w + c), o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = FromF<T>(ToF(p.v[k]) * rstd * ToF(pw.v[k]));
    Store16(yr + c, o);
  }
  if (lane == 0) rstd_out[row] = rstd;
}

template <typename T>
__global__ void RmsNormBackwardVecKernel(T* dx, const T* dy, const T* x, const T* w,
                                         const float* rstd_in, int n, int channels) {
  constexpr int V = Pack16<T>::kN;
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  size_t off = static_cast<size_t>(row) * channels;
  float rstd = rstd_in[row];
  float s2 = 0.0f;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> pg = Load16(dy + off + c), px = Load16(x + off + c), pw = Load16(w + c);
#pragma unroll
    for (int k = 0; k < V; ++k) s2 += ToF(pg.v[k]) * ToF(pw.v[k]) * ToF(px.v[k]) * rstd;
  }
  s2 = WarpSum(s2) / channels;
  for (int c = lane * V; c < channels; c += 32 * V) {
    Pack16<T> pg = Load16(dy + off + c), px = Load16(x + off + c), pw = Load16(w + c);
    Pack16<T> pd = Load16(dx + off + c);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float g = ToF(pg.v[k]) * ToF(pw.v[k]);
      float xh = ToF(px.v[k]) * rstd;
      pd.v[k] = FromF<T>(ToF(pd.v[k]) + rstd * (g - xh * s2));
    }
    Store16(dx + off + c, pd);
  }
}

}  // namespace

size_t RmsNormScratchFloats(int n, int channels) {
  return NormChunks(n) * static_cast<size_t>(channels);
}

// ---- launchers

template <typename T>
Status RmsNormForward(T* y, float* rstd, const T* x, const T* w, int n, int channels,
                      cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  if (Vectorizable<T>(channels, x, y) && Vectorizable<T>(channels, w)) {
    RmsNormForwardVecKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(y, rstd, x, w, n, channels);
  } else {
    RmsNormForwardKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(y, rstd, x, w, n, channels);
  }
  BM_LAUNCH_CHECK("RmsNormForwardKernel", "N={} C={}", n, channels);
  return Status::Ok();
}

template <typename T>
Status RmsNormBackward(T* dx, float* dw, float* scratch, const T* dy, const T* x, const T* w,
                       const float* rstd, int n, int channels, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  if (Vectorizable<T>(channels, dx, dy) && Vectorizable<T>(channels, x, w)) {
    RmsNormBackwardVecKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(dx, dy, x, w, rstd, n, channels);
  } else {
    RmsNormBackwardKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(dx, dy, x, w, rstd, n, channels);
  }
  BM_LAUNCH_CHECK("RmsNormBackwardKernel", "N={} C={}", n, channels);
  int chunks = static_cast<int>(NormChunks(n));
  BM_TRY(LaunchNormColumnPartials<T>(scratch, nullptr, dy, x, nullptr, rstd, n, channels, chunks,
                                     stream));
  NormColumnFinishKernel<<<CeilDiv(channels, 256), 256, 0, stream>>>(dw, nullptr, scratch, nullptr,
                                                                     chunks, channels);
  BM_LAUNCH_CHECK("NormColumnFinishKernel", "N={} C={}", n, channels);
  return Status::Ok();
}

template Status RmsNormForward<float>(float*, float*, const float*, const float*, int, int,
                                      cudaStream_t);
template Status RmsNormForward<bf16>(bf16*, float*, const bf16*, const bf16*, int, int,
                                     cudaStream_t);
template Status RmsNormBackward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, const float*, int, int, cudaStream_t);
template Status RmsNormBackward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*,
                                      const float*, int, int, cudaStream_t);

// ---- CPU twins

void RmsNormForwardCpu(float* y, float* rstd, const float* x, const float* w, int n, int channels) {
  for (int r = 0; r < n; ++r) {
    const float* xr = x + static_cast<size_t>(r) * channels;
    double ss = 0.0;
    for (int c = 0; c < channels; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    float rs = static_cast<float>(1.0 / std::sqrt(ss / channels + kEps));
    for (int c = 0; c < channels; ++c) y[static_cast<size_t>(r) * channels + c] = xr[c] * rs * w[c];
    rstd[r] = rs;
  }
}

void RmsNormBackwardCpu(float* dx, float* dw, const float* dy, const float* x, const float* w,
                        const float* rstd, int n, int channels) {
  for (int r = 0; r < n; ++r) {
    size_t off = static_cast<size_t>(r) * channels;
    double s2 = 0.0;
    for (int c = 0; c < channels; ++c) {
      double xh = static_cast<double>(x[off + c]) * rstd[r];
      s2 += dy[off + c] * w[c] * xh;
      dw[c] += static_cast<float>(dy[off + c] * xh);
    }
    s2 /= channels;
    for (int c = 0; c < channels; ++c) {
      double xh = static_cast<double>(x[off + c]) * rstd[r];
      dx[off + c] += static_cast<float>(rstd[r] * (dy[off + c] * w[c] - xh * s2));
    }
  }
}

}  // namespace bm::train::cuda
