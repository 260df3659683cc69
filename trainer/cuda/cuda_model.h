// CudaModel: one GPU's training state for a decoder-only transformer (gpt or llama family)
// and its training step: forward, the fused classifier, backward, gradient-norm clipping and
// AdamW, all on one stream.
//
// Precision (RunSpec::dtype bf16 — the suites' "amp" — or fp16): fp32 master weights, fp32
// gradients and fp32 AdamW moments; 16-bit working copies of the weights and 16-bit
// activations; fp32 accumulation in every matmul, norm and reduction. fp16 needs the caller's
// loss scaling (ForwardBackward's grad_scale times S, OptimizerStep's grad_scale 1 / S; an
// overflow shows as a non-finite GradNorm). fp32 mode runs everything in fp32 for checking
// against the CPU reference.
//
// Memory: everything lives in one arena planned at Create() (MemoryPlan); nothing is allocated
// afterwards, and a plan the GPU cannot hold is refused with its numbers. Parameters,
// gradients and AdamW state belong to CudaDataParallel (data parallelism, ZeRO 0-3, one rank
// included). With recompute, only each layer's input is kept and a layer's activations are
// recomputed during the backward pass.
//
// Frozen (RunSpec::frozen: LLaVA's frozen language model): the working weights only (bf16 or
// fp32, whole on every rank: no ZeRO shards, no masters, gradients or AdamW moments in the plan),
// and a backward that computes the input gradients only — through every layer to the embedding
// output, for SplicedRows::grad — with no weight-gradient product, reduction or update (and none
// at all without spliced rows to return a gradient to). Get/SetParameters work (not collective;
// bf16 gives the stored 16-bit values back); GradNorm, OptimizerStep, Get/SetOptimizerState,
// Get/SetLocalState and GetGradients are refused (kInvalidArgument).
//
// Tensor parallelism (ModelSpec::tp > 1, RunSpec::tp the TP group's device communicator): the
// model is rank tp_rank's shard (trainer/model/shard.h: heads, ffn and vocabulary rows split)
// with Megatron's collectives on the compute stream, as the CPU twin's (trainer/cpu/model.h):
// row-parallel outputs and column-parallel input gradients summed, the embedding and the
// cross-entropy vocabulary-parallel (classifier.cuh), the gradient norm over the TP group
// counting each parameter once (CountGradients). With ZeRO 0-3 over the DP group (RunSpec::comm)
// of each TP rank: its shard's gradients (ZeRO 2-3) and working weights (ZeRO-3, gathered a unit
// at a time) in DP slices; the norm then sums the counted ranges' parts in the own slices, over
// the DP group, then the TP group. RunSpec::sequence_parallel:
// Megatron's sequence parallelism on top (the residual stream's rows split over the TP group,
// norms on a rank's rows, all-gathers and reduce-scatters at the TP regions' edges).
//
// Pipeline parallelism (ModelSpec::pp > 1, RunSpec::pp): the stage's layers (the embeddings on
// the first, the head on the last), an activation slot per micro-batch in flight
// (RunSpec::pipeline_slots), and PipelineStep in place of ForwardBackward; ZeRO 0-3 over the
// stage's data-parallel group (at 2-3 the tied embedding's units are kept whole through the
// step, summed across the first and last stages, then reduce-scattered:
// CudaDataParallel::ReduceTiedUnits). Forward-only calls
// (TokenLosses, NextTokenArgmax) need PP1, NextTokenArgmax TP1 too.
//
// Determinism: the same parameters and batches give bit-identical results on the same GPU
// (no order-dependent atomics anywhere).
//
// A step: ZeroGradients(); ForwardBackward(...) once per micro-batch (gradient accumulation);
// OptimizerStep(). Batches may be smaller than planned (batch <= micro_batch, seq <= seq).
// Not thread-safe; one instance per GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/comm_timing.h"
#include "trainer/cuda/host_staging.h"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/model_spec.h"
#include "trainer/cuda/param_layout.h"
#include "trainer/dist/communicator.h"

