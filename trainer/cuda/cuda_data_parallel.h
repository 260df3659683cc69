// CudaDataParallel: the CUDA backend's parameters, gradients and AdamW state, with data
// parallelism and ZeRO — the design of the CPU twin (trainer/cpu/data_parallel.h, which the
// multi-process tests prove against one process) on device buffers, with the collectives on a
// communication stream of their own so that they overlap the backward pass:
//
//   zero 0  AdamW state and fp32 masters: all. Gradients (fp32): all, all-reduced per unit during
//           the step's last backward. Working weights (bf16/fp32): all.
//   zero 1  AdamW state and masters: the own slices. Gradients (fp32): all, each unit's
//           reduce-scattered in place during the step's last backward, so that only the own
//           slices hold the group's sum (Megatron's distributed optimizer; the rest stays this
//           rank's). Working weights: all; the own slices updated, then all-gathered per unit,
//           each unit's gather waited for when the next forward acquires the unit.
//   zero 2  As 1, but the gradients are reduce-scattered per unit during every backward into the
//           own slices (two unit buckets, and the embeddings' unless FirstUnitUsedAlone).
//   zero 3  As 2, but no working copy is kept: each unit is gathered into one of two slots (and the
//           embeddings' own unless FirstUnitUsedAlone) just before use, the next one prefetched;
//           the next forward's first two are gathered by OptimizerStep right after their AdamW (the
//           communication stream then waits for the whole step, so that no later gather reads a
//           slice before its update). With bf16 work and split masters (below) the own slice's bf16
//           high halves are gathered as they are; otherwise, with 16-bit work, the own slice is
//           cast from the fp32 masters into its place in the slot and gathered in place (FSDP2's
//           mixed precision: 16 bytes a parameter over the group, not 18). With pipeline stages
//           (several micro-batches' forwards before their backwards) a unit not in its slot when
//           acquired is gathered again; a slot is overwritten only after the compute stream
//           released its unit (its `free` event). KeepGatheredLast gives the forward's last units
//           slots of their own, kept to the optimizer step.
//
// With keeps_bf16_sums (one micro-batch a step, bf16 work and sums, no TP or PP) every stage's
// reduced gradients are the group's bf16 sums in a buffer of the own slices (the whole layout at
// zero 0) and its fp32 gradients unit buckets, as at zero 2-3; AdamW reads the sums.
//
// Pipeline stages with tied embeddings at zero 2-3: the units that hold the tied copy
// (SumWhole) are not reduced during the backward; each micro-batch's bucket is added, on the
// compute stream, into a whole gradient buffer of those units that Grad() then addresses, so
// that the first and last stages add each other's copy's gradient to it after the step's
// backward; ReduceTiedUnits then reduce-scatters it into the own slices (the CPU twin's
// ReduceTiedUnits). Every other unit's bucket is reused only after the compute stream waited
// for its reduction (the slot's `ready` event), whatever micro-batch comes next.
//
// Slices follow trainer/dist/shard_plan.h over the layout's units (ParamLayout, aligned so
// every slice is 64-aligned). The step code addresses everything by flat-layout offset:
// Work(off) and Grad(off) resolve to the full buffer or to the unit's slot. Events order the
// streams: a unit's reduction waits for its backward; the compute stream waits for a slot's
// gather (ZeRO-3), or for the unit's gather after the optimizer step (ZeRO 1-2), before using
// it, and for every reduction before the gradient norm.
//
// Split masters (bf16 work, RunSpec::split_masters; kernels/split_master.h): each fp32 master is
// kept as its bf16 rounding (the high half) and its low 16 bits, and AdamW rebuilds the exact
// fp32 value it updates — the same bits as whole masters. The high halves are the working
// copy itself at zero 0 (all of it) and 1-2 (its own slices, which the gather sends as they
// are: 2 bytes a parameter of the shard fewer); at zero 3 they are a buffer of the own slices
// that the gather sends (no cast on the communication stream).
//
// A world of one (a host SelfCommunicator) runs every stage with local copies; "nccl" with one
// rank runs the same through NCCL (and must give the same bits).
//
// Frozen (RunSpec::frozen: LLaVA's frozen language model): the working weights only, whole on
// every rank (bf16: the 16-bit values of what was set, rounded as the working copy is; fp32:
// the values; not fp16), and nothing else — no masters, moments, gradients, buckets or gathers; the
// stage is 0 whatever was asked. The unit hooks do nothing, Grad() is null, the gradient norm,
// the optimizer step and the gradient and optimizer-state calls are refused; Set/GetParameters
// are local (not collective).
//
// The code: cuda_data_parallel.cc (the plan, streams, addresses, collectives),
// cuda_data_parallel_step.cc (a step: micro-batches, unit hooks, norm, AdamW, gathers) and
// cuda_data_parallel_host.cc (parameters, gradients and AdamW state to and from the host).
//
// Not thread-safe; one per CudaModel. Collective calls (every rank, same order): Set/
// GetParameters and SetLocalState with zero >= 1, each micro-batch's backward, GradSumSquares
// with zero >= 2, SumOverGroup, OptimizerStep.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/comm_timing.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/host_staging.h"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/memory_plan.h"
#include "trainer/cuda/param_layout.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/shard_plan.h"

