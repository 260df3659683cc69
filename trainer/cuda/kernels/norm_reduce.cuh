// Column reductions for the norm backward passes (included by layernorm.cu and rmsnorm.cu):
// weight and bias gradients summed over rows deterministically, in two stages (per chunk of rows
// into a scratch, then over chunks in order).
#pragma once

#include <algorithm>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"

namespace bm::train::cuda {
namespace {  // one copy per .cu file that includes this

constexpr int kNormRowsPerChunk = 256;

size_t NormChunks(int n) { return (n + kNormRowsPerChunk - 1) / kNormRowsPerChunk; }

// The SMs of the current device (132 when it cannot be asked: the scratch sizes of a plan made
// without a GPU).
int DeviceSms() {
  static int sms = [] {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      return 132;
    return count;
  }();
  return sms;
}

// The backward kernels that sum the weight gradient in their row pass write one partial row per
// block; they run at most kRowBlocksPerSm blocks an SM, RowBlocks(n) in all, so the partials
// stay few (the finish below reads them all).
constexpr int kRowBlocksPerSm = 8;

int RowBlocks(int n) { return std::min(n, kRowBlocksPerSm * DeviceSms()); }

// Blocks of `threads` of a row kernel that one SM holds at once (1 to kRowBlocksPerSm); the
// caller keeps it (a static per kernel instantiation).
template <typename Kernel>
int RowKernelBlocksPerSm(Kernel kernel, int threads) {
  int blocks = 1;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0) != cudaSuccess)
    blocks = 1;
  return std::clamp(blocks, 1, kRowBlocksPerSm);
}

// A row kernel's blocks for n rows, `rows_a_block` at least each: as many as the SMs hold at
// once (per_sm each), at most RowBlocks(n).
int ResidentRowBlocks(int per_sm, int n, int rows_a_block) {
  return std::min({static_cast<int>(CeilDiv(n, rows_a_block)), per_sm * DeviceSms(), RowBlocks(n)});
}

// Stage 1: grid (ceil(C/32), chunks), block (32, 8). partial_w[chunk][c] = sum over the
// chunk's rows of dy * xhat, partial_b[chunk][c] = sum of dy (when partial_b is non-null).
// xhat = (x - mean) * rstd (mean null for RMSNorm).
template <typename T>
__global__ void NormColumnPartialsKernel(float* partial_w, float* partial_b, const T* dy,
                                         const T* x, const float* mean, const float* rstd, int n,
                                         int channels) {
  __shared__ float sw[8][33];
  __shared__ float sb[8][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  int begin = blockIdx.y * kNormRowsPerChunk;
  int end = min(n, begin + kNormRowsPerChunk);
  float aw = 0.0f, ab = 0.0f;
  if (c < channels) {
    for (int r = begin + threadIdx.y; r < end; r += 8) {
      size_t i = static_cast<size_t>(r) * channels + c;
      float g = ToF(dy[i]);
      float xh = (ToF(x[i]) - (mean ? mean[r] : 0.0f)) * rstd[r];
      aw += g * xh;
      ab += g;
    }
  }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float w = 0.0f, b = 0.0f;
    for (int k = 0; k < 8; ++k) {
      w += sw[k][threadIdx.x];
      b += sb[k][threadIdx.x];
    }
    partial_w[static_cast<size_t>(blockIdx.y) * channels + c] = w;
    if (partial_b) partial_b[static_cast<size_t>(blockIdx.y) * channels + c] = b;
  }
}

