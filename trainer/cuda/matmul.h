// Matmul: matrix products through cuBLASLt, in row-major terms, with fused epilogues.
//
//   D[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n]   (+ epilogue)
//
// op(X) is X or X^T as stored (row-major, leading dimension = row length). A and B are bf16
// or fp32; C and D are bf16 or fp32 (bf16 inputs with fp32 D is how weight gradients are
// accumulated into fp32 gradient buffers). Accumulation is always fp32.
//
// Epilogues (n is the column count of D, i.e. the output features):
//   kBias         D += bias[n]                              (bias of D's type)
//   kGeluAuxBias  aux = D + bias[n]; D = gelu_tanh(aux)     (aux has D's layout and type)
//   kDGelu        D = D * gelu_tanh'(aux)                   (aux: the pre-activation)
//   kBGradB       bias_grad[m] = sum over k of op(A)[:, k]  (fp32, written, not accumulated): for
//                 dW[out,in] = dY^T X (A = dY stored [tokens, out], trans_a) it is the bias
//                 gradient, the sum of dY over tokens. (cuBLASLt's "B" is our A; see matmul.cc.)
//
// Algorithms are chosen once per shape (cuBLASLt heuristics) and cached, with one workspace
// preallocated by the caller (from the arena). A fused epilogue that cuBLASLt refuses for a
// shape is reported as kUnsupported so the caller can fall back to separate kernels.
//
// Thread safety: one Matmul per stream/thread.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

#include "base/result.h"

namespace bm::train::cuda {

enum class DType { kF32, kBF16 };
enum class Epilogue { kNone, kBias, kGeluAuxBias, kDGelu, kBGradB };

struct MatmulArgs {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  DType ab_type = DType::kBF16;  // A and B
  DType d_type = DType::kBF16;   // C and D
  const void* a = nullptr;
  int lda = 0;
  const void* b = nullptr;
  int ldb = 0;
  const void* c = nullptr;  // may equal d; nullptr means C = D
  void* d = nullptr;
  int ldd = 0;
  float alpha = 1.0f, beta = 0.0f;
  Epilogue epilogue = Epilogue::kNone;
  const void* bias = nullptr;  // kBias / kGeluAuxBias
  void* bias_grad = nullptr;   // kBGradB (fp32)
  void* aux = nullptr;         // kGeluAuxBias (written) / kDGelu (read)
  int ld_aux = 0;
};

class Matmul {
 public:
  // `workspace` (device, `workspace_bytes`) stays owned by the caller and must outlive this.
  static Result<std::unique_ptr<Matmul>> Create(void* workspace, size_t workspace_bytes);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  Status Run(const MatmulArgs& args, cudaStream_t stream);
  // Whether cuBLASLt has an algorithm for this shape and epilogue (cached).
  bool Supports(const MatmulArgs& args);

  static constexpr size_t kDefaultWorkspaceBytes = 32u << 20;

 private:
  struct Plan;
  using Key = std::tuple<int, int, int, bool, bool, int, int, int, int, int, int, int, bool>;
  Matmul(cublasLtHandle_t handle, void* workspace, size_t bytes);
  Result<Plan*> GetPlan(const MatmulArgs& args);

  cublasLtHandle_t handle_;
  void* workspace_;
  size_t workspace_bytes_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace bm::train::cuda
