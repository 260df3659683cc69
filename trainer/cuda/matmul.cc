#include "trainer/cuda/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/bit_checksum.cuh"

namespace bm::train::cuda {
namespace {

cudaDataType_t CudaType(DType t) {
  return t == DType::kF32 ? CUDA_R_32F : t == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
}

cublasLtEpilogue_t LtEpilogue(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::kGeluAuxBias:
      return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilogue::kDGelu:
      return CUBLASLT_EPILOGUE_DGELU;
    case Epilogue::kBGradB:
      return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

std::string Describe(const MatmulArgs& a) {
  return fmt::format("m={} n={} k={} op(A)={} op(B)={} lda={} ldb={} ldd={} ab={} d={} epilogue={}",
                     a.m, a.n, a.k, a.trans_a ? "T" : "N", a.trans_b ? "T" : "N", a.lda, a.ldb,
                     a.ldd, DTypeName(a.ab_type), DTypeName(a.d_type),
                     static_cast<int>(a.epilogue));
}

}  // namespace

// Row-major D = op(A) op(B) is column-major D^T = op(B)^T op(A)^T, so cuBLASLt sees
// A' = B (op = trans_b ? T : N, rows n), B' = A (op = trans_a ? T : N, cols m), D' = D^T (n x m).
// The bias broadcast along rows of D' is per column n of our D; BGRADB reduces B' = our A
// along k, giving a vector of length m (for dW = dY^T X with A = dY: the bias gradient).
struct Matmul::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};                   // the one used
  std::vector<cublasLtMatmulAlgo_t> candidates;  // the heuristic's ranking, first = default
  bool ok = false;
  bool tuned = false;
  bool timed = false;  // algo was kept by timing candidates (here or at a neighbour)
  ~Plan() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Matmul::Matmul(cublasLtHandle_t handle, void* workspace, size_t bytes, bool tune)
    : handle_(handle),
      workspace_(workspace),
      workspace_bytes_((bytes - 256) / 256 * 256),
      tune_(tune),
      fingerprint_(reinterpret_cast<unsigned long long*>(static_cast<char*>(workspace) +
                                                         workspace_bytes_)) {}

Result<std::unique_ptr<Matmul>> Matmul::Create(void* workspace, size_t workspace_bytes, bool tune) {
  if (workspace_bytes < 4096)
    return Errorf(ErrorCode::kInvalidArgument, "matmul workspace of {} bytes", workspace_bytes);
  cublasLtHandle_t handle = nullptr;
  BM_CUBLAS_CHECK(cublasLtCreate(&handle), "cuBLASLt handle");
  return std::unique_ptr<Matmul>(new Matmul(handle, workspace, workspace_bytes, tune));
}

Matmul::~Matmul() {
  plans_.clear();
  cublasLtDestroy(handle_);
}

Matmul::Key Matmul::KeyOf(const MatmulArgs& a) {
  return Key{a.m,
             a.n,
             a.k,
             a.trans_a,
             a.trans_b,
             a.lda,
             a.ldb,
             a.ldd,
             static_cast<int>(a.ab_type),
             static_cast<int>(a.d_type),
             static_cast<int>(a.epilogue),
             a.ld_aux,
             a.beta != 0.0f};
}

Result<Matmul::Plan*> Matmul::GetPlan(const MatmulArgs& a) {
  const Key key = KeyOf(a);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();

  auto plan = std::make_unique<Plan>();
  std::string what = Describe(a);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;  // fp32 accumulation for every type
  BM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F), "{}", what);
  cublasOperation_t op_a = a.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLAS A' = our B
  cublasOperation_t op_b = a.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLAS B' = our A
  BM_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
      "{}", what);
  BM_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
      "{}", what);
  cublasLtEpilogue_t epi = LtEpilogue(a.epilogue);
  BM_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
      "{}", what);
  if (a.epilogue == Epilogue::kBias || a.epilogue == Epilogue::kGeluAuxBias) {
    cudaDataType_t bias_type = CudaType(a.d_type);
    BM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                   &bias_type, sizeof(bias_type)),
                    "{}", what);
  }
  if (a.epilogue == Epilogue::kBGradB) {
    cudaDataType_t bias_type = CUDA_R_32F;
    BM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                   &bias_type, sizeof(bias_type)),
                    "{}", what);
  }
  if (a.epilogue == Epilogue::kGeluAuxBias || a.epilogue == Epilogue::kDGelu) {
    int64_t ld_aux = a.ld_aux;
    BM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                   &ld_aux, sizeof(ld_aux)),
                    "{}", what);
  }
  // cuBLAS column-major shapes: A' is (op_a ? k x n : n x k) stored; B' likewise with m.
  cudaDataType_t ab = CudaType(a.ab_type), dt = CudaType(a.d_type);
  BM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->la, ab, a.trans_b ? a.k : a.n,
                                             a.trans_b ? a.n : a.k, a.ldb),
                  "{}", what);
  BM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->lb, ab, a.trans_a ? a.m : a.k,
                                             a.trans_a ? a.k : a.m, a.lda),
                  "{}", what);
  BM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->lc, dt, a.n, a.m, a.ldd), "{}", what);

  cublasLtMatmulPreference_t pref = nullptr;
  BM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref), "{}", what);
  size_t ws = workspace_bytes_;
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  std::array<cublasLtMatmulHeuristicResult_t, kCandidates> results{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->la, plan->lb, plan->lc, plan->lc,
                                        pref, tune_ ? kCandidates : 1, results.data(), &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < found; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->candidates.push_back(results[i].algo);
  }
  plan->ok = !plan->candidates.empty();
  if (plan->ok) plan->algo = plan->candidates[0];
  plan->tuned = plan->candidates.size() < 2;
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

