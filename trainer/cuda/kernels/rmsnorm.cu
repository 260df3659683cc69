#include <algorithm>
#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/norm_reduce.cuh"
#include "trainer/cuda/kernels/norm_rows.cuh"
#include "trainer/cuda/kernels/rmsnorm.cuh"

namespace bm::train::cuda {
namespace {

// ---- kernels: one warp per row.

template <typename T>
__global__ void RmsNormForwardKernel(T* y, float* rstd_out, const T* x, const T* w, int n,
                                     int channels, float eps) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* xr = x + static_cast<size_t>(row) * channels;
  float ss = 0.0f;
  for (int c = lane; c < channels; c += 32) {
    float v = ToF(xr[c]);
    ss += v * v;
  }
  float rstd = rsqrtf(WarpSum(ss) / channels + eps);
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

// Vectorized, for the widths NormForwardRowKernel (norm_rows.cuh) is not built for: like the
// backward below, a block of C / V threads covers a row (thread t owns the V channels t V ..)
// and takes `rows_per_block` rows one after the other; x is read once (kept in registers
// across the row's block-wide sum of squares). A block-wide sum a row, with one pack a thread
// in flight, left LLaMA 1B's forward at 2.6 TB/s (1.73 ms a step at 8x2048).
template <typename T>
__global__ void RmsNormForwardVecKernel(T* y, float* rstd_out, const T* x, const T* w, int n,
                                        int channels, int rows_per_block, float eps) {
  constexpr int V = Pack16<T>::kN;
  __shared__ float red[32];
  int c = threadIdx.x * V;
  bool on = c < channels;
  Pack16<T> pw{};
  if (on) pw = Load16(w + c);
  int first = blockIdx.x * rows_per_block, last = min(n, first + rows_per_block);
  for (int row = first; row < last; ++row) {
    size_t off = static_cast<size_t>(row) * channels + c;
    Pack16<T> px{};
    float ss = 0.0f;
    if (on) {
      px = Load16(x + off);
#pragma unroll
      for (int k = 0; k < V; ++k) ss += ToF(px.v[k]) * ToF(px.v[k]);
    }
    float rstd = rsqrtf(BlockSum(ss, red) / channels + eps);
    if (threadIdx.x == 0) rstd_out[row] = rstd;
    if (!on) continue;
    Pack16<T> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = FromF<T>(ToF(px.v[k]) * rstd * ToF(pw.v[k]));
    Store16(y + off, o);
  }
}

// The vectorized backward also sums the weight gradient while dy and x are in hand. A block
// of C / V threads covers a row (thread t owns the V channels t V ..), takes
// `rows_per_block` consecutive rows one after the other (a block-wide sum per row for
// sum(dy w xhat)), keeps its channels' sums of dy * xhat in registers and writes them to
// partial[block][channels] at the end: one read of dy and x instead of two (no column pass,
// norm_reduce.cuh), no shared-memory accumulators, fixed order (deterministic). RowBlocks(n)
// blocks, so the partials stay few (the finish reads them all).

template <typename T>
__global__ void RmsNormBackwardVecKernel(T* dx, float* partial, const T* dy, const T* x, const T* w,
                                         const float* rstd_in, int n, int channels,
                                         int rows_per_block) {
  constexpr int V = Pack16<T>::kN;
  __shared__ float red[32];
  int c = threadIdx.x * V;
  bool on = c < channels;
  Pack16<T> pw{};
  if (on) pw = Load16(w + c);
  float aw[V] = {};
  int first = blockIdx.x * rows_per_block, last = min(n, first + rows_per_block);
  for (int row = first; row < last; ++row) {
    size_t off = static_cast<size_t>(row) * channels + c;
    float rstd = rstd_in[row];
    Pack16<T> pg{}, px{}, pd{};
    float s2 = 0.0f;
    if (on) {
      pg = Load16(dy + off), px = Load16(x + off), pd = Load16(dx + off);
#pragma unroll
      for (int k = 0; k < V; ++k) s2 += ToF(pg.v[k]) * ToF(pw.v[k]) * ToF(px.v[k]) * rstd;
    }
    s2 = BlockSum(s2, red) / channels;
    if (!on) continue;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float gy = ToF(pg.v[k]);
      float xh = ToF(px.v[k]) * rstd;
      pd.v[k] = FromF<T>(ToF(pd.v[k]) + rstd * (gy * ToF(pw.v[k]) - xh * s2));
      aw[k] += gy * xh;
    }
    Store16(dx + off, pd);
  }
  if (!on) return;
#pragma unroll
  for (int k = 0; k < V; ++k) partial[static_cast<size_t>(blockIdx.x) * channels + c + k] = aw[k];
}

// Threads of a row-covering block (0: the channels do not fit one block).
template <typename T>
int RowBlockThreads(int channels) {
  int threads = (channels / Pack16<T>::kN + 31) / 32 * 32;
  return threads <= 1024 ? threads : 0;
}

}  // namespace

