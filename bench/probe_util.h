// What the GPU probes (bench/*_probe.cu) share: stopping with a message on a CUDA error, and
// random-looking bf16 operands, on the host or uploaded (not constant: the tensor cores' power, and
// so the clock under the power cap, depends on the data).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <errno.h>  // program_invocation_short_name (glibc)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bm::bench {

inline void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
                 cudaGetErrorString(e));
    std::exit(1);
  }
}

// n values uniform in [-1, 1), the same for the same seed.
inline std::vector<__nv_bfloat16> RandomBf16(size_t n, uint32_t seed = 12345) {
  std::vector<__nv_bfloat16> h(n);
  uint32_t z = seed;
  for (auto& v : h) {
    z = z * 1664525u + 1013904223u;
    v = __float2bfloat16(static_cast<float>(static_cast<int>(z >> 9) - (1 << 22)) / (1 << 22));
  }
  return h;
}

// A device buffer of n such values (every buffer of the same seed starts with the same ones).
inline __nv_bfloat16* DeviceRandomBf16(size_t n, const char* what, uint32_t seed = 12345) {
  __nv_bfloat16* d = nullptr;
  Check(cudaMalloc(&d, n * 2), what);
  const std::vector<__nv_bfloat16> h = RandomBf16(n, seed);
  Check(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice), what);
  return d;
}

}  // namespace bm::bench