bool Matmul::Supports(const MatmulArgs& args) {
  Result<Plan*> plan = GetPlan(args);
  return plan.ok() && (*plan)->ok;
}

Status Matmul::Run(const MatmulArgs& a, cudaStream_t stream) {
  BM_ASSIGN_OR_RETURN(Plan * plan, GetPlan(a));
  if (!plan->ok) {
    return Errorf(ErrorCode::kUnsupported, "cuBLASLt has no algorithm for matmul [{}]",
                  Describe(a));
  }
  // Running it more than once must not change what it computes: no accumulation into itself.
  bool repeatable = a.beta == 0.0f || (a.c != nullptr && a.c != a.d);
  if (!plan->tuned && repeatable) return Tune(a, plan, stream);
  return Launch(a, plan, plan->algo, stream);
}

// The outputs' fingerprint: D, then aux or the bias gradient.
Result<uint64_t> Matmul::Fingerprint(const MatmulArgs& a, cudaStream_t stream) {
  size_t elem = a.d_type == DType::kF32 ? 4 : 2;
  uint64_t sum = 0;
  std::array<std::pair<const void*, size_t>, 2> parts{
      std::pair<const void*, size_t>{a.d, static_cast<size_t>(a.m) * a.ldd * elem}, {nullptr, 0}};
  if (a.epilogue == Epilogue::kGeluAuxBias)
    parts[1] = {a.aux, static_cast<size_t>(a.m) * a.ld_aux * elem};
  if (a.epilogue == Epilogue::kBGradB) parts[1] = {a.bias_grad, static_cast<size_t>(a.m) * 4};
  for (auto [data, bytes] : parts) {
    if (data == nullptr) continue;
    unsigned long long h = 0;
    BM_TRY(BitChecksum(fingerprint_, data, bytes / 4 * 4, stream));
    BM_CUDA_CHECK(cudaMemcpyAsync(&h, fingerprint_, sizeof(h), cudaMemcpyDeviceToHost, stream),
                  "matmul fingerprint");
    BM_CUDA_CHECK(cudaStreamSynchronize(stream), "matmul fingerprint");
    sum = sum * 1000003u + h;
  }
  return sum;
}

const Matmul::Key* Matmul::TunedNeighbour(const Key& key) const {
  auto dims = [](const Key& k) {
    return std::array<int64_t, 3>{std::get<0>(k), std::get<1>(k), std::get<2>(k)};
  };
  const Key* nearest = nullptr;
  int64_t nearest_gap = 0;
  for (const auto& [other, plan] : plans_) {
    if (!plan->timed) continue;
    Key rest = other;  // equal to `key` but for m, n, k?
    std::get<0>(rest) = std::get<0>(key);
    std::get<1>(rest) = std::get<1>(key);
    std::get<2>(rest) = std::get<2>(key);
    if (rest != key) continue;
    int differ = 0;
    int64_t gap = 0;
    for (int i = 0; i < 3; ++i) {
      differ += dims(other)[i] != dims(key)[i];
      gap += std::abs(dims(other)[i] - dims(key)[i]);
    }
    if (differ != 1) continue;
    if (nearest == nullptr || gap < nearest_gap) nearest = &other, nearest_gap = gap;
  }
  return nearest;
}

