// Checked calls into CUDA, cuBLASLt and cuDNN: every call returns a bm::Status that names
// the call, the error and the shapes involved. Nothing here aborts or calls exit().
//
//   BM_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, kind, s), "copy {} bytes", n);
//   BM_CUBLAS_CHECK(cublasLtMatmul(...), "matmul m={} n={} k={}", m, n, k);
//   BM_LAUNCH_CHECK("layernorm_forward", "N={} C={}", n, c);   // after a <<<>>> launch
//
// The format arguments are evaluated only when the call failed, so the macros cost nothing
// on the hot path. Each macro returns from the enclosing function (which must return
// Status or Result<T>).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "base/result.h"

namespace bm::train::cuda {

// Builds the error status for a failed call; `what` describes the operands.
Status CudaError(cudaError_t error, std::string_view call, std::string_view what);
Status CublasError(cublasStatus_t status, std::string_view call, std::string_view what);

}  // namespace bm::train::cuda

#define BM_CUDA_CHECK(call, ...)                                                          \
  do {                                                                                    \
    cudaError_t bm_cuda_err_ = (call);                                                    \
    if (bm_cuda_err_ != cudaSuccess)                                                      \
      return ::bm::train::cuda::CudaError(bm_cuda_err_, #call, fmt::format(__VA_ARGS__)); \
  } while (0)

#define BM_CUBLAS_CHECK(call, ...)                                                           \
  do {                                                                                       \
    cublasStatus_t bm_cublas_st_ = (call);                                                   \
    if (bm_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                              \
      return ::bm::train::cuda::CublasError(bm_cublas_st_, #call, fmt::format(__VA_ARGS__)); \
  } while (0)

// After a kernel launch: a bad configuration shows up in cudaGetLastError().
#define BM_LAUNCH_CHECK(kernel, ...)                                                       \
  do {                                                                                     \
    cudaError_t bm_cuda_err_ = cudaGetLastError();                                         \
    if (bm_cuda_err_ != cudaSuccess)                                                       \
      return ::bm::train::cuda::CudaError(bm_cuda_err_, kernel, fmt::format(__VA_ARGS__)); \
  } while (0)