namespace bm::train::cuda {

class CudaDataParallel {
 public:
  // comm: the data-parallel group (not owned; a host communicator must have one rank).
  // work: the working weights' type, bf16 or fp16 (a copy of the fp32 masters) or fp32 (the
  // masters themselves at zero 0; a full fp32 copy at zero 1-2). split_masters (RunSpec's;
  // applies with bf16 work, else ignored): the masters are kept split (above).
  // frozen: as above (zero is then taken as 0).
  CudaDataParallel(const ParamLayout& layout, dist::Communicator* comm, int zero, DType work,
                   bool split_masters = false, bool frozen = false);
  ~CudaDataParallel();
  CudaDataParallel(const CudaDataParallel&) = delete;
  CudaDataParallel& operator=(const CudaDataParallel&) = delete;

  // The layout's unit alignment for `ranks` ranks at this stage.
  static size_t UnitAlign(int zero, int ranks) { return zero >= 1 ? 64 * ranks : 64; }

  // Gradients reduced in bf16 (Megatron's --grad-reduce-in-bf16, FSDP2's reduce_dtype; before
  // Plan): each unit's fp32 gradients are rounded to bf16 into a staging buffer (the widest
  // unit's, 2 bytes an element), summed over the group in bf16 (all-reduced at zero 0,
  // reduce-scattered in place at 1-3) and widened back into the fp32 gradients (zero 0-1) or
  // written / added into the own fp32 slices (2-3); half the bytes on the wire. A world of one
  // rounds the same way. SumWhole's units stay fp32.
  void ReduceInBf16() { reduce_bf16_ = true; }
  bool reduces_in_bf16() const { return reduce_bf16_; }
  // Direct bf16 gradients (Plan decides: ReduceInBf16 with bf16 work, at zero 2-3, whose buckets
  // are fresh every micro-batch, or with one micro-batch a step; Megatron's bf16 main_grad,
  // FSDP2's bf16 reduce_dtype): the backward writes each weight matrix's gradient straight into
  // the staging, rounded to bf16 by the product that computes it, instead of in fp32 for the
  // staging pass to read and round; only the rest of the unit (the gradients that are added to:
  // norms, biases, embeddings, padding) is rounded from fp32. Per parameter of a matrix the
  // backward and the staging move 2 bytes instead of 4 + 4 + 2. Two staging buffers, by unit
  // parity, so that a unit's backward writes one while the next unit's sum is on the wire.
  //
  // GradBf16: where the backward writes the gradient of tensor [off, off + n) in bf16 when it is
  // the tensor's only writer of the micro-batch (a product with beta 0), between the unit's
  // BeginUnitGradients and GradientsReady; null when it must write fp32 (Grad): not direct, a
  // gradient that is added to (ParamLayout::AddedGradients), or a SumWhole unit.
  __nv_bfloat16* GradBf16(size_t off, size_t n);
  // Sums kept in bf16 (Plan decides: direct bf16 gradients with one micro-batch a step and
  // SumSquaresAsReduced, no SumWhole unit; Megatron's bf16 grad buffer): the group's bf16 sums
  // are not widened into fp32 gradients; AdamW reads them as they are (the same update: the
  // widening is exact) and the norm's squares are summed from them (WidenF32Squares without
  // an output: the same partials). At every stage the fp32 gradients that are added to then
  // live in the unit buckets (as at zero 2-3, gradients_in_buckets), and the reduced sums, 2
  // bytes a parameter where they were 4, in one buffer of the own slices (the whole layout at
  // zero 0, where the products write the sums' place itself and it is all-reduced in place;
  // at 1-3 the staging is reduce-scattered into it). Per parameter of a reduced slice 8 bytes
  // fewer moved (the widening's 2 + 4 and AdamW's 2 more) for 2 read by the squares.
  bool keeps_bf16_sums() const { return keep_bf16_; }
  // The fp32 gradients are unit buckets, fresh every micro-batch (zero 2-3, or keeps_bf16_sums),
  // rather than the whole layout's (after Plan).
  bool gradients_in_buckets() const { return buckets_; }
  // The first unit (the embeddings) is never held beside another unit: the forward uses it
  // first and alone, the backward writes its gradients last, and the head does not read it (an
  // untied head, or a stage without the head; before Plan). At zero 2-3 it then takes the
  // rings' slot 0 (the next unit's neighbour by parity, as any other unit) rather than a
  // gradient bucket and a gathered slot of its own, where that holds less: when it is smaller
  // than two of the widest other units (LLaMA-2-7B: 131M against 202M; 0.75 GiB fewer).
  void FirstUnitUsedAlone() { first_alone_ = true; }
  // The first unit as rows (before Plan; with FirstUnitUsedAlone, for a first unit that is one
  // table of `cols` columns whose gradient the backward forms as at most `capacity` distinct
  // rows: untied token embeddings). With keeps_bf16_sums (Plan decides) the backward writes its
  // rows' bf16 gradients and their tokens (FirstUnitRows) rather than the whole table's fp32
  // gradient; its reduction all-gathers every rank's rows (LLaMA 1B at 2 x 2048: 16.8 MB a rank
  // where the table's sum moves 262 MB) and adds them, rank by rank, into the own slice of the
  // zeroed sums (PyTorch's sparse embedding gradients, summed as the dense ones are: each rank's
  // rows rounded to bf16, each addition rounded to bf16).
  void FirstUnitAsRows(int capacity, int cols) {
    rows_cap_ = (capacity + 7) / 8 * 8;  // whole 16-byte lines for each segment
    rows_cols_ = cols;
  }
  struct Rows {
    __nv_bfloat16* rows;  // [capacity, cols]: row b's gradient
    int* tokens;          // [capacity]: row b's token; -1 past the last row (BeginUnitGradients)
  };
  // Where the backward writes the first unit's rows (this rank's); null when it is not reduced
  // as rows.
  const Rows* FirstUnitRows() const { return as_rows_ ? &rows_here_ : nullptr; }
  // Every step one micro-batch (RunSpec::micro_batches_per_step = 1; before Plan): at zero 2-3
  // no reduce-scatter scratch (nothing is added to the reduced slices), and a second micro-batch
  // in a step is refused.
  void OneMicroBatchPerStep() { one_micro_ = true; }
  // Zero 3 (zero3_keep_params; before Plan): the last units of the forward, up to `params`
  // parameters together (ShardPlan::FirstKeptUnit), are gathered into slots of their own that
  // keep them until the optimizer step: their backward, and the step's other micro-batches, use
  // them without gathering again (DeepSpeed's ZeRO-3 keeps a parameter it will reuse soon,
  // stage3_max_reuse_distance; FSDP2's reshard_after_forward=False on those blocks). Each costs
  // its unit's 16-bit weights in memory (the plan's "gathered unit kept to its backward") and
  // saves its second all-gather; the same bits. Ignored at zero 0-2.
  void KeepGatheredLast(int64_t params) { keep_params_ = zero_ == 3 ? params : 0; }
  // Adds its buffers to the plan; Bind after the arena exists (creates the communication
  // stream and events; zeroes nothing: the arena is zeroed by its owner).
  void Plan(MemoryPlan* plan);
  Status Bind(const DeviceArena* arena, cudaStream_t compute);

