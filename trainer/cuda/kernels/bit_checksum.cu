#include <cstring>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/bit_checksum.cuh"
#include "trainer/cuda/kernels/common.cuh"

namespace bm::train::cuda {
namespace {

__global__ void BitChecksumKernel(unsigned long long* out, const uint32_t* words, size_t n) {
  unsigned long long acc = 0;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    acc += static_cast<unsigned long long>(words[i]) * (2 * i + 1);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, acc);  // integer sums: any order, same result
}

}  // namespace

Status BitChecksum(unsigned long long* out, const void* data, size_t bytes, cudaStream_t stream) {
  BM_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(*out), stream), "checksum of {} bytes", bytes);
  size_t n = bytes / 4;
  if (n == 0) return Status::Ok();
  unsigned blocks = std::min<unsigned>(CeilDiv(n, 256), 1024);
  BitChecksumKernel<<<blocks, 256, 0, stream>>>(out, static_cast<const uint32_t*>(data), n);
  BM_LAUNCH_CHECK("BitChecksumKernel", "bytes={}", bytes);
  return Status::Ok();
}

uint64_t BitChecksumCpu(const void* data, size_t bytes) {
  uint64_t acc = 0;
  for (size_t i = 0; i < bytes / 4; ++i) {
    uint32_t w;
    std::memcpy(&w, static_cast<const char*>(data) + 4 * i, 4);
    acc += static_cast<uint64_t>(w) * (2 * i + 1);
  }
  return acc;
}

}  // namespace bm::train::cuda