size_t RmsNormScratchFloats(int n, int channels) {
  size_t fused = static_cast<size_t>(RowBlocks(n));
  return std::max(NormChunks(n), fused) * static_cast<size_t>(channels);
}

// ---- launchers

template <typename T>
Status RmsNormForward(T* y, float* rstd, const T* x, const T* w, int n, int channels,
                      cudaStream_t stream, float eps) {
  if (n == 0) return Status::Ok();
  const int threads = RowBlockThreads<T>(channels);
  const bool vec = Vectorizable<T>(channels, x, y) && Vectorizable<T>(channels, w);
  const auto row_kernel = [&](auto p) {
    LaunchNormForwardRow<T, decltype(p)::value, false>(y, nullptr, rstd, x, w, nullptr, n, eps,
                                                       stream);
  };
  if (vec && WithRowPacks<T>(channels, RowPacksBuilt{}, row_kernel)) {
    // launched
  } else if (vec && threads > 0) {
    int blocks = RowBlocks(n);
    int rows_per_block = static_cast<int>(CeilDiv(n, blocks));
    RmsNormForwardVecKernel<T>
        <<<blocks, threads, 0, stream>>>(y, rstd, x, w, n, channels, rows_per_block, eps);
  } else {
    RmsNormForwardKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(y, rstd, x, w, n, channels, eps);
  }
  BM_LAUNCH_CHECK("RmsNormForwardKernel", "N={} C={}", n, channels);
  return Status::Ok();
}

template <typename T>
Status RmsNormBackward(T* dx, float* dw, float* scratch, const T* dy, const T* x, const T* w,
                       const float* rstd, int n, int channels, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  int threads = RowBlockThreads<T>(channels);
  int chunks = 0;
  const bool vec = Vectorizable<T>(channels, dx, dy) && Vectorizable<T>(channels, x, w);
  if (vec && (chunks = LaunchNormBackwardRows<T, false>(dx, scratch, dy, x, w, nullptr, rstd, n,
                                                        channels, stream)) > 0) {
    BM_LAUNCH_CHECK("NormBackwardRowKernel", "N={} C={}", n, channels);
  } else if (vec && threads > 0) {
    chunks = RowBlocks(n);
    int rows_per_block = static_cast<int>(CeilDiv(n, chunks));
    RmsNormBackwardVecKernel<T>
        <<<chunks, threads, 0, stream>>>(dx, scratch, dy, x, w, rstd, n, channels, rows_per_block);
    BM_LAUNCH_CHECK("RmsNormBackwardVecKernel", "N={} C={}", n, channels);
  } else {
    RmsNormBackwardKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(dx, dy, x, w, rstd, n, channels);
    BM_LAUNCH_CHECK("RmsNormBackwardKernel", "N={} C={}", n, channels);
    chunks = static_cast<int>(NormChunks(n));
    BM_TRY(LaunchNormColumnPartials<T>(scratch, nullptr, dy, x, nullptr, rstd, n, channels, chunks,
                                       stream));
  }
  BM_TRY(LaunchNormColumnFinish(dw, nullptr, scratch, nullptr, chunks, channels, stream));
  return Status::Ok();
}

template Status RmsNormForward<float>(float*, float*, const float*, const float*, int, int,
                                      cudaStream_t, float);
template Status RmsNormForward<bf16>(bf16*, float*, const bf16*, const bf16*, int, int,
                                     cudaStream_t, float);
template Status RmsNormForward<fp16>(fp16*, float*, const fp16*, const fp16*, int, int,
                                     cudaStream_t, float);
template Status RmsNormBackward<float>(float*, float*, float*, const float*, const float*,
                                       const float*, const float*, int, int, cudaStream_t);
template Status RmsNormBackward<bf16>(bf16*, float*, float*, const bf16*, const bf16*, const bf16*,
                                      const float*, int, int, cudaStream_t);
template Status RmsNormBackward<fp16>(fp16*, float*, float*, const fp16*, const fp16*, const fp16*,
                                      const float*, int, int, cudaStream_t);

// ---- CPU twins

void RmsNormForwardCpu(float* y, float* rstd, const float* x, const float* w, int n, int channels,
                       float eps) {
  for (int r = 0; r < n; ++r) {
    const float* xr = x + static_cast<size_t>(r) * channels;
    double ss = 0.0;
    for (int c = 0; c < channels; ++c) ss += static_cast<double>(xr[c]) * xr[c];
    float rs = static_cast<float>(1.0 / std::sqrt(ss / channels + eps));
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
