#include "trainer/cuda/check.h"

namespace bm::train::cuda {

Status CudaError(cudaError_t error, std::string_view call, std::string_view what) {
  ErrorCode code = error == cudaErrorMemoryAllocation ? ErrorCode::kUnavailable
                   : error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver
                       ? ErrorCode::kUnavailable
                       : ErrorCode::kFailed;
  return Errorf(code, "{} failed: {} ({}) [{}]", call, cudaGetErrorString(error),
                cudaGetErrorName(error), what);
}

Status CublasError(cublasStatus_t status, std::string_view call, std::string_view what) {
  return Errorf(ErrorCode::kFailed, "{} failed: cuBLAS status {} ({}) [{}]", call,
                static_cast<int>(status), cublasLtGetStatusString(status), what);
}

}  // namespace bm::train::cuda
