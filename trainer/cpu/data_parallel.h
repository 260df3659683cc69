// DataParallel: the CPU backend's data parallelism and ZeRO — the CPU twin of
// the CUDA backend's, proven against the single-process run in
// tests/trainer/data_parallel_test.cc. It owns the AdamW state, reduces
// gradients across the ranks of a data-parallel group as the model's backward
// finishes each unit (trainer/model/layout.h), on a communication thread
// (trainer/dist/comm_queue.h) so that unit u's reduction overlaps the backward
// of unit u-1, and shards what the ZeRO stage says:
//
//   zero  AdamW state      gradients                         parameters
//   0     all, every rank  all-reduced, last micro-batch     all, every rank
//   1     own shard        reduce-scattered, last micro;     all; own shard updated, then
//                          the rest: local sums (a tied      all-gathered
//                          embedding's unit: all-reduced)
//   2     own shard        reduce-scattered, every micro     all; own shard updated, then
//                          (a tied embedding's unit: after   all-gathered
//                          the stages' exchange)
//   3     own shard        reduce-scattered, as 2            own shard only; each unit gathered
//                                                            just before use (the next one
//                                                            prefetched) and dropped after (filled
//                                                            with NaN, so a read of a dropped unit
//                                                            cannot go unseen)
// At zero 2-3 a unit's gradient is taken (copied for its reduce-scatter and
// the local buffer cleared) on the caller's thread when its backward ends: a
// pipeline stage runs the unit's next backward before the reduction has run.
// Shards follow trainer/dist/shard_plan.h. Reductions sum (the loss scale
// already divides by the global token count), in fp32 or, with ReduceInBf16,
// in bf16 as the CUDA twin does. With a group of one rank every
// stage runs the same code with trivial collectives; zero = 0 on one rank is
// the plain single-process trainer, bit for bit.
//
// Collective calls (every rank of the group, same order): SetLocalState with
// zero 1-2, GetParameters with zero 3, GradNormSquared with zero >= 1,
// OptimizerStep with zero >= 1, ReduceTiedUnits, and every ForwardBackward.
// Errors of the communicator come back from EndMicroBatch and the collective
// calls. Not thread-safe (the backend's thread; the communication thread is
// internal).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/cpu/model.h"
#include "trainer/dist/comm_queue.h"
#include "trainer/dist/communicator.h"
#include "trainer/dist/shard_plan.h"

namespace bm::train::cpu {

class DataParallel final : public UnitHooks {
 public:
  // model and comm outlive this; 0 <= zero <= 3.
  DataParallel(Model<float>* model, dist::Communicator* comm, int zero);
  ~DataParallel() override;
  // Gradients summed in bf16 (grad_reduce = "bf16"; Megatron's --grad-reduce-in-bf16, the CUDA
  // twin's CudaDataParallel::ReduceInBf16): each unit's fp32 gradients rounded to bf16 (to
  // nearest even), summed over the group in bf16 (each addition rounded: trainer/dist/bf16.h)
  // and widened back; a group of one rounds the same way. The tied embedding's units of a
  // pipeline stay fp32. Before the first step.
  void ReduceInBf16() { bf16_ = true; }
  // Zero 3 (zero3_keep_params; the CUDA twin's CudaDataParallel::KeepGatheredLast): the last
  // units of the forward, up to `params` parameters together (ShardPlan::FirstKeptUnit), stay
  // gathered from their forward through their backward and the step's other micro-batches,
  // gathered once a step; the same values. Ignored at zero 0-2. Before the first step.
  void KeepGatheredLast(int64_t params) {
    if (zero_ == 3) kept_first_ = plan_.FirstKeptUnit(params);
  }

  Status SetParameters(std::span<const float> full);
  Status GetParameters(std::span<float> full);
  Status ZeroGrad();

  // Around each micro-batch's ForwardBackward: `last` = the step's last
  // micro-batch (stages 0-1 reduce then). End waits for the reductions.
  void BeginMicroBatch(bool last) { last_micro_ = last; }
  Status EndMicroBatch();
  // Pipeline stages with tied embeddings, zero 2-3: after the stages have added
  // each other's tied gradient (trainer/dist/pipeline_driver.h), reduce-scatters
  // the units holding it, kept local through the step until then. Collective
  // over the group; nothing to do otherwise.
  Status ReduceTiedUnits();

