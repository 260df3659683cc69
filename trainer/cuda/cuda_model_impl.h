// CudaModel's internals, shared by its source files (internal to trainer/cuda):
//   cuda_model.cc           the public API (create, parameters, steps)
//   cuda_model_plan.cc      the memory plan and the host-to-device staging of batches
//   cuda_model_step.cc      forward, classifier and backward of both families
//   cuda_model_pipeline.cc  a pipeline stage's step (1F1B)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_data_parallel.h"
#include "trainer/cuda/cuda_model.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/cuda/kernels/classifier.cuh"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/cuda/kernels/layernorm.cuh"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/kernels/rmsnorm.cuh"
#include "trainer/cuda/kernels/rope.cuh"
#include "trainer/cuda/matmul.h"
#include "trainer/cuda/memory_plan.h"
#include "trainer/cuda/pointer_check.h"
#include "trainer/dist/communicator.h"

namespace bm::train::cuda {
namespace model_internal {

using bf16 = __nv_bfloat16;
using fp16 = __half;

enum class Mode { kTrain, kLoss, kArgmax };

// One layer's saved activations (offsets into the arena), per layer or shared (recompute).
struct LayerActs {
  size_t norm1, mean1, rstd1, qkv, att, lse, res_mid, norm2, mean2, rstd2, pre;
};

}  // namespace model_internal
using model_internal::bf16;
using model_internal::fp16;
using model_internal::LayerActs;
using model_internal::Mode;

struct CudaModel::Impl {
  Impl(const ModelSpec& m, const RunSpec& r)
      : spec(m),
        run(r),
        self(r.comm ? nullptr : dist::MakeSelfCommunicator()),
        comm(r.comm ? r.comm : self.get()),
        layout(m, CudaDataParallel::UnitAlign(r.frozen ? 0 : r.zero, comm->size())),
        dp(layout, comm, r.zero, r.dtype, r.split_masters, r.frozen) {
    dp.SumWhole(TiedAcrossStages());
    if (r.micro_batches_per_step == 1) dp.OneMicroBatchPerStep();
    if (r.grad_reduce_bf16 && !r.frozen) dp.ReduceInBf16();
    dp.KeepGatheredLast(r.zero3_keep_params);
    // The norm counts every unit's reduced gradients (no TP or PP group choosing ranges).
    if (!r.tp && !r.pp) dp.SumSquaresAsReduced();
    if (!m.tied_here()) dp.FirstUnitUsedAlone();  // the head does not read wte
    // The first unit is the token embeddings alone (no positions, all the vocabulary): its
    // gradient is at most a row a token of the micro-batch.
    if (!m.tied_here() && m.embeddings && m.family != Family::kGpt && !r.tp)
      dp.FirstUnitAsRows(r.micro_batch * r.seq, m.hidden);
  }
  ModelSpec spec;
  RunSpec run;
  std::unique_ptr<dist::Communicator> self;  // the group of one when run.comm is null
  dist::Communicator* comm;
  ParamLayout layout;
  // Parameters, gradients and AdamW state, with data parallelism and ZeRO.
  CudaDataParallel dp;
  MemoryReport memory;
  std::unique_ptr<DeviceArena> arena;
  std::unique_ptr<Matmul> matmul;
  cudaStream_t stream = nullptr;
  cudaEvent_t staged = nullptr;
  size_t elem = 2;  // bytes per activation element (4 in fp32 mode)

