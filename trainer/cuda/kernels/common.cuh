// Device helpers shared by the kernel files (included by .cu files only): element type
// conversion, warp and block reductions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <initializer_list>

namespace bm::train::cuda {

using bf16 = __nv_bfloat16;
using fp16 = __half;

__device__ __forceinline__ float ToF(float x) { return x; }
__device__ __forceinline__ float ToF(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float ToF(fp16 x) { return __half2float(x); }
template <typename T>
__device__ __forceinline__ T FromF(float x);
template <>
__device__ __forceinline__ float FromF<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 FromF<bf16>(float x) {
  return __float2bfloat16_rn(x);
}
// Round to nearest even; beyond fp16's range (65504) it gives +-inf, which the fp16 loss
// scaler then sees as an overflow.
template <>
__device__ __forceinline__ fp16 FromF<fp16>(float x) {
  return __float2half_rn(x);
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. Fixed order: deterministic. `shared` holds 32 floats.
__device__ __forceinline__ float BlockSum(float v, float* shared) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpSum(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : 0.0f;
  return WarpSum(v);
}
__device__ __forceinline__ float BlockMax(float v, float* shared) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -INFINITY;
  return WarpMax(v);
}

inline unsigned CeilDiv(size_t a, size_t b) { return static_cast<unsigned>((a + b - 1) / b); }

// Four consecutive elements, one vector load or store (4 floats: 16 bytes; 4 16-bit: 8).
template <typename T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};
template <typename T>
__device__ __forceinline__ Four<T> Load4(const T* p) {
  return *reinterpret_cast<const Four<T>*>(p);
}
template <typename T>
__device__ __forceinline__ void Store4(T* p, const Four<T>& x) {
  *reinterpret_cast<Four<T>*>(p) = x;
}
// Whether every pointer given can be read or written as Four<T> of its own type from element 0
// (16-byte alignment covers both widths).
inline bool FourAligned(std::initializer_list<const void*> ps) {
  for (const void* p : ps)
    if (reinterpret_cast<size_t>(p) & 15) return false;
  return true;
}

// Elementwise kernels over n elements, four at a time where every pointer is FourAligned: one
// thread a group (blocks of 256, ElementwiseBlocks), f4(i) for the group from i, f1(i) for each
// of the last n % 4 (or for each element when not `four`). A quarter of the threads and blocks
// of one thread an element: the casts at ZeRO-3's gather time run on the communication stream
// beside the compute stream's kernels, and a full grid of small blocks takes every SM a product
// frees between its waves (cuda_data_parallel.h).
inline unsigned ElementwiseBlocks(size_t n, bool four) {
  return CeilDiv(four ? (n + 3) / 4 : n, 256);
}
template <typename F4, typename F1>
__device__ __forceinline__ void ForEachElement(size_t n, bool four, F4 f4, F1 f1) {
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (!four) {
    if (t < n) f1(t);
    return;
  }
  const size_t groups = n / 4;
  if (t < groups) f4(4 * t);
  if (t < n - 4 * groups) f1(4 * groups + t);
}

}  // namespace bm::train::cuda

namespace bm::train::cuda {

// 16 bytes of T (8 bf16 / fp16 or 4 floats): one vector load or store.
template <typename T>
struct alignas(16) Pack16 {
  static constexpr int kN = 16 / sizeof(T);
  T v[kN];
};
template <typename T>
__device__ __forceinline__ Pack16<T> Load16(const T* p) {
  return *reinterpret_cast<const Pack16<T>*>(p);
}
template <typename T>
__device__ __forceinline__ void Store16(T* p, const Pack16<T>& x) {
  *reinterpret_cast<Pack16<T>*>(p) = x;
}
// Whether rows of `cols` elements can be read as Pack16 (bases 16-byte aligned).
template <typename T>
inline bool Vectorizable(int cols, const void* p0 = nullptr, const void* p1 = nullptr) {
  auto aligned = [](const void* p) { return (reinterpret_cast<size_t>(p) & 15) == 0; };
  return cols % Pack16<T>::kN == 0 && aligned(p0) && aligned(p1);
}

}  // namespace bm::train::cuda
