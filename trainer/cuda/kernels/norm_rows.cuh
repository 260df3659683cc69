// The norms' row-resident kernels (included by layernorm.cu and rmsnorm.cu): the forward a warp
// a row, the backward a group of warps a row with the weight gradients summed in the same pass,
// and the dispatch over the widths they are built for.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/norm_reduce.cuh"

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

// The backward of rows of C = 32 V G P channels (P packs a lane) with the weight (and, for
// LayerNorm, kCentered, the bias) gradient summed in the same pass, so dy and x are read once
// (a loop kernel leaves them to a column pass that reads both again: norm_reduce.cuh). A row
// across a group of G warps: each lane loads all its P packs of its warp's part of dy, x and dx
// at once and keeps its channels' dw (db) sums in registers. The row's sums (sum(dy w xhat),
// and sum(dy w) for LayerNorm) are each warp's shuffle sum, added over the group's warps in warp
// order through shared memory at a named barrier of the group's threads (G = 1: the warp's own,
// no barrier): no block-wide barrier, each group goes through its rows at its own pace. Group g
// of block b takes rows_per_group consecutive rows from (kGroups b + g) rows_per_group; at the
// end the groups' sums are added in group order into partial_w (partial_b)[b][C], for the
// column finish (fixed order: deterministic).
//
// Layouts (NormBackwardRowLayouts): LayerNorm a warp a row up to bf16 C = 768 (run 42: a lane's
// loads and sums take 168 registers at P = 3), RMSNorm a warp pair a row (run 57; a warp a row
// needs the row's 64 dw sums a lane at C = 2,048: run 44), and wider rows over more warps.
template <int G>
__host__ __device__ constexpr int RowGroupsPerBlock() {
  return G <= 4 ? 4 / G : 1;  // blocks of 4 warps where a group fits in them
}
// Blocks an SM the kernel is compiled for (registers): 3 of 128 threads where a lane holds
// LayerNorm's two sets of sums or P >= 4 packs (168 registers), else 4.
template <int G, int P, bool kCentered>
__host__ __device__ constexpr int RowBackwardMinBlocks() {
  const int threads = 32 * G * RowGroupsPerBlock<G>();
  const int resident = (kCentered || P >= 4) ? 384 : 512;
  return resident / threads > 1 ? resident / threads : 1;
}

template <typename T, int G, int P, bool kCentered>
__global__ void __launch_bounds__(32 * G * RowGroupsPerBlock<G>(),
                                  RowBackwardMinBlocks<G, P, kCentered>())
    NormBackwardRowKernel(T* dx, float* partial_w, float* partial_b, const T* dy, const T* x,
                          const T* w, const float* mean_in, const float* rstd_in, int n,
                          int rows_per_group) {
  constexpr int V = Pack16<T>::kN, H = 32 * V * P, C = G * H, kGroups = RowGroupsPerBlock<G>();
  constexpr int kSums = kCentered ? 2 : 1;
  // Two slots by row parity: a warp writes a slot again only after the whole group passed the
  // barrier of the row between, so after every partner read it.
  __shared__ float part_sums[2][kGroups][G][kSums];
  __shared__ float stage[kGroups][C];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = warp / G, part = warp % G;
  const int base = part * H + lane * V;  // the lane's first channel
  Pack16<T> pw[P];
#pragma unroll
  for (int j = 0; j < P; ++j) pw[j] = Load16(w + base + j * 32 * V);
  float aw[P][V] = {}, ab[kCentered ? P : 1][V] = {};
  const int first = (blockIdx.x * kGroups + group) * rows_per_group;
  const int last = min(n, first + rows_per_group);
  for (int row = first; row < last; ++row) {
    const size_t off = static_cast<size_t>(row) * C + base;
    Pack16<T> pg[P], px[P], pd[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
      pg[j] = Load16(dy + off + j * 32 * V);
      px[j] = Load16(x + off + j * 32 * V);
      pd[j] = Load16(dx + off + j * 32 * V);
    }
    const float mean = kCentered ? mean_in[row] : 0.0f, rstd = rstd_in[row];
    float s1 = 0.0f, s2 = 0.0f;  // sum(dy w), sum(dy w xhat)
#pragma unroll
    for (int j = 0; j < P; ++j) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float gy = ToF(pg[j].v[k]);
        if constexpr (kCentered) {
          const float g = gy * ToF(pw[j].v[k]), xh = (ToF(px[j].v[k]) - mean) * rstd;
          s1 += g;
          s2 += g * xh;
          aw[j][k] += gy * xh;
          ab[j][k] += gy;
        } else {
          s2 += gy * ToF(pw[j].v[k]) * ToF(px[j].v[k]) * rstd;
        }
      }
    }
    s2 = WarpSum(s2);
    if constexpr (kCentered) s1 = WarpSum(s1);
    if constexpr (G > 1) {
      float(&slot)[G][kSums] = part_sums[row & 1][group];
      if (lane == 0) {
        slot[part][0] = s2;
        if constexpr (kCentered) slot[part][1] = s1;
      }
      asm volatile("bar.sync %0, %1;" ::"r"(1 + group), "n"(32 * G) : "memory");
      s2 = slot[0][0];
      if constexpr (kCentered) s1 = slot[0][1];
#pragma unroll
      for (int i = 1; i < G; ++i) {
        s2 += slot[i][0];
        if constexpr (kCentered) s1 += slot[i][1];
      }
    }
    s1 /= C;
    s2 /= C;