  // arena offsets (the parameters' buffers are dp's)
  std::vector<size_t> res;  // per activation slot, the stage's layers + 1 residual streams
  std::vector<LayerActs> acts;
  size_t normf = 0, meanf = 0, rstdf = 0, dnormf = 0, logits = 0, losses = 0, loss_sum = 0;
  size_t post = 0, dres = 0, dln = 0;
  // A layer's backward temporaries (cuda_model_plan.cc) lie over its activations already read
  // for the last time where they fit: the MLP pre-activation's gradient over the pre-activation
  // (SwiGLU's backward runs in place; GELU's gradient is a cuBLASLt epilogue that reads it, so
  // it has its own), the qkv gradient there too once the MLP is done, the attention output's
  // over norm2's output (the fc backward read it last); the activation's gradient comes in the
  // activation's buffer (post).
  size_t gelu_grad = 0;
  std::optional<size_t> qkv_grad, att_grad;  // their own storage when they do not fit
  size_t BigGrad(const LayerActs& a) const { return Gpt() ? gelu_grad : a.pre; }
  size_t QkvGrad(const LayerActs& a) const { return qkv_grad.value_or(a.pre); }
  size_t AttGrad(const LayerActs& a) const { return att_grad.value_or(a.norm2); }
  size_t norm_scratch = 0, att_scratch = 0, bias_scratch = 0, norm_sq = 0, norm_partials = 0;
  size_t argmax = 0, rope = 0, tokens = 0, targets = 0, weights = 0, bucket_tokens = 0,
         bucket_offsets = 0, bucket_positions = 0;
  size_t att_scratch_bytes = 0;
  size_t workspace = 0;
  // Tensor parallel only: the vocabulary-parallel cross-entropy's row statistics
  // ([4, chunk] fp32, classifier.cuh) and one sum of squares per counted gradient range
  // (CudaModel::CountGradients; at most one per tensor).
  size_t xent_stats = 0, range_sums = 0;
  // Frozen (RunSpec::frozen): the norm kernels' weight-gradient column sums, which come with
  // their input gradients, land here and are never read ([2, C] fp32 at norm scratch's end).
  size_t frozen_norm_grad = 0;
  bool Frozen() const { return run.frozen; }
  std::vector<Range> counted;
  // Pipeline parallel, the first of several stages with tied embeddings: the last stage's copy's
  // gradient, received.
  size_t tied_scratch = 0;
  // Sequence parallel only: a norm's output rows before the gather, and a norm's weight and bias
  // gradients before their TP sum.
  size_t sp_rows = 0, sp_norm_grad = 0;
  double pipeline_wait_s = 0;  // CudaModel::PipelineWaitSeconds
  double host_queue_s = 0;     // CudaModel::HostQueueSeconds

  // host staging (pinned)
  int* h_ints = nullptr;      // tokens, targets, bucket tokens, offsets, positions, spliced
  float* h_floats = nullptr;  // weights, then results

  // Optional per-phase timing (RunSpec::profile): event pairs around each launch group.
  struct Mark {
    const char* name;
    cudaEvent_t begin, end;
  };
  std::vector<cudaEvent_t> event_pool;
  size_t events_used = 0;
  std::vector<Mark> marks;
  std::map<std::string, double> phase_ms;
  Result<cudaEvent_t> NextEvent() {
    if (events_used == event_pool.size()) {
      cudaEvent_t e = nullptr;
      BM_CUDA_CHECK(cudaEventCreate(&e), "profiling event {}", event_pool.size());
      event_pool.push_back(e);
    }
    return event_pool[events_used++];
  }
  // Runs f(); with RunSpec::profile, between two events whose interval counts toward `name`.
  template <typename F>
  Status Phase(const char* name, F&& f) {
    if (!run.profile) return f();
    BM_ASSIGN_OR_RETURN(cudaEvent_t begin, NextEvent());
    BM_ASSIGN_OR_RETURN(cudaEvent_t end, NextEvent());
    BM_CUDA_CHECK(cudaEventRecord(begin, stream), "profiling {}", name);
    BM_TRY(f());
    BM_CUDA_CHECK(cudaEventRecord(end, stream), "profiling {}", name);
    marks.push_back({name, begin, end});
    return Status::Ok();
  }
  Status CollectPhases() {  // after a synchronize
    for (const Mark& m : marks) {
      float ms = 0.0f;
      BM_CUDA_CHECK(cudaEventElapsedTime(&ms, m.begin, m.end), "profiling {}", m.name);
      phase_ms[m.name] += ms;
    }
    marks.clear();
    events_used = 0;
    return Status::Ok();
  }

