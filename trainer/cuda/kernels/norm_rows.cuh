// The norms' row-resident forward, a warp a row (included by layernorm.cu and rmsnorm.cu), the
// dispatch over the widths their row kernels are built for, and the backward row kernels' shared
// loads and block sums.
#pragma once

#include <type_traits>
#include <utility>

#include "trainer/cuda/kernels/common.cuh"

namespace bm::train::cuda {
namespace {  // one copy per .cu file that includes this

// The forward for C = 32 V P (P packs a lane), a warp a row: a lane loads all its packs of the
// row at once and keeps them in registers for the passes over them (the mean and variance for
// LayerNorm, kCentered; the mean square for RMSNorm, whose mean and bias are null), where a
// loop waits on one load at a time and reads the row again for each pass (run 38: LayerNorm
// 0.96 -> 0.76 ms a step on GPT-2 32x1024).
template <typename T, int P, bool kCentered>
__global__ void NormForwardRowKernel(T* y, float* mean_out, float* rstd_out, const T* x, const T* w,
                                     const T* b, int n, float eps) {
  constexpr int V = Pack16<T>::kN, C = 32 * V * P;
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= n) return;
  const T* xr = x + static_cast<size_t>(row) * C;
  Pack16<T> p[P];
#pragma unroll
  for (int j = 0; j < P; ++j) p[j] = Load16(xr + lane * V + j * 32 * V);
  float mean = 0.0f;
  if constexpr (kCentered) {
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < P; ++j) {
#pragma unroll
      for (int k = 0; k < V; ++k) sum += ToF(p[j].v[k]);
    }
    mean = WarpSum(sum) / C;
  }
  float var = 0.0f;
#pragma unroll
  for (int j = 0; j < P; ++j) {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float d = ToF(p[j].v[k]) - mean;
      var += d * d;
    }
  }
  float rstd = rsqrtf(WarpSum(var) / C + eps);
  T* yr = y + static_cast<size_t>(row) * C;
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int c = lane * V + j * 32 * V;
    Pack16<T> pw = Load16(w + c), o;
    if constexpr (kCentered) {
      Pack16<T> pb = Load16(b + c);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        o.v[k] = FromF<T>((ToF(p[j].v[k]) - mean) * rstd * ToF(pw.v[k]) + ToF(pb.v[k]));
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) o.v[k] = FromF<T>(ToF(p[j].v[k]) * rstd * ToF(pw.v[k]));
    }
    Store16(yr + c, o);
  }
  if (lane == 0) {
    if constexpr (kCentered) mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// NormForwardRowKernel on n rows, 4 warps a block: at P = 16 (bf16 C = 4,096) a lane takes 148
// registers, and blocks of 4 warps still fit 3 an SM.
template <typename T, int P, bool kCentered>
void LaunchNormForwardRow(T* y, float* mean, float* rstd, const T* x, const T* w, const T* b, int n,
                          float eps, cudaStream_t stream) {
  constexpr int kWarps = 4;
  NormForwardRowKernel<T, P, kCentered>
      <<<CeilDiv(n, kWarps), kWarps * 32, 0, stream>>>(y, mean, rstd, x, w, b, n, eps);
}

// Calls f(std::integral_constant<int, P>) for the row kernels' P = C / (32 V) when C is a
// whole number of a warp's packs and P is one of Ps; false otherwise.
template <typename T, int... Ps, typename F>
bool WithRowPacks(int channels, std::integer_sequence<int, Ps...>, F&& f) {
  constexpr int kWarpCols = 32 * Pack16<T>::kN;
  const int packs = channels % kWarpCols == 0 ? channels / kWarpCols : 0;
  return ((packs == Ps && (f(std::integral_constant<int, Ps>{}), true)) || ...);
}
// bf16 widths 256 to 2,048 and 4,096 (LLaMA-2-7B's).
using RowPacksBuilt = std::integer_sequence<int, 1, 2, 3, 4, 6, 8, 16>;

// The backward row kernels' shared pieces (LayerNorm's a warp a row, RMSNorm's a warp pair):
// a lane's P packs of one row's dy, x and dx from `off` (32 V apart), all loads issued at once;
// and the block's weight-gradient partial, partial[block][c] = the sum over its kParts staged
// parts in part order (deterministic), the block's threads striding over the C channels.
template <typename T, int P>
__device__ __forceinline__ void LoadBackwardPacks(Pack16<T> (&g)[P], Pack16<T> (&xs)[P],
                                                  Pack16<T> (&d)[P], const T* dy, const T* x,
                                                  const T* dx, size_t off) {
  constexpr int V = Pack16<T>::kN;
#pragma unroll
  for (int j = 0; j < P; ++j) {
    g[j] = Load16(dy + off + j * 32 * V);
    xs[j] = Load16(x + off + j * 32 * V);
    d[j] = Load16(dx + off + j * 32 * V);
  }
}

template <int kParts, int C>
__device__ __forceinline__ void SumStagedParts(const float (&stage)[kParts][C], float* partial) {
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kParts; ++i) sum += stage[i][c];
    partial[static_cast<size_t>(blockIdx.x) * C + c] = sum;
  }
}

}  // namespace
}  // namespace bm::train::cuda