#pragma unroll
    for (int j = 0; j < P; ++j) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float gy = ToF(pg[j].v[k]);
        if constexpr (kCentered) {
          const float g = gy * ToF(pw[j].v[k]), xh = (ToF(px[j].v[k]) - mean) * rstd;
          pd[j].v[k] = FromF<T>(ToF(pd[j].v[k]) + rstd * (g - s1 - xh * s2));
        } else {
          const float xh = ToF(px[j].v[k]) * rstd;
          pd[j].v[k] = FromF<T>(ToF(pd[j].v[k]) + rstd * (gy * ToF(pw[j].v[k]) - xh * s2));
          aw[j][k] += gy * xh;
        }
      }
      Store16(dx + off + j * 32 * V, pd[j]);
    }
  }
  const auto block_sum = [&](const auto& acc, float* partial) {
#pragma unroll
    for (int j = 0; j < P; ++j) {
#pragma unroll
      for (int k = 0; k < V; ++k) stage[group][base + j * 32 * V + k] = acc[j][k];
    }
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < kGroups; ++i) sum += stage[i][c];
      partial[static_cast<size_t>(blockIdx.x) * C + c] = sum;
    }
  };
  block_sum(aw, partial_w);
  if constexpr (kCentered) {
    __syncthreads();
    block_sum(ab, partial_b);
  }
}

// A row of G warps of P packs a lane (C = 32 V G P).
template <int G, int P>
struct RowLayout {
  static constexpr int kWarps = G, kPacks = P;
};
// The layouts built, first match by width: LayerNorm (kCentered) a warp a row while a lane holds
// at most 24 channels (bf16 C <= 768, fp32 <= 512), RMSNorm a warp pair up to 4 packs a lane
// (bf16 C <= 2,048); then 2, 4 and 8 warps a row: bf16 1,024 to 4,096 (LLaMA-2-7B's, GPT-3
// 6.7B's) and 5,120 (GPT-3 13B's) at 10.
template <bool kCentered>
using NormBackwardRowLayouts = std::conditional_t<
    kCentered,
    std::tuple<RowLayout<1, 1>, RowLayout<1, 2>, RowLayout<1, 3>, RowLayout<1, 4>, RowLayout<2, 2>,
               RowLayout<2, 3>, RowLayout<4, 2>, RowLayout<4, 3>, RowLayout<8, 2>,
               RowLayout<10, 2>>,
    std::tuple<RowLayout<2, 1>, RowLayout<2, 2>, RowLayout<2, 3>, RowLayout<2, 4>, RowLayout<4, 3>,
               RowLayout<4, 4>, RowLayout<10, 2>>>;

template <typename T, typename L, bool kCentered>
constexpr bool RowLayoutFits() {
  return L::kPacks * Pack16<T>::kN <= (kCentered ? 24 : 32);
}

// Launches NormBackwardRowKernel for the first layout built for `channels` (partial_w at
// scratch, partial_b after its rows); returns the blocks (the partial rows written), or 0 where
// none is: as many blocks as are resident at once, at most RowBlocks(n) (the scratch's rows).
template <typename T, bool kCentered>
int LaunchNormBackwardRows(T* dx, float* scratch, const T* dy, const T* x, const T* w,
                           const float* mean, const float* rstd, int n, int channels,
                           cudaStream_t stream) {
  constexpr int kWarpCols = 32 * Pack16<T>::kN;
  const int packs = channels % kWarpCols == 0 ? channels / kWarpCols : 0;
  int blocks = 0;
  const auto launch = [&](auto layout) {
    using L = decltype(layout);
    if constexpr (RowLayoutFits<T, L, kCentered>()) {
      constexpr int G = L::kWarps, P = L::kPacks, kGroups = RowGroupsPerBlock<G>();
      constexpr int threads = 32 * G * kGroups;
      static const int per_sm =
          RowKernelBlocksPerSm(NormBackwardRowKernel<T, G, P, kCentered>, threads);
      blocks = ResidentRowBlocks(per_sm, n, kGroups);
      NormBackwardRowKernel<T, G, P, kCentered><<<blocks, threads, 0, stream>>>(
          dx, scratch, scratch + static_cast<size_t>(blocks) * channels, dy, x, w, mean, rstd, n,
          static_cast<int>(CeilDiv(n, static_cast<size_t>(blocks) * kGroups)));
      return true;
    }
    return false;
  };
  std::apply(
      [&](auto... layouts) {
        (void)((packs == decltype(layouts)::kWarps * decltype(layouts)::kPacks &&
                launch(layouts)) ||
               ...);
      },
      NormBackwardRowLayouts<kCentered>{});
  return blocks;
}

}  // namespace
}  // namespace bm::train::cuda