  int cur_b = 0, cur_t = 0;  // this call's batch and sequence length (<= run's maxima)
  int N() const { return cur_b * cur_t; }
  int MaxN() const { return run.micro_batch * run.seq; }
  int C() const { return spec.hidden; }
  // This GPU's share of the heads and the MLP (all of them without tensor parallelism).
  int Heads() const { return spec.local_heads(); }
  int KvHeads() const { return spec.local_kv_heads(); }
  int Ffn() const { return spec.local_ffn(); }
  int AttCols() const { return Heads() * spec.head_dim(); }
  int QkvCols() const { return (Heads() + 2 * KvHeads()) * spec.head_dim(); }
  int BigCols() const { return spec.family == Family::kGpt ? Ffn() : 2 * Ffn(); }
  bool Gpt() const { return spec.family == Family::kGpt; }
  AttentionShape AttShape(int b, int t) const {
    return {b, t, Heads(), KvHeads(), spec.head_dim(), run.attention_chunk, Fp16()};
  }
  // Tensor parallelism (Megatron's collectives, as the CPU twin's: trainer/cpu/model.h): the
  // row-parallel outputs and the column-parallel input gradients summed over the TP group, in
  // place on the compute stream.
  bool Tp() const { return run.tp != nullptr; }
  bool Pp() const { return run.pp != nullptr; }
  // Sequence parallelism: this rank holds rows [tp_rank·N/TP, (tp_rank+1)·N/TP) of the residual
  // stream (its norms, residual adds and row-parallel biases run on those rows); the norms'
  // outputs are gathered whole before the TP regions and their gradients reduce-scattered back.
  bool Sp() const { return Tp() && run.sequence_parallel; }
  // The tied token embedding's gradients on the first or last of several stages, which those
  // two add to each other after the step's backward (the LM head's on the last); numel 0 if
  // none.
  Range TiedAcrossStages() const {
    if (!spec.tied || spec.pp == 1) return {};
    const size_t n = static_cast<size_t>(spec.local_vocab()) * C();
    if (spec.embeddings) return {layout.wte, n, false};
    if (spec.head) return {layout.lm_head, n, false};
    return {};
  }
  // The gradient norm sums ranges (`counted`; their parts in the own slices where only those
  // are reduced: dp.reduces_to_own_slices) into range_sums: model parallel, or ZeRO-1 over
  // several ranks (ZeRO 2-3 without model parallelism: dp sums its whole slice buffer).
  bool CountsRanges() const { return Tp() || Pp() || dp.sums_own_slices(); }
  // Each range summed is one tensor's, or its part in one unit's own slice.
  size_t RangeSumsCapacity() const { return layout.tensors().size() + layout.units().size(); }
  int StreamRows(int n) const { return Sp() ? n / spec.tp : n; }
  int Rows() const { return StreamRows(N()); }  // the residual stream's rows of this call
  // Floats of host messages staged in the first residual stream between steps (SendHost,
  // RecvHost): the same on every rank of a TP or PP group, so both sides chunk alike.
  int64_t HostMessageChunk() const {
    return static_cast<int64_t>(StreamRows(MaxN())) * C() * static_cast<int64_t>(elem) / 4;
  }
  dist::DType ActType() const { return CommDType(run.dtype); }
  Status TpAllReduce(void* data, size_t n, dist::DType type,
                     dist::ReduceOp op = dist::ReduceOp::kSum) {
    if (!Tp()) return Status::Ok();
    return Phase("tp all-reduce", [&] { return run.tp->AllReduce(data, n, type, op, stream); });
  }
  bool Fp16() const { return run.dtype == DType::kF16; }
  bool Lowp() const { return run.dtype != DType::kF32; }  // 16-bit weight copy and activations
  template <typename T>
  T* A(size_t off) const {
    return arena->At<T>(off);
  }
  DType Dt() const { return run.dtype; }
  // Weights as the matmuls read them (the working copy: 16-bit, or the fp32 masters) and
  // where gradients go, by flat offset (through dp: full buffers or the unit's slot).
  template <typename T>
  const T* W(size_t off) const {
    return dp.Work<T>(off);
  }
  float* G(size_t off) const { return dp.Grad(off); }