  int zero() const { return zero_; }
  bool frozen() const { return frozen_; }
  // Floats of fp32 master state this rank holds (its slices, or everything; 0 when frozen).
  int64_t local_size() const { return frozen_ ? 0 : static_cast<int64_t>(plan_.shard_size()); }

  // Addresses by flat offset (valid for the unit being computed).
  template <typename T>
  const T* Work(size_t off) const {
    return reinterpret_cast<const T*>(WorkBytes(off));
  }
  float* Grad(size_t off) const;

  // Host <-> device (flat GPU layout; collective with zero >= 1). SetParameters asks `fill` for
  // the ranges this rank keeps only (everything at zero 0, its slices at zero >= 1);
  // GetParameters hands `take` every unit in order, or, with an empty `take`, only takes part
  // in the gather.
  Status SetParameters(const RangeSource& fill);
  Status GetParameters(const RangeSink& take);
  // zero 0, or zero 1 on one rank (the full gradients are summed only then).
  Status GetGradients(std::vector<float>* flat);
  Status GetOptimizerState(std::vector<float>* m, std::vector<float>* v);  // zero 0
  Status SetOptimizerState(const std::vector<float>& m, const std::vector<float>& v);
  Status GetLocalState(std::vector<float>* master, std::vector<float>* m, std::vector<float>* v);
  Status SetLocalState(const std::vector<float>& master, const std::vector<float>& m,
                       const std::vector<float>& v);

