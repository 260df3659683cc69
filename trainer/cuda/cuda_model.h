// CudaModel: one GPU's training state for a decoder-only transformer (gpt or llama family)
// and its training step: forward, the fused classifier, backward, gradient-norm clipping and
// AdamW, all on one stream.
//
// Precision (bf16 mode, the suites' "amp"): fp32 master weights, fp32 gradients and fp32 AdamW
// moments; bf16 working copies of the weights and bf16 activations; fp32 accumulation in every
// matmul, norm and reduction. fp32 mode (RunSpec::bf16 = false) runs everything in fp32 for
// checking against the CPU reference.
//
// Memory: everything lives in one arena planned at Create() (MemoryPlan); nothing is allocated
// afterwards. With recompute, only each layer's input is kept and a layer's activations are
// recomputed during the backward pass.
//
// Determinism: the same parameters and batches give bit-identical results on the same GPU
// (no order-dependent atomics anywhere).
//
// A step: ZeroGradients(); ForwardBackward(...) once per micro-batch (gradient accumulation);
// OptimizerStep(). Not thread-safe; one instance per GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/model_spec.h"
#include "trainer/cuda/param_layout.h"

namespace bm::train::cuda {

struct StepStats {
  double loss_sum = 0.0;   // sum of weighted token losses over the step's micro-batches
  double grad_norm = 0.0;  // global L2 norm before clipping
};

struct MemoryReport {
  size_t plan_bytes = 0;         // the arena (the plan's peak)
  size_t device_used_bytes = 0;  // cudaMemGetInfo: total - free, after Create()
  std::string plan_summary;
};

class CudaModel {
 public:
  // Selects the current device (0 unless CUDA_VISIBLE_DEVICES says otherwise), plans and
  // allocates. Fails with kUnavailable when there is no GPU or not enough memory.
  static Result<std::unique_ptr<CudaModel>> Create(const ModelSpec& model, const RunSpec& run);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  const ParamLayout& layout() const;
  const MemoryReport& memory() const;

  // Host <-> device, flat in layout() order (layout().total() floats, padding included).
  Status SetParameters(const std::vector<float>& flat);
  Status GetParameters(std::vector<float>* flat);
  Status GetGradients(std::vector<float>* flat);
  // AdamW moments, for resume files: m then v, each layout().total() floats.
  Status GetOptimizerState(std::vector<float>* m, std::vector<float>* v);
  Status SetOptimizerState(const std::vector<float>& m, const std::vector<float>& v);

  Status ZeroGradients();
  // One micro-batch of micro_batch x seq tokens: targets < 0 are ignored; weights (loss mask)
  // may be empty (all 1). grad_scale multiplies every token's loss gradient (1 / number of
  // unmasked tokens in the whole step). Gradients accumulate.
  Status ForwardBackward(const std::vector<int>& tokens, const std::vector<int>& targets,
                         const std::vector<float>& weights, float grad_scale);
  // Clips to hyper.max_norm (if > 0), updates, refreshes the bf16 copy, waits for the GPU and
  // returns the summed losses of the micro-batches since the last step and the gradient norm.
  Result<StepStats> OptimizerStep(const AdamWHyper& hyper);
  // Forward only: the sum of weighted token losses of one micro-batch.
  Result<double> EvalLoss(const std::vector<int>& tokens, const std::vector<int>& targets,
                          const std::vector<float>& weights);
  Status Synchronize();
  // With RunSpec::profile: milliseconds per phase (matmul kinds, attention, norms, ...) summed
  // over the steps so far; reset by ResetPhaseTimes().
  std::map<std::string, double> PhaseTimes() const;
  void ResetPhaseTimes();

 private:
  struct Impl;
  explicit CudaModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::train::cuda
