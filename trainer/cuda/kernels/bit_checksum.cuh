// BitChecksum: a 64-bit fingerprint of a buffer's bits, order-independent and exact (integer
// sums), so equal fingerprints mean equal bytes with overwhelming probability. The matmul
// tuner compares candidate algorithms' outputs with it (matmul.h).
//
//   checksum = sum over 32-bit words w_i of  w_i * (2 i + 1)   (mod 2^64)
//
// `bytes` must be a multiple of 4; *out is overwritten.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "base/result.h"

namespace bm::train::cuda {

Status BitChecksum(unsigned long long* out, const void* data, size_t bytes, cudaStream_t stream);

// ---- CPU twin
uint64_t BitChecksumCpu(const void* data, size_t bytes);

}  // namespace bm::train::cuda