namespace bm::train::cuda {

// Rows of input embeddings that replace the token lookup at some positions of a micro-batch:
// LLaVA's projected image features at its image positions (HF's inputs_embeds with the image
// features scattered in); the GPU twin of trainer/cpu/model.h's SplicedRows<Float>.
//   positions: HOST, [count] distinct flat positions b*seq + t of the batch. They come from the
//     host batch (where its image tokens are) and the embedding backward needs them on the host
//     (it groups positions by token there, deterministically, and leaves these out); the model
//     stages them to the device with the tokens.
//   rows: DEVICE, [count, hidden] in the run's compute dtype (RunSpec::dtype: bf16 / fp16, fp32
//     in the checking mode) — what CudaProjector::output() holds, read in place, no copy; kept
//     unchanged until the call returns. Read on CudaModel::stream(): produce them there (the
//     projector's CudaVisionOptions::stream = stream()) or synchronize before the call.
//   grad: DEVICE, like rows, nullable (not wanted): overwritten with the gradient of the loss
//     at those rows — of Σ grad_scale · loss, the same scaling as the parameters' gradients
//     (under fp16 loss scaling: scaled), ready for CudaProjector::Backward as it is.
// The token ids at those positions must still be valid ids (looked up, then replaced); gpt's
// learned positions are still added to the rows. The token embedding gets no gradient from
// those positions (the learned positions do). count 0: exactly the computation without.
// ForwardBackward, TokenLosses and NextTokenArgmax take them; not with pipeline parallelism.
struct SplicedRows {
  const int32_t* positions = nullptr;  // host [count]
  int count = 0;
  const void* rows = nullptr;  // device [count, hidden], compute dtype
  void* grad = nullptr;        // device [count, hidden], compute dtype; nullable
};

// One batch as the host holds it: batch x seq positions, row-major.
struct TokenBatch {
  const int32_t* tokens = nullptr;       // [batch * seq], in [0, vocab)
  const int32_t* targets = nullptr;      // [batch * seq]; a negative target is ignored
  const uint8_t* mask = nullptr;         // [batch * seq] loss mask (1 counts), or null: all count
  int batch = 0, seq = 0;                // at most RunSpec's micro_batch and seq
  const SplicedRows* spliced = nullptr;  // nullable: the lookup everywhere (see SplicedRows)
};

struct MemoryReport {
  size_t plan_bytes = 0;          // the arena (the plan's peak)
  size_t device_used_bytes = 0;   // cudaMemGetInfo: total - free, after Create()
  bool split_masters = false;     // RunSpec::split_masters applied (bf16)
  int layers_over_gradients = 0;  // layers whose input streams (and activations) lie over
                                  // gradients written later
  int attention_key_block = 0;    // keys per cuDNN attention backward call (0: not cuDNN)
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
  // The compute stream every call runs on (spliced rows are read on it).
  cudaStream_t stream() const;

  // Host <-> device, flat in layout() order (layout().total() floats, padding included).
  Status SetParameters(const std::vector<float>& flat);
  Status GetParameters(std::vector<float>* flat);
  // The same by ranges (CudaDataParallel::Set/GetParameters): `fill` is asked for what this
  // rank keeps only; an empty `take` takes part in the gather and keeps nothing.
  Status SetParameters(const RangeSource& fill);
  Status GetParameters(const RangeSink& take);
  Status GetGradients(std::vector<float>* flat);
  // AdamW moments, each layout().total() floats (unsharded runs only: zero 0).
  Status GetOptimizerState(std::vector<float>* m, std::vector<float>* v);
  Status SetOptimizerState(const std::vector<float>& m, const std::vector<float>& v);
  // This rank's fp32 master weights and moments (its ZeRO slices, or everything), for resume.
  int64_t LocalStateSize() const;
  Status GetLocalState(std::vector<float>* master, std::vector<float>* m, std::vector<float>* v);
  Status SetLocalState(const std::vector<float>& master, const std::vector<float>& m,
                       const std::vector<float>& v);
  // Tensor or pipeline parallel: the ranges of layout() whose squared gradients this rank adds
  // to the gradient norm before the TP and PP groups' sums — the tensors it owns
  // (ModelShard::owns), so that replicated ones and the tied copy count once; each range within
  // one tensor and its padding, at most one per tensor. Without model parallelism the whole
  // layout counts and this is refused.
  Status CountGradients(std::vector<Range> ranges);
  // All-gathers `count` floats of host memory from every rank of `group` (a device
  // communicator) into recv (group->size() * count floats, rank r's at r * count), through
  // device memory the model is not using between steps; waits. For gathering a whole model.
  Status AllGatherHost(dist::Communicator* group, const float* send, float* recv, int64_t count);
  // Sends / receives `count` floats of host memory to / from `peer` of `group` the same way,
  // in chunks of the same staging space on both sides; waits.
  Status SendHost(dist::Communicator* group, const float* data, int64_t count, int peer);
  Status RecvHost(dist::Communicator* group, float* data, int64_t count, int peer);
  // Seconds the compute stream waited on data-parallel communication since Create, and the
  // same by where it waited (CudaDataParallel::wait_ms_by_site).
  double CommWaitSeconds() const;
  std::map<std::string, double> CommWaitSecondsBySite() const;
  // Each unit's gradient reduction in the steps' last micro-batches, summed over the steps
  // (CudaDataParallel::reductions: queued, its own length, its end after the backward's).
  const std::map<int, CommTiming::Reduction>& Reductions() const;