Result<bool> Matmul::Reuse(const MatmulArgs& a, Plan* plan, cudaStream_t stream) {
  const Key* near = TunedNeighbour(KeyOf(a));
  if (near == nullptr) return false;
  const cublasLtMatmulAlgo_t algo = plans_.at(*near)->algo;
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(handle_, plan->desc, plan->la, plan->lb, plan->lc, plan->lc, &algo,
                              &check) != CUBLAS_STATUS_SUCCESS ||
      check.workspaceSize > workspace_bytes_)
    return false;
  const bool first = std::memcmp(&algo, &plan->candidates[0], sizeof(algo)) == 0;
  if (!first) {
    BM_TRY(Launch(a, plan, plan->candidates[0], stream));
    BM_ASSIGN_OR_RETURN(uint64_t first_print, Fingerprint(a, stream));
    if (!Launch(a, plan, algo, stream).ok()) return false;
    BM_ASSIGN_OR_RETURN(uint64_t print, Fingerprint(a, stream));
    if (print != first_print) return false;  // Tune times the candidates and rewrites D
  } else {
    BM_TRY(Launch(a, plan, algo, stream));
  }
  plan->algo = algo;
  plan->timed = true;
  tuning_log_.push_back(
      fmt::format("[{}] reused the kept algorithm of [m={} n={} k={}]{}", Describe(a),
                  std::get<0>(*near), std::get<1>(*near), std::get<2>(*near),
                  first ? " (the heuristic's first here)" : ", which gives the first's bits here"));
  return true;
}

Status Matmul::Tune(const MatmulArgs& a, Plan* plan, cudaStream_t stream) {
  plan->tuned = true;
  BM_ASSIGN_OR_RETURN(bool reused, Reuse(a, plan, stream));
  if (reused) return Status::Ok();
  plan->timed = true;
  cudaEvent_t begin = nullptr, end = nullptr;
  BM_CUDA_CHECK(cudaEventCreate(&begin), "tuning event");
  BM_CUDA_CHECK(cudaEventCreate(&end), "tuning event");
  auto destroy = [&] {
    cudaEventDestroy(begin);
    cudaEventDestroy(end);
  };
  // Median of three timed runs after one untimed; the untimed one's outputs are fingerprinted.
  auto time = [&](const cublasLtMatmulAlgo_t& algo, uint64_t* print) -> Result<float> {
    BM_TRY(Launch(a, plan, algo, stream));
    BM_ASSIGN_OR_RETURN(*print, Fingerprint(a, stream));
    std::array<float, 3> ms{};
    for (float& t : ms) {
      BM_CUDA_CHECK(cudaEventRecord(begin, stream), "tuning");
      BM_TRY(Launch(a, plan, algo, stream));
      BM_CUDA_CHECK(cudaEventRecord(end, stream), "tuning");
      BM_CUDA_CHECK(cudaEventSynchronize(end), "tuning");
      BM_CUDA_CHECK(cudaEventElapsedTime(&t, begin, end), "tuning");
    }
    std::sort(ms.begin(), ms.end());
    return ms[1];
  };
  uint64_t first_print = 0;
  Result<float> first = time(plan->candidates[0], &first_print);
  if (!first.ok()) {
    destroy();
    return first.status();
  }
  float kept = *first, fastest = *first;
  int same = 1;
  for (size_t i = 1; i < plan->candidates.size(); ++i) {
    uint64_t print = 0;
    Result<float> t = time(plan->candidates[i], &print);
    if (!t.ok()) continue;  // a candidate that fails is skipped, like a slow one
    fastest = std::min(fastest, *t);
    if (print != first_print) continue;
    ++same;
    if (*t < kept) kept = *t, plan->algo = plan->candidates[i];
  }
  destroy();
  tuning_log_.push_back(
      fmt::format("[{}] first {:.3f} ms, kept {:.3f} ms, fastest {:.3f} ms; {} of {} "
                  "candidates give the first's bits",
                  Describe(a), *first, kept, fastest, same, plan->candidates.size()));
  // The call's outputs: the kept algorithm's, which are the first's.
  return Launch(a, plan, plan->algo, stream);
}

Status Matmul::Launch(const MatmulArgs& a, Plan* plan, const cublasLtMatmulAlgo_t& algo,
                      cudaStream_t stream) {
  if (a.epilogue == Epilogue::kBias || a.epilogue == Epilogue::kGeluAuxBias) {
    BM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &a.bias, sizeof(a.bias)),
                    "{}", Describe(a));
  }
  if (a.epilogue == Epilogue::kBGradB) {
    BM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &a.bias_grad, sizeof(a.bias_grad)),
                    "{}", Describe(a));
  }
  if (a.epilogue == Epilogue::kGeluAuxBias || a.epilogue == Epilogue::kDGelu) {
    BM_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                       &a.aux, sizeof(a.aux)),
        "{}", Describe(a));
  }
  const void* c = a.c ? a.c : a.d;
  BM_CUBLAS_CHECK(
      cublasLtMatmul(handle_, plan->desc, &a.alpha, a.b, plan->la, a.a, plan->lb, &a.beta, c,
                     plan->lc, a.d, plan->lc, &algo, workspace_, workspace_bytes_, stream),
      "{}", Describe(a));
  return Status::Ok();
}

}  // namespace bm::train::cuda