  // A training step: ZeroGradients marks; each micro-batch is Begin .. End around the
  // forward-backward; the step code calls the unit hooks in between.
  void ZeroGradients() {
    zero_pending_ = true;
    squared_.assign(squared_.size(), 0);
  }
  // Before something reads the reduced gradients: zeros where no micro-batch ran since
  // ZeroGradients (the whole gradients, or with buckets the own slices and their squares).
  Status ZeroPendingGradients();
  // last: the step's last micro-batch. The step's first one's products write rather than add
  // the gradients (without buckets; with them every micro-batch writes fresh unit buckets).
  Status BeginMicroBatch(bool last);
  bool writes_fresh_gradients() const { return first_micro_; }
  bool splits_masters() const { return split_; }
  // Where the step's reduced fp32 gradients lie in the arena (byte offsets): they begin at
  // ReducedGradBegin() and unit u's end at ReducedGradEnd(u) — the full gradients in layout
  // order at zero 0-1, the own slices in unit order at zero 2-3. At zero 2-3 with one
  // micro-batch a step each unit's slices are written whole (not added to) when the unit's
  // backward is done, so until then their memory may hold other data (CudaModel's activations).
  // With keeps_bf16_sums they are the bf16 sums (2 bytes an element), in the own slices'
  // order at every stage.
  size_t ReducedGradBegin() const { return buckets_ ? grad_shard_ : grad_; }
  size_t ReducedGradEnd(int unit) const;
  // The micro-batch begun is the step's first (its gradients are written, not added to).
  bool begins_step() const { return buckets_ ? !accumulate_ : first_micro_; }
  // Zero 0-1: a unit's gradients that are only added to (ParamLayout::AddedGradients, padding
  // included) are zeroed when its backward begins rather than when the step's first micro-batch
  // does, so that until then its gradient storage may hold other data (CudaModel's activations;
  // every unit's backward must then begin in each first micro-batch: one pipeline stage).
  void ZeroGradientsPerUnit() { per_unit_zeroing_ = true; }
  Status EndMicroBatch();  // the compute stream waits for every reduction issued

  // Unit hooks, in the order the model uses the units (see the CPU twin).
  Status Acquire(int unit, int next);
  Status Release(int unit);
  Status BeginUnitGradients(int unit);
  Status GradientsReady(int unit);