  Status ZeroGradients();
  // One micro-batch's forward and backward; gradients accumulate. grad_scale multiplies every
  // counted token's loss gradient (1 / counted tokens in the whole step, over all ranks).
  // `last`: the step's last micro-batch (data-parallel gradients are reduced during its
  // backward; ZeRO 2-3 reduce every one's). Waits for the GPU and returns the sum of the
  // counted tokens' losses.
  Result<double> ForwardBackward(const TokenBatch& batch, float grad_scale, bool last = true);
  // Seconds ForwardBackward spent on the host before it waited for the GPU (staging the batch
  // and queueing the work), summed since Create: near the step's time, the host sets the pace.
  double HostQueueSeconds() const;
  // Pipeline stages (ModelSpec::pp > 1, RunSpec::pp): one optimizer step's micro-batches in the
  // 1F1B schedule (trainer/dist/pipeline_driver.h), the activations and their gradients sent
  // between stages on the compute stream, the tied embedding's two copies given the sum of their
  // gradients. Collective over the PP group (and the TP and DP groups). Waits; returns the sum
  // of the counted tokens' losses on the last stage, 0 on the others. ForwardBackward needs PP1.
  Result<double> PipelineStep(std::span<const TokenBatch> micro, float grad_scale);
  // Seconds spent in the pipeline's sends and receives since Create (enqueueing them, with NCCL).
  double PipelineWaitSeconds() const;
  // sqrt of the sum of squared gradients, as they stand (waits for the GPU).
  Result<double> GradNorm();
  // Multiplies the gradients by hyper.grad_scale and clips them by global norm (when
  // hyper.max_norm > 0 and the norm exceeds it: factor max_norm / (norm + 1e-6)), then AdamW on
  // fp32 masters and the 16-bit copy. Asynchronous.
  Status OptimizerStep(const AdamWHyper& hyper);
  // Forward only: losses[i] for every position (the mask ignored); waits.
  Status TokenLosses(const TokenBatch& batch, float* losses);
  // Forward only: the most likely next token at every position (lowest id on ties), batch's
  // targets and mask ignored, its spliced rows taken (LLaVA's greedy decoding); waits.
  Status NextTokenArgmax(const TokenBatch& batch, int32_t* argmax);
  Status Synchronize();
  // One line per matmul shape tuned (RunSpec::matmul_tuning): see matmul.h.
  const std::vector<std::string>& MatmulTuningLog() const;
  // With RunSpec::profile: milliseconds per phase (matmul kinds, attention, norms, ...) summed
  // over the steps so far; reset by ResetPhaseTimes().
  std::map<std::string, double> PhaseTimes() const;
  void ResetPhaseTimes();

 private:
  struct Impl;
  class Stage;  // a pipeline stage for the 1F1B driver (cuda_model_pipeline.cc)
  explicit CudaModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::train::cuda
