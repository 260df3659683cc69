#include <algorithm>
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

// The vectorized backward also sums the weight gradient while dy and x are in hand: a block
// takes `rows_per_block` consecutive rows, its warp w the rows w, w + kBwdWarps, ..., and adds
// dy * xhat into
// its own shared-memory row (lanes own disjoint channels: no atomics), laid out so that the
// warp's 32 lanes touch 32 consecutive floats (no bank conflicts): channel c = (j 32 + lane) V
// + k sits at (j V + k) 32 + lane. Then the block sums its warps' rows in warp order into
// partial[block][channels]. The column pass over dy and x (norm_reduce.cuh) is not needed: one
// read of each instead of two.
// The grid is at most kBwdBlocksPerSm blocks per SM, so the partials stay few (the finish
// below reads them all).
constexpr int kBwdWarps = 4, kBwdBlocksPerSm = 2;

template <int V>
__host__ __device__ inline int PaddedChannels(int channels) {
  return (channels + 32 * V - 1) / (32 * V) * (32 * V);
}
template <int V>
__device__ inline int SmemSlot(int c) {
  int j = c / (32 * V), lane = c % (32 * V) / V, k = c % V;
  return (j * V + k) * 32 + lane;
}

template <typename T>
__global__ void RmsNormBackwardVecKernel(T* dx, float* partial, const T* dy, const T* x, const T* w,
                                         const float* rstd_in, int n, int channels,
                                         int rows_per_block) {
  constexpr int V = Pack16<T>::kN;
  extern __shared__ float acc[];  // [kBwdWarps][PaddedChannels], slots as above
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, padded = PaddedChannels<V>(channels);
  float* mine = acc + static_cast<size_t>(warp) * padded;
  for (int i = lane; i < padded; i += 32) mine[i] = 0.0f;
  int first = blockIdx.x * rows_per_block, last = min(n, first + rows_per_block);
  for (int row = first + warp; row < last; row += kBwdWarps) {
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
        float gy = ToF(pg.v[k]);
        float xh = ToF(px.v[k]) * rstd;
        pd.v[k] = FromF<T>(ToF(pd.v[k]) + rstd * (gy * ToF(pw.v[k]) - xh * s2));
        mine[SmemSlot<V>(c + k)] += gy * xh;
      }
      Store16(dx + off + c, pd);
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    float s = 0.0f;
    for (int k = 0; k < kBwdWarps; ++k) s += acc[static_cast<size_t>(k) * padded + SmemSlot<V>(c)];
    partial[static_cast<size_t>(blockIdx.x) * channels + c] = s;
  }
}

// dw[c] += sum over chunks of partial[chunk][c]: block (32, 8) for 32 columns, the 8 rows of
// threads take every 8th chunk, then sum in row order (deterministic).
__global__ void PartialsFinishKernel(float* dw, const float* partial, int chunks, int channels) {
  __shared__ float s[8][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  float acc = 0.0f;
  if (c < channels) {
#pragma unroll 8
    for (int k = threadIdx.y; k < chunks; k += 8)
      acc += partial[static_cast<size_t>(k) * channels + c];
  }
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  float t = 0.0f;
  for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
  dw[c] += t;
}

// Blocks of the fused backward for n rows: kBwdBlocksPerSm per SM at most.
int FusedBackwardBlocks(int n) {
  static int sms = [] {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      return 132;
    return count;
  }();
  return std::min<int>(CeilDiv(n, kBwdWarps), kBwdBlocksPerSm * sms);
}

template <typename T>
size_t FusedBackwardSmem(int channels) {
  return static_cast<size_t>(kBwdWarps) * PaddedChannels<Pack16<T>::kN>(channels) * 4;
}
constexpr size_t kMaxFusedSmem = 160u << 10;

}  // namespace

size_t RmsNormScratchFloats(int n, int channels) {
  size_t fused = static_cast<size_t>(FusedBackwardBlocks(n));
  return std::max(NormChunks(n), fused) * static_cast<size_t>(channels);
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
  size_t smem = FusedBackwardSmem<T>(channels);
  int chunks = 0;
  if (Vectorizable<T>(channels, dx, dy) && Vectorizable<T>(channels, x, w) &&
      smem <= kMaxFusedSmem) {
    static bool opted_in = false;  // once per type: shared memory above 48 KiB is opt-in
    if (!opted_in) {
      BM_CUDA_CHECK(cudaFuncSetAttribute(RmsNormBackwardVecKernel<T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kMaxFusedSmem)),
                    "RmsNormBackwardVecKernel shared memory");
      opted_in = true;
    }
    chunks = FusedBackwardBlocks(n);
    int rows_per_block = static_cast<int>(CeilDiv(n, chunks));
    RmsNormBackwardVecKernel<T><<<chunks, 32 * kBwdWarps, smem, stream>>>(
        dx, scratch, dy, x, w, rstd, n, channels, rows_per_block);
    BM_LAUNCH_CHECK("RmsNormBackwardVecKernel", "N={} C={}", n, channels);
  } else {
    RmsNormBackwardKernel<T><<<CeilDiv(n, 8), 256, 0, stream>>>(dx, dy, x, w, rstd, n, channels);
    BM_LAUNCH_CHECK("RmsNormBackwardKernel", "N={} C={}", n, channels);
    chunks = static_cast<int>(NormChunks(n));
    BM_TRY(LaunchNormColumnPartials<T>(scratch, nullptr, dy, x, nullptr, rstd, n, channels, chunks,
                                       stream));
  }
  PartialsFinishKernel<<<CeilDiv(channels, 32), dim3(32, 8), 0, stream>>>(dw, scratch, chunks,
                                                                          channels);
  BM_LAUNCH_CHECK("PartialsFinishKernel", "N={} C={}", n, channels);
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