  // out = Σ g² over the whole (reduced) gradient, on the device, the same on every rank; not
  // when sums_own_slices() (the caller sums OwnSlicesOf its ranges, then SumOverGroup; the same
  // at zero >= 2 for a part of the layout: reduces_to_own_slices) unless squares_summed().
  Status GradSumSquares(float* out, float* scratch);
  // With SumSquaresAsReduced (before Plan: the norm is over every unit's reduced gradients, no
  // TP or PP group choosing ranges) and ReduceInBf16, the pass that widens a unit's bf16 sum
  // back into fp32 in the step's last reduction of it (the whole unit at zero 0, the own slice
  // at 1-3) also sums the squares of what it writes, into kUnitSquareBlocks partial sums
  // (WidenF32Squares). squares_summed: every unit's are there, and GradSumSquares adds them up
  // (and over the group at zero >= 1) rather than reading every gradient again after the
  // backward. Not when some unit was summed in fp32 (SumWhole's), or no micro-batch has run
  // since ZeroGradients. (A pass of its own over fp32 sums, on the communication stream beside
  // the backward, saved nothing: run 171.)
  bool squares_summed() const;
  void SumSquaresAsReduced() { squares_ = !frozen_; }
  // The units that overlap `r` (the tied embedding, whose gradient another pipeline stage adds
  // to after the step's backward, and whose units are cut into slices elsewhere). Zero 1: they
  // are all-reduced rather than reduce-scattered. Zero 2-3: they are kept whole through the
  // step (above) and reduce-scattered by ReduceTiedUnits. Before Plan.
  void SumWhole(const Range& r);
  // Zero 2-3 with SumWhole units: after the step's last EndMicroBatch and the stages' exchange,
  // reduce-scatters those units' whole gradients into the own slices; the compute stream waits
  // for it. Nothing otherwise. Collective over the group.
  Status ReduceTiedUnits();
  // Zero 1 over several ranks: each rank holds the group's sum of its own slices only.
  bool sums_own_slices() const { return zero_ == 1 && plan_.ranks() > 1; }
  // The reduced gradients are the own slices only: zero 1 over several ranks, or zero >= 2
  // (their buffer of own slices, one rank included). A norm over some ranges (tensor
  // parallelism: the tensors a rank owns) sums OwnSlicesOf them at ReducedGrad, then
  // SumOverGroup.
  bool reduces_to_own_slices() const { return zero_ >= 2 || sums_own_slices(); }
  // The parts of `ranges` (ascending flat offsets) in this rank's own slices, ascending; each
  // within one unit's slice.
  std::vector<Range> OwnSlicesOf(const std::vector<Range>& ranges) const;
  // The reduced gradient at flat offset `off` (after the step's last EndMicroBatch): the full
  // buffer's at zero <= 1; at zero >= 2 the own slices' buffer's, where `off` must lie in this
  // rank's slice of its unit (as OwnSlicesOf's ranges do, to their end). Not with
  // keeps_bf16_sums (whose norm is always summed as the sums are reduced: squares_summed).
  const float* ReducedGrad(size_t off) const;
  // value (one float on the device) summed over the group, on the compute stream.
  Status SumOverGroup(float* value);
  // AdamW with clipping by the global norm from `sumsq`; then the working weights.
  Status OptimizerStep(const AdamWHyper& hyper, const float* sumsq);

  // Exposed communication: milliseconds the compute stream waited on the communication
  // stream, summed since Bind (call after the compute stream synchronized, after every step or
  // evaluation: the timing events are reused then).
  Status CollectWaits() { return timing_.Collect(); }
  double wait_ms() const { return timing_.wait_ms(); }
  // The same by where the compute stream waited: "end of micro-batch" (the reductions still in
  // flight when the backward ends), "gather" (ZeRO-3's slot or ZeRO 1-2's unit gather),
  // "gradient bucket" and "staging" (a reduction still reading the buffer the next unit's
  // backward writes), "tied units", "all gathers" (before the weights are written again).
  const std::map<std::string, double>& wait_ms_by_site() const { return timing_.wait_ms_by_site(); }
  // Each unit's reduction in the steps' last micro-batches (CommTiming::Reduction): queued,
  // its own length, and its end after the backward's: what the "end of micro-batch" wait is.
  const std::map<int, CommTiming::Reduction>& reductions() const { return timing_.reductions(); }

