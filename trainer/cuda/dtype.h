// The element types of the CUDA backend's activations and matmul operands: fp32 (a checking
// mode), bf16 or fp16 (both over fp32 master weights, gradients and AdamW state).
#pragma once

namespace bm::train::cuda {

enum class DType { kF32, kBF16, kF16 };

inline const char* DTypeName(DType t) {
  return t == DType::kF32 ? "f32" : t == DType::kBF16 ? "bf16" : "f16";
}

}  // namespace bm::train::cuda
