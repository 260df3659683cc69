// CudnnGraph: a cuDNN backend (graph API) operation graph under construction and, once
// finalized, its execution plan: tensors, pointwise, reduction, matmul and reshape operations;
// the engine configurations a heuristic mode proposes and the first that builds a plan
// (deterministic engines only when asked); executing it with a variant pack. It owns every
// descriptor it makes. For a survey of engines it also describes a configuration (engine,
// knob choices, knob ranges) and builds the plan of a given engine and knob values.
// cudnn_attention.cc builds the attention graphs with it. Only with cuDNN in the build
// (BENCHMAKE_HAVE_CUDNN).
#pragma once

#if BENCHMAKE_HAVE_CUDNN
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace bm::train::cuda {

// A failed cuDNN call as a Status: the call, cuDNN's status and last error string, and `what`.
Status CudnnError(cudnnStatus_t status, std::string_view call, std::string_view what);

#define BM_CUDNN_CHECK(call, ...)                                       \
  do {                                                                  \
    cudnnStatus_t bm_cudnn_st_ = (call);                                \
    if (bm_cudnn_st_ != CUDNN_STATUS_SUCCESS)                           \
      return CudnnError(bm_cudnn_st_, #call, fmt::format(__VA_ARGS__)); \
  } while (0)

// One backend descriptor, destroyed with its owner.
class CudnnDesc {
 public:
  CudnnDesc() = default;
  ~CudnnDesc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  CudnnDesc(const CudnnDesc&) = delete;
  CudnnDesc& operator=(const CudnnDesc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* out() { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::array<int64_t, 4>;

class CudnnGraph {
 public:
  // `what` names the graph in errors; virtual tensors get ids from first_virtual_uid up.
  CudnnGraph(cudnnHandle_t handle, std::string what, int64_t first_virtual_uid)
      : handle_(handle), what_(std::move(what)), next_uid_(first_virtual_uid) {}

  // Non-virtual (uid given) or virtual (uid 0: a fresh one) tensor; `reorder` is the layout
  // cuDNN keeps it in (F16x16 for the attention backward's fp32 dQ accumulator).
  Status Tensor(cudnnBackendDescriptor_t* t, cudnnDataType_t type, Dims dims, Dims strides,
                int64_t uid = 0, bool by_value = false,
                cudnnBackendTensorReordering_t reorder = CUDNN_TENSOR_REORDERING_NONE);
  Status Scalar(cudnnBackendDescriptor_t* t, int64_t uid);

  // y = mode(x[, b][, t]); axis >= 0 for GEN_INDEX.
  Status Pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                   cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t t,
                   cudnnBackendDescriptor_t y, cudnnDataType_t prec = CUDNN_DATA_FLOAT,
                   int64_t axis = -1);

  Status Reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                   cudnnBackendDescriptor_t y);

  // c = a · b (batched over the first two dimensions; b's heads broadcast over a's groups).
  Status Matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c);

  // y: a view of x with other dimensions and strides (a transpose, here).
  Status Reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);

  // The operation graph, the heuristic's engine configurations in order, and the first one
  // that finalizes into an execution plan (skipping non-deterministic engines when asked).
  Status Finalize(bool deterministic);

  // The engine configurations a heuristic mode proposes for the graph, best first (kept).
  Result<std::vector<cudnnBackendDescriptor_t> > HeuristicConfigs(cudnnBackendHeurMode_t mode);

  // What an engine configuration is, for the survey: its engine's global index, whether the
  // engine is free of the NONDETERMINISTIC note, its knob choices (type, value) and each
  // tunable knob's range.
  struct Knob {
    int64_t type = 0, min = 0, max = 0, stride = 1;
  };
  struct ConfigInfo {
    int64_t engine = -1;
    bool deterministic = false;
    std::vector<std::pair<int64_t, int64_t> > choices;
    std::vector<Knob> knobs;
  };
  ConfigInfo Info(cudnnBackendDescriptor_t cfg);

  // The plan of engine `index` with the given knob values (type, value; the others at their
  // defaults) in place of the current one; false with the reason when it does not build.
  bool PlanEngine(int64_t index, const std::vector<std::pair<int64_t, int64_t> >& knobs,
                  std::string* why);

  // The plan's workspace bytes.
  size_t workspace() const { return workspace_; }

  // Runs the plan on `stream`: ptrs[i] is the data of the tensor with unique id uids[i].
  Status Execute(std::span<const int64_t> uids, std::vector<void*> ptrs, void* workspace,
                 size_t workspace_bytes, cudaStream_t stream) const;

 private:
  CudnnDesc& Keep();
  template <typename V>
  Status Set(const CudnnDesc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
             int64_t n, const V* values) const;
  Status AddOp(CudnnDesc& op, const std::string& kind);
  // The operation graph of the ops added so far (built once).
  Status OperationGraph();
  // The execution plan of an engine configuration, kept with its workspace size when it builds.
  bool Plan(cudnnBackendDescriptor_t cfg, std::string* why);
  // The engine of global index i for this graph (kept), or false when it does not take it.
  bool EngineAt(int64_t i, cudnnBackendDescriptor_t* out);
  static std::string LastError();
  // An engine without cuDNN's NONDETERMINISTIC numerical note.
  static bool NoteFree(cudnnBackendDescriptor_t e);
  // The engine of an engine configuration (kept), or false.
  bool EngineOf(cudnnBackendDescriptor_t cfg, cudnnBackendDescriptor_t* out);
  bool Deterministic(cudnnBackendDescriptor_t cfg);

  cudnnHandle_t handle_;
  std::string what_;
  int64_t next_uid_;
  std::vector<std::unique_ptr<CudnnDesc> > owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  cudnnBackendDescriptor_t graph_ = nullptr;  // once OperationGraph() built it
  std::unique_ptr<CudnnDesc> plan_;
  size_t workspace_ = 0;
};

}  // namespace bm::train::cuda

#endif  // BENCHMAKE_HAVE_CUDNN