 private:
  struct Slot {  // a unit-sized device buffer that holds one unit at a time
    size_t offset = 0;
    int unit = -1;  // whose data it holds (-1: none, or stale)
    bool pending = false;
    cudaEvent_t ready = nullptr;  // on the comm stream: the gather (or reduction) is done
    cudaEvent_t free = nullptr;   // on the compute stream: done reading / writing it
  };
  const char* WorkBytes(size_t off) const;
  size_t elem() const { return lowp_ ? 2 : 4; }
  dist::DType work_dtype() const;
  // The working weights' 16-bit copy of n fp32 masters (lowp_ only).
  Status CastToWork(void* out, const float* in, size_t n, cudaStream_t s) const;
  int UnitOf(size_t off) const;
  // Every slot (for their events), and those that hold gathered working weights.
  std::vector<Slot*> AllSlots();
  std::vector<Slot*> WorkSlots();
  Slot* WorkSlotFor(int unit);
  Slot* GradSlotFor(int unit);
  Status ZeroAddedGradients(int unit, float* base);
  Status IssueGather(int unit);
  // The communication stream waits for the compute stream's work so far (and vice versa).
  Status CommAfterCompute();
  // GradientsReady's reductions, on the communication stream (zero 0-1; zero 2-3), and zero
  // 2-3's SumWhole units, kept whole on the compute stream instead.
  Status ReduceUnit(int unit);
  Status ReduceUnitToSlices(int unit);
  // Buckets: zeroes the own slices of the units that no micro-batch of the step reduced
  // (sliced_), and their squares' partial sums, on the compute stream.
  Status ZeroUnwrittenSlices();
  Status KeepWhole(int unit);
  // FirstUnitAsRows: the first unit's rows from every rank into its own slice of the sums, on the
  // communication stream.
  Status ReduceRows();
  size_t RowsSegment() const { return rows_cap_ * (2 + static_cast<size_t>(rows_cols_)); }  // bf16s
  // Where the unit's squares' partial sums go (squares_summed).
  float* UnitSquares(int unit) const;
  Status ComputeAfter(cudaEvent_t comm_event, const char* site);
  // Collectives on the communication stream (a host communicator of one rank: copies).
  Status AllReduce(void* data, size_t n, dist::DType t, cudaStream_t s);
  Status ReduceScatter(const void* send, void* recv, size_t n, dist::DType t, cudaStream_t s);
  Status AllGather(const void* send, void* recv, size_t n, dist::DType t, cudaStream_t s);
  // ReduceInBf16, on the communication stream: unit u's fp32 gradients at `grads` (its whole
  // padded unit) rounded into the staging and summed there (zero 0: all of it; 1-3: this
  // rank's slice, in place); `out` gets the sum (zero 0: the whole unit; 1-3: the slice),
  // written or, with `accumulate`, added.
  Status ReduceBf16(int unit, const float* grads, float* out, bool accumulate);
  Slot* StageFor(int unit) { return &stage_[direct_bf16_ ? unit % 2 : 0]; }
  // Where unit u's bf16 gradients are gathered for its reduction (its padded unit): its staging,
  // or with keep_bf16_ at zero 0 its place in the sums (reduced in place).
  __nv_bfloat16* Staged(int unit) const;
  // keep_bf16_: unit u's own slice of the bf16 sums.
  __nv_bfloat16* SumsOf(int unit) const;
  // Zero 1-2: every unit's own slice of the working weights, from this rank's master slices.
  Status WriteWorkSlices(cudaStream_t s);
  Status MastersChanged();
  // split_: unit u's own slice of the masters' high halves (the working copy's at zero 0-2).
  uint16_t* HighHalves(int unit) const;
  // split_: the masters' halves from fp32 values, split on the host a chunk at a time:
  // values(u, at, out) gives unit u's own slice from its element `at` on. GetSplitMasters: back,
  // in local order (this rank's slices in unit order; the flat layout at zero 0).
  using SliceSource = std::function<void(int unit, size_t at, std::span<float> out)>;
  Status SetSplitMasters(const SliceSource& values);
  Status GetSplitMasters(std::vector<float>* local);
  // zero 1-2: issues every unit's gather of the working weights; the compute stream waits for
  // unit u's in Acquire(u) (the next forward overlaps the gathers of the units after it), and
  // for all of them in AwaitGathers (before it writes the working weights again).
  Status GatherWorkAllUnits();
  Status AwaitGathers();
  void GathersAwaited();  // every gather issued is done on the compute stream's side
  // Every unit's master slices from all ranks, unit by unit through fp32 gather space, to
  // `take` (if any).
  Status GatherMaster(const RangeSink& take);
  // Frozen: the working weights to and from the host, a chunk at a time (16-bit: converted on
  // the host, MasterHigh's rounding).
  Status SetFrozen(const RangeSource& fill);
  Status GetFrozen(const RangeSink& take);
  // kInvalidArgument naming `what` when frozen (no gradients, no optimizer state).
  Status RefuseFrozen(const char* what) const;
  template <typename T>
  T* At(size_t off) const {
    return arena_->At<T>(off);
  }