  Status Plan();
  Status CheckFits(const MemoryPlan& plan) const;
  template <typename T>
  Status Linear(T* y, const T* x, size_t w, size_t b, int rows, int in, int out, const T* residual);
  // A row-parallel Linear (attention output, MLP down): with tensor parallelism the partial
  // products are summed over the TP group before the bias and the residual are added.
  template <typename T>
  Status RowParallelLinear(T* y, const T* x, size_t w, size_t b, int rows, int in, int out,
                           const T* residual);
  template <typename T>
  Status VocabParallelLoss(T* logits, int r0, int rows, float grad_scale, bool write_grad);
  Status GradSumSquares();  // norm_sq = Σ g² of the whole model, counted once
  // The family's norm (LayerNorm for gpt, RMSNorm for llama) of the residual stream's rows here
  // (x), its output whole in `out` ([N, C], gathered over the TP group under sequence
  // parallelism); mean / rstd: the rows' statistics (arena offsets).
  template <typename T>
  Status NormForward(T* out, size_t mean, size_t rstd, const T* x, size_t w, size_t b);
  // Its backward: dx (the residual stream's rows' gradient) += through the norm from dy, the
  // output's gradient [N, C] — partial sums over the TP group when tensor parallel, reduced here
  // (all-reduced, or reduce-scattered to this rank's rows); the weight (and bias) gradients
  // added, summed over the TP group under sequence parallelism.
  template <typename T>
  Status NormBackward(T* dx, T* dy, const T* x, size_t w, size_t b, size_t mean, size_t rstd);
  // The residual stream's gradient whole: dres itself, or gathered into dln under sequence
  // parallelism (the row-parallel backward and the embedding's read every row).
  template <typename T>
  Result<T*> WholeStreamGrad();
  template <typename T>
  Status LinearGelu(T* post_out, T* pre_out, const T* x, size_t w, size_t b, int rows, int in,
                    int out);
  template <typename T>
  Status LinearBackward(T* dx, const T* dy, const T* x, size_t w, size_t b, int rows, int in,
                        int out, bool dgelu_aux, const T* aux);
  template <typename T>
  Status LinearWeightGrad(const T* dy, const T* x, size_t w, size_t b, int rows, int in, int out,
                          bool accumulate, bool sole = true);
  template <typename T>
  Status LinearInputGrad(T* dx, const T* dy, size_t w, int rows, int in, int out, bool dgelu_aux,
                         const T* aux);
  template <typename T>
  Status LayerForward(int l, bool recompute);
  template <typename T>
  Status LayerBackward(int l);
  template <typename T>
  Status Classifier(int rows_offset, int rows, float grad_scale, Mode mode);
  template <typename T>
  Status ForwardLayers();
  template <typename T>
  Status Head(float grad_scale, Mode mode);
  template <typename T>
  Status BackwardLayers();
  template <typename T>
  Status ForwardBackward(float grad_scale, Mode mode);
  Status Run(float grad_scale, Mode mode);  // ForwardBackward<the element type>

  // ZeroGradients() only marks the gradients: the next training pass writes them (the weight
  // matrices' products with beta 0, no memset and no read of the old values) after zeroing
  // the gradients that are only added to (embeddings, norms, biases): dp's BeginMicroBatch.
  bool first_micro = false;  // this pass writes rather than adds the matrices' gradients
  bool last_micro = true;    // the step's last micro-batch (data-parallel reductions)
  bool norm_fresh = false;   // norm_sq holds the gradients' sum of squares (GradNorm since Run)
  // The batch's tokens, targets and loss weights to the device. The embedding backward's
  // buckets (positions grouped by token) wait for EmbeddingBackwardAll, which builds them on
  // the host from `host_tokens` (the caller's, valid for the call) while the GPU runs the
  // forward and backward queued before it: not on the step's critical path.
  Status Stage(const TokenBatch& batch);
  Status CheckSpliced(const SplicedRows* spliced);                // Stage's part: sets spliced_*
  Status CheckSplicedPointers(const SplicedRows& spliced) const;  // pointer_check.h
  Status EmbeddingBackwardAll();
  const int32_t* host_tokens = nullptr;
  // This call's spliced rows (TokenBatch::spliced; count 0: none): the positions on the host
  // (spliced_skip[n] = 1 there, for the buckets) and on the device (spliced_positions).
  int spliced_count = 0;
  const void* spliced_rows = nullptr;
  void* spliced_grad = nullptr;
  std::vector<unsigned char> spliced_skip;
  size_t spliced_positions = 0;
  // This stage's layers; the activation slot in use (pipeline stages: the micro-batch's) and its
  // residual stream l (0: the stage's input, Layers(): its output) and layer l's activations.
  int Layers() const { return spec.stage_layers(); }
  int cur_slot = 0;
  size_t Res(int l) const { return res[static_cast<size_t>(cur_slot) * (Layers() + 1) + l]; }
  const LayerActs& Acts(int l) const {
    return run.recompute ? acts[0] : acts[static_cast<size_t>(cur_slot) * Layers() + l];
  }
};

}  // namespace bm::train::cuda