// Stage 1, vectorized: block (32, 8); thread x owns V = 16 / sizeof(T) consecutive channels,
// grid (ceil(C / (32 V)), chunks).
template <typename T>
__global__ void NormColumnPartialsVecKernel(float* partial_w, float* partial_b, const T* dy,
                                            const T* x, const float* mean, const float* rstd, int n,
                                            int channels) {
  constexpr int V = Pack16<T>::kN;
  __shared__ float sw[8][32 * V + 1];
  __shared__ float sb[8][32 * V + 1];
  int c0 = (blockIdx.x * 32 + threadIdx.x) * V;
  int begin = blockIdx.y * kNormRowsPerChunk;
  int end = min(n, begin + kNormRowsPerChunk);
  float aw[V] = {}, ab[V] = {};
  if (c0 < channels) {
    for (int r = begin + threadIdx.y; r < end; r += 8) {
      size_t i = static_cast<size_t>(r) * channels + c0;
      Pack16<T> g = Load16(dy + i), xv = Load16(x + i);
      float m = mean ? mean[r] : 0.0f, rs = rstd[r];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float gk = ToF(g.v[k]);
        aw[k] += gk * (ToF(xv.v[k]) - m) * rs;
        ab[k] += gk;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    sw[threadIdx.y][threadIdx.x * V + k] = aw[k];
    sb[threadIdx.y][threadIdx.x * V + k] = ab[k];
  }
  __syncthreads();
  // 256 threads finish 32 V columns: thread t sums column t (and t + 256 when V = 8... V*32 <=
  // 256).
  int t = threadIdx.y * 32 + threadIdx.x;
  for (int col = t; col < 32 * V; col += 256) {
    int c = blockIdx.x * 32 * V + col;
    if (c >= channels) continue;
    float w = 0.0f, b = 0.0f;
    for (int k = 0; k < 8; ++k) {
      w += sw[k][col];
      b += sb[k][col];
    }
    partial_w[static_cast<size_t>(blockIdx.y) * channels + c] = w;
    if (partial_b) partial_b[static_cast<size_t>(blockIdx.y) * channels + c] = b;
  }
}

template <typename T>
Status LaunchNormColumnPartials(float* pw, float* pb, const T* dy, const T* x, const float* mean,
                                const float* rstd, int n, int channels, int chunks,
                                cudaStream_t stream) {
  constexpr int V = Pack16<T>::kN;
  if (Vectorizable<T>(channels, dy, x)) {
    NormColumnPartialsVecKernel<T>
        <<<dim3(CeilDiv(channels, 32 * V), chunks), dim3(32, 8), 0, stream>>>(pw, pb, dy, x, mean,
                                                                              rstd, n, channels);
  } else {
    NormColumnPartialsKernel<T><<<dim3(CeilDiv(channels, 32), chunks), dim3(32, 8), 0, stream>>>(
        pw, pb, dy, x, mean, rstd, n, channels);
  }
  BM_LAUNCH_CHECK("NormColumnPartialsKernel", "N={} C={}", n, channels);
  return Status::Ok();
}

// Stage 2: dw[c] += sum over chunks of partial_w[chunk][c] (and db likewise when given).
// Block (32, kFinishRows) for 32 columns: thread row y takes every kFinishRows-th chunk from
// y, eight loads issued at a time; then the rows' sums are added in row order (deterministic).
// The chunks are many where the rows are few (RmsNormBackward keeps one per row block, 8 a SM:
// 1,056 on 132 SMs), so the depth of this loop, not the bytes, sets the kernel's time.
constexpr int kFinishRows = 32;

__global__ void NormColumnFinishKernel(float* dw, float* db, const float* partial_w,
                                       const float* partial_b, int chunks, int channels) {
  __shared__ float sw[kFinishRows][33];
  __shared__ float sb[kFinishRows][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  float w = 0.0f, b = 0.0f;
  if (c < channels) {
#pragma unroll 8
    for (int k = threadIdx.y; k < chunks; k += kFinishRows) {
      w += partial_w[static_cast<size_t>(k) * channels + c];
      if (db) b += partial_b[static_cast<size_t>(k) * channels + c];
    }
  }
  sw[threadIdx.y][threadIdx.x] = w;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  float tw = 0.0f, tb = 0.0f;
  for (int k = 0; k < kFinishRows; ++k) {
    tw += sw[k][threadIdx.x];
    tb += sb[k][threadIdx.x];
  }
  dw[c] += tw;
  if (db) db[c] += tb;
}

Status LaunchNormColumnFinish(float* dw, float* db, const float* partial_w, const float* partial_b,
                              int chunks, int channels, cudaStream_t stream) {
  NormColumnFinishKernel<<<CeilDiv(channels, 32), dim3(32, kFinishRows), 0, stream>>>(
      dw, db, partial_w, partial_b, chunks, channels);
  BM_LAUNCH_CHECK("NormColumnFinishKernel", "chunks={} C={}", chunks, channels);
  return Status::Ok();
}

}  // namespace
}  // namespace bm::train::cuda
