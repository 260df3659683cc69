// bf16 on the host: fp32's top half, rounded to nearest even (as CUDA's __float2bfloat16 and
// PyTorch's conversion round; a NaN stays a NaN). Gloo's bf16 sums (gloo_communicator.cc) and the
// CPU's gradients summed in bf16 (trainer/cpu/data_parallel.h) convert with these.
#pragma once

#include <cstdint>
#include <cstring>

namespace bm::train::dist {

inline float Bf16ToFloat(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace bm::train::dist
