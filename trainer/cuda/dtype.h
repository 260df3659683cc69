// The element types of the CUDA backend's activations and matmul operands: fp32 (a checking
// mode), bf16 or fp16 (both over fp32 master weights, gradients and AdamW state).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "trainer/dist/communicator.h"

namespace bm::train::cuda {

enum class DType { kF32, kBF16, kF16 };

inline const char* DTypeName(DType t) {
  return t == DType::kF32 ? "f32" : t == DType::kBF16 ? "bf16" : "f16";
}

// The communicators' name for the type (the collectives on activations and working weights).
inline dist::DType CommDType(DType t) {
  return t == DType::kBF16  ? dist::DType::kBFloat16
         : t == DType::kF16 ? dist::DType::kFloat16
                            : dist::DType::kFloat32;
}

// Calls f(T{}) with the element type of `dtype`: float, __nv_bfloat16 or __half (the
// kernels' T).
template <typename F>
auto WithElementType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBF16:
      return f(__nv_bfloat16{});
    case DType::kF16:
      return f(__half{});
    case DType::kF32:
      break;
  }
  return f(float{});
}

}  // namespace bm::train::cuda
