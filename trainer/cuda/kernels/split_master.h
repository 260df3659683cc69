// An fp32 master weight as two 16-bit halves, for RunSpec::split_masters: `hi` is the bf16
// working copy (the fp32 value rounded to bf16, ties away from zero) and `lo` the fp32 value's
// low 16 bits. JoinMaster(hi, lo) gives the fp32 bits back exactly: when the low half is at
// least 0x8000 the high half was rounded up, and the join takes that carry back. So the
// masters take 2 bytes per parameter beside the working copy instead of 4 (PERFORMANCE.md,
// issue 16's plan), and AdamW rebuilds the exact fp32 value it updates.
//
// The working copy is rounded this way with or without the split (AdamW and the first cast
// of the masters), so the two give the same bits. It differs from round-to-nearest-even only
// at exact ties (a low half of 0x8000). Infinities and NaNs keep their class.
//
// Host and device (included by kernels and by the CPU tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define BM_SPLIT_HD __host__ __device__ __forceinline__
#else
#define BM_SPLIT_HD inline
#endif

namespace bm::train::cuda {

BM_SPLIT_HD uint32_t FloatBits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
#endif
}

BM_SPLIT_HD float BitsFloat(uint32_t b) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(b);
#else
  float x;
  std::memcpy(&x, &b, 4);
  return x;
#endif
}

// The bf16 bits of x rounded to nearest, ties away from zero (the carry of a mantissa of all
// ones goes into the exponent, as it should); infinities and NaNs truncated (a NaN stays one).
BM_SPLIT_HD uint16_t MasterHigh(uint32_t bits) {
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | ((bits & 0xffffu) ? 0x0040u : 0u));
  return static_cast<uint16_t>((bits >> 16) + ((bits >> 15) & 1u));
}

BM_SPLIT_HD uint16_t MasterLow(uint32_t bits) { return static_cast<uint16_t>(bits & 0xffffu); }

// A low half of 0x8000 or more means the high half was rounded up (also into an infinity, from
// the largest finite values), except where the high half is a NaN (truncated, not rounded).
BM_SPLIT_HD uint32_t JoinMaster(uint16_t hi, uint16_t lo) {
  const uint32_t bits = (static_cast<uint32_t>(hi) << 16) + lo;
  const bool nan = (hi & 0x7fffu) > 0x7f80u;
  return (lo & 0x8000u) && !nan ? bits - 0x10000u : bits;
}

// Host loops (setting and reading the masters).
inline void SplitMastersCpu(const float* p, size_t n, uint16_t* hi, uint16_t* lo) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = FloatBits(p[i]);
    hi[i] = MasterHigh(b);
    if (lo) lo[i] = MasterLow(b);
  }
}

inline void JoinMastersCpu(const uint16_t* hi, const uint16_t* lo, size_t n, float* p) {
  for (size_t i = 0; i < n; ++i) p[i] = BitsFloat(JoinMaster(hi[i], lo[i]));
}

}  // namespace bm::train::cuda