  const ParamLayout& layout_;
  dist::Communicator* comm_;
  int zero_;
  DType work_;
  bool lowp_;    // a 16-bit working copy
  bool split_;   // the masters as bf16 high halves and low halves (lo_): split masters
  bool frozen_;  // the working weights only (above)
  dist::ShardPlan plan_;
  const DeviceArena* arena_ = nullptr;
  cudaStream_t compute_ = nullptr, comm_stream_ = nullptr;
  // arena offsets
  size_t master_ = 0, m_ = 0, v_ = 0;  // local_size() fp32 each (no master_ when split_)
  size_t lo_ = 0;                      // split_: the masters' low halves, 16 bits each
  size_t hi_ = 0;                      // split_ at zero 3: the own slices' high halves
  size_t work_off_ = 0;                // full working weights (zero <= 2; zero 0 fp32: master)
  size_t grad_ = 0;                    // full gradients (zero <= 1)
  size_t decay_mask_ = 0;              // zero 0: AdamW's weight decay per 64 elements
  std::vector<uint32_t> decay_mask_host_;
  bool decay_mask_staged_ = false;  // copied into the arena (after its owner zeroed it)
  // Buckets: the reduced own slices (fp32, or bf16 with keep_bf16_); one slice of scratch.
  size_t grad_shard_ = 0, rs_tmp_ = 0;
  Slot emb_work_, emb_grad_;          // the embeddings' own slots (zero 3 / zero >= 2)
  bool first_alone_ = false;          // FirstUnitUsedAlone
  bool first_in_ring_ = false;        // unit 0 in the rings' slot 0 (Plan decides)
  Slot work_ring_[2], grad_ring_[2];  // the other units
  int64_t keep_params_ = 0;           // KeepGatheredLast
  int kept_first_ = 0;                // zero 3: the first kept unit (Plan; num_units: none)
  std::vector<Slot> kept_;            // zero 3: unit kept_first_ + i's own gathered slot
  std::vector<Slot*> grad_slot_of_unit_, work_slot_of_unit_;
  std::vector<Range> zero_ranges_;  // gradients only added to (ParamLayout::AddedGradients)
  std::vector<char> whole_sum_;     // SumWhole's units (zero 1: all-reduced; 2-3: kept whole)
  // zero >= 2: SumWhole's units' whole gradients (arena offset; each unit's float offset in it),
  // and whether the unit's backward is writing its bucket (Grad() then addresses the bucket).
  size_t whole_grad_ = 0;
  std::vector<size_t> whole_at_;
  std::vector<char> in_bucket_;
  bool zero_pending_ = false, first_micro_ = false, last_micro_ = true;
  bool per_unit_zeroing_ = false;
  bool accumulate_ = false;   // buckets: add this micro-batch's reduced slices to the step's
  std::vector<char> sliced_;  // buckets: per unit, a reduction of the step wrote its slices
  bool one_micro_ = false;    // OneMicroBatchPerStep
  bool reduce_bf16_ = false;  // ReduceInBf16
  bool direct_bf16_ = false;  // direct bf16 gradients (GradBf16)
  bool keep_bf16_ = false;    // keeps_bf16_sums
  bool buckets_ = false;      // gradients_in_buckets
  // FirstUnitAsRows: the rows' capacity and width; whether Plan took them (as_rows_); every
  // rank's segment (its tokens, then its rows) in rank order; this rank's.
  int rows_cap_ = 0, rows_cols_ = 0;
  bool as_rows_ = false;
  size_t rows_off_ = 0;
  Rows rows_here_{};
  // Each unit's kUnitSquareBlocks partial sums of squares (arena offset), and whether the
  // step's last reduction of the unit wrote them (squares_summed).
  bool squares_ = false;
  size_t unit_squares_ = 0;
  std::vector<char> squared_;
  // Its staging, the widest padded unit in bf16: one, or with direct_bf16_ two (unit u uses
  // stage_[u % 2]; `ready`: the communication stream is done with it).
  Slot stage_[2];
  std::vector<std::vector<Range>> bf16_written_;  // direct_bf16_: per unit, GradBf16's ranges
  cudaEvent_t comm_done_ = nullptr, compute_mark_ = nullptr;
  // zero 1-2: each unit's gather of the working weights (recorded on the comm stream), whether
  // the compute stream has yet to wait for it, and the last one's (all of them done).
  std::vector<cudaEvent_t> unit_gathered_;
  std::vector<char> gather_pending_;
  cudaEvent_t gathers_done_ = nullptr;
  bool gathers_outstanding_ = false;
  CommTiming timing_;  // the waits (ComputeAfter) and the last micro-batch's reductions
};

}  // namespace bm::train::cuda
