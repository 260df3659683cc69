// Matmul: matrix products through cuBLASLt, in row-major terms, with fused epilogues.
//
//   D[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n]   (+ epilogue)
//
// op(X) is X or X^T as stored (row-major, leading dimension = row length). A and B are bf16,
// fp16 or fp32; C and D are of A's type or fp32 (16-bit inputs with fp32 D is how weight
// gradients are accumulated into fp32 gradient buffers). Accumulation is always fp32.
//
// Epilogues (n is the column count of D, i.e. the output features):
//   kBias         D += bias[n]                              (bias of D's type)
//   kGeluAuxBias  aux = D + bias[n]; D = gelu_tanh(aux)     (aux has D's layout and type)
//   kDGelu        D = D * gelu_tanh'(aux)                   (aux: the pre-activation)
//   kBGradB       bias_grad[m] = sum over k of op(A)[:, k]  (fp32, written, not accumulated): for
//                 dW[out,in] = dY^T X (A = dY stored [tokens, out], trans_a) it is the bias
//                 gradient, the sum of dY over tokens. (cuBLASLt's "B" is our A; see matmul.cc.)
//
// Algorithms are chosen once per shape and cached, with one workspace preallocated by the
// caller (from the arena). A fused epilogue that cuBLASLt refuses for a shape is reported as
// kUnsupported so the caller can fall back to separate kernels.
//
// Choosing (Create's `tune`): cuBLASLt's heuristic ranks up to kCandidates algorithms. Without
// tuning its first is used. With tuning, a shape's first call that may safely run more than
// once (beta 0, or C not D) runs every candidate on the call's own operands, times it (median
// of 3) and fingerprints its outputs' bits (D, and aux or the bias gradient); the fastest
// candidate whose bits equal the first's is kept and the call's outputs are the first's.
// Equal bits on real data mean the same arithmetic (another summation order would differ
// somewhere), so tuning changes speed, not results: reruns stay bit-identical whatever the
// timings were. A call that accumulates into its own output runs the current choice (the
// first, until a call of its shape that can run twice has tuned it).
// A shape one dimension away from a tuned one (m, n or k alone differs: a micro-batch of
// another width, whose tokens are that dimension) first tries the nearest such shape's kept
// algorithm: where cuBLASLt takes it for this shape and it gives the heuristic's first bits on
// the call's operands (two launches), it is kept without timing the candidates. A LLaVA run
// meets a new width on one rank while the others wait; a full tuning of a 13B layer's products
// cost that step ~0.8 s (docs/PERFORMANCE.md).
//
// Thread safety: one Matmul per stream/thread.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/dtype.h"

namespace bm::train::cuda {

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
  // `workspace` (device, `workspace_bytes`) stays owned by the caller and must outlive this;
  // its last 256 bytes hold the tuner's fingerprints.
  static Result<std::unique_ptr<Matmul>> Create(void* workspace, size_t workspace_bytes,
                                                bool tune = false);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  Status Run(const MatmulArgs& args, cudaStream_t stream);
  // Whether cuBLASLt has an algorithm for this shape and epilogue (cached).
  bool Supports(const MatmulArgs& args);

  static constexpr size_t kDefaultWorkspaceBytes = 32u << 20;
  static constexpr int kCandidates = 8;

  // One line per tuned shape: the heuristic's first, the kept and the fastest candidate (ms),
  // and how many candidates gave the first's bits; or which tuned shape's algorithm it reused.
  const std::vector<std::string>& tuning_log() const { return tuning_log_; }

 private:
  struct Plan;
  using Key = std::tuple<int, int, int, bool, bool, int, int, int, int, int, int, int, bool>;
  Matmul(cublasLtHandle_t handle, void* workspace, size_t bytes, bool tune);
  static Key KeyOf(const MatmulArgs& args);
  Result<Plan*> GetPlan(const MatmulArgs& args);
  // The timed plan nearest to `key` among those that differ from it in one of m, n, k alone.
  const Key* TunedNeighbour(const Key& key) const;
  Result<bool> Reuse(const MatmulArgs& a, Plan* plan, cudaStream_t stream);
  Status Launch(const MatmulArgs& a, Plan* plan, const cublasLtMatmulAlgo_t& algo,
                cudaStream_t stream);
  Status Tune(const MatmulArgs& a, Plan* plan, cudaStream_t stream);
  Result<uint64_t> Fingerprint(const MatmulArgs& a, cudaStream_t stream);

  cublasLtHandle_t handle_;
  void* workspace_;
  size_t workspace_bytes_;  // for cuBLASLt: the fingerprints' 256 bytes excluded
  bool tune_;
  unsigned long long* fingerprint_;  // in the workspace's last 256 bytes
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::vector<std::string> tuning_log_;
};

}  // namespace bm::train::cuda