  // Σ g² over all (reduced) gradients, the same on every rank of the group
  // (with zero >= 1 each rank sums its own slices, then the group); with
  // tensor or pipeline parallelism over the tensors this rank owns
  // (ModelShard::OwnedRanges), to be summed over the model-parallel ranks.
  Result<double> GradNormSquared();
  // Clipping by `norm` (the global norm of the gradients as they stand, times
  // step.grad_scale) and one AdamW update.
  Status OptimizerStep(const AdamWStep& step, float norm);

  // This rank's part of the state (resume checkpoints): the master parameters
  // and the moments it owns, local_state_size() floats each.
  int64_t local_state_size() const { return plan_.shard_size(); }
  Status GetLocalState(std::span<float> params, std::span<float> m, std::span<float> v) const;
  Status SetLocalState(std::span<const float> params, std::span<const float> m,
                       std::span<const float> v);

  // Unsharded state only (zero 0; gradients: zero 0, or zero 1 on one rank),
  // else kUnsupported.
  Status GetOptimizerState(std::span<float> m, std::span<float> v) const;
  Status SetOptimizerState(std::span<const float> m, std::span<const float> v);
  Status GetGradients(std::span<float> grads) const;

  int zero() const { return zero_; }
  int64_t bytes() const;  // optimizer state, shards and gather buffers
  // Seconds the compute waited on communication since the start.
  double comm_wait_s() const { return queue_.waited_s(); }

  // UnitHooks (called by the model).
  void Acquire(int unit, int next) override;
  void Release(int unit) override;
  void GradientsReady(int unit) override;

 private:
  struct Segment {  // a tensor's part of one unit's owned range
    int64_t flat = 0, shard = 0, n = 0;
    bool decay = false;
  };
  bool Sharded() const { return zero_ >= 1; }
  // Reduce-scatters unit u's gradients `grads` (numel floats; padded here)
  // into this rank's slice, plan_.slice(u) floats (the communication thread).
  Status ReduceScatterUnit(int u, const float* grads, float* slice);
  // The group's sums of unit u's gradients, in fp32 or (ReduceInBf16, not a tied unit) in bf16:
  // all of `data` in place, or `send` (padded) scattered into this rank's `slice`.
  Status AllReduceGrads(int u, float* data, int64_t n);
  Status ReduceScatterGrads(int u, const float* send, float* slice);
  // Zero 2-3: takes unit u's local gradient (clearing it) and submits its
  // reduce-scatter into the shard.
  void SubmitShardReduction(int u);
  // Submits an all-gather of unit u's slice `slice` (plan_.slice(u) floats,
  // copied) into gather_[u].
  void SubmitGather(int u, const float* slice);
  // Waits for unit u's gather and copies its real elements to `dest`.
  Status FinishGather(int u, float* dest);
  // Copies this rank's owned elements of `full` into shard coordinates.
  void ExtractShard(const float* full, float* shard) const;
  Status GatherAllUnits(const float* shard, float* full);
  // Zero 3: the kept units' gathered values are stale (the shards changed); NaN until the next
  // gather, as a released unit's.
  void DropKept();

  Model<float>* model_;
  dist::Communicator* comm_;
  int zero_;
  dist::ShardPlan plan_;
  std::vector<Segment> segments_;
  std::vector<float> m_, v_;
  std::vector<float> shard_params_;  // zero 3: the master parameters
  std::vector<float> shard_grads_;   // zero >= 2: reduced gradients
  std::vector<bool> whole_sum_;      // zero <= 1: units all-reduced (else reduce-scattered)
  std::vector<bool> tied_unit_;      // units holding a tied embedding shared across stages
  std::vector<std::vector<float>> gather_;
  std::vector<dist::CommQueue::Ticket> gather_ticket_;  // 0: none pending
  std::vector<bool> resident_;                          // zero 3: unit in params()
  int kept_first_ = 0;  // zero 3: KeepGatheredLast's first unit (num_units: none)
  bool last_micro_ = true;
  bool bf16_ = false;  // ReduceInBf16
  mutable dist::CommQueue queue_;
};

}  // namespace bm::train::cpu
