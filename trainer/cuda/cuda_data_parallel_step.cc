// CudaDataParallel's training step (cuda_data_parallel.h): the micro-batches, the unit hooks
// the step code calls in between, the gradient norm, AdamW over the own slices and the
// gathers of the working weights after it.
#include <algorithm>
#include <type_traits>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_data_parallel.h"
#include "trainer/cuda/kernels/residual.cuh"

namespace bm::train::cuda {
namespace {

using CommType = dist::DType;

}  // namespace

Status CudaDataParallel::ZeroPendingGradients() {
  if (frozen_ || !zero_pending_) return Status::Ok();
  zero_pending_ = false;
  if (buckets_) {  // no micro-batch in the step: no unit's slices were written
    sliced_.assign(sliced_.size(), 0);
    return ZeroUnwrittenSlices();
  }
  BM_CUDA_CHECK(cudaMemsetAsync(At<float>(grad_), 0, layout_.total() * 4, compute_), "zero grads");
  return Status::Ok();
}

Status CudaDataParallel::ZeroUnwrittenSlices() {
  const size_t elem = keep_bf16_ ? 2 : 4;
  for (int u = 0; u < plan_.num_units(); ++u) {
    if (sliced_[u] || whole_sum_[u]) continue;  // SumWhole's: ReduceTiedUnits writes them
    BM_CUDA_CHECK(cudaMemsetAsync(At<char>(grad_shard_) + plan_.shard_offset(u) * elem, 0,
                                  static_cast<size_t>(plan_.slice(u)) * elem, compute_),
                  "zero unit {} gradient slice (no backward wrote it)", u);
    sliced_[u] = 1;
    if (squared_.empty()) continue;
    BM_CUDA_CHECK(cudaMemsetAsync(UnitSquares(u), 0, kUnitSquareBlocks * 4, compute_),
                  "zero unit {} squares", u);
    squared_[u] = 1;
  }
  return Status::Ok();
}

Status CudaDataParallel::BeginMicroBatch(bool last) {
  last_micro_ = last;
  squared_.assign(squared_.size(), 0);
  if (frozen_) {  // no gradients to write or add to
    first_micro_ = false;
    return Status::Ok();
  }
  if (buckets_) {
    // Fresh buckets every micro-batch; the own slices accumulate: a unit's first reduction in
    // the step writes its slices whole, later ones add to them (sliced_), and the step's last
    // micro-batch zeroes those of units no backward reduced (rather than every slice up front:
    // LLaMA 1B's 2.2 GB a step on each of two ranks).
    first_micro_ = true;
    if (zero_pending_) {
      sliced_.assign(sliced_.size(), 0);
      zero_pending_ = false;
      accumulate_ = false;
    } else if (one_micro_) {
      return Status(ErrorCode::kInvalidArgument,
                    "CUDA data parallel: planned for one micro-batch a step "
                    "(RunSpec::micro_batches_per_step = 1), given a second one in the step");
    } else {
      accumulate_ = true;
    }
    return Status::Ok();
  }
  first_micro_ = zero_pending_;
  if (first_micro_) {
    if (!per_unit_zeroing_) {
      for (const Range& r : zero_ranges_)
        BM_CUDA_CHECK(cudaMemsetAsync(At<float>(grad_) + r.offset, 0, r.numel * 4, compute_),
                      "zero gradients [{}, {})", r.offset, r.end());
    }
    zero_pending_ = false;
  }
  return Status::Ok();
}

// Zeroes unit u's share of the added gradients in its gradient storage at `base` (the unit's
// first element).
Status CudaDataParallel::ZeroAddedGradients(int unit, float* base) {
  const Range& u = layout_.units()[unit];
  for (const Range& r : zero_ranges_) {
    const size_t b = std::max(r.offset, u.offset), e = std::min(r.end(), u.end());
    if (b < e)
      BM_CUDA_CHECK(cudaMemsetAsync(base + (b - u.offset), 0, (e - b) * 4, compute_),
                    "zero unit {} gradients", unit);
  }
  return Status::Ok();
}

Status CudaDataParallel::EndMicroBatch() {
  if (frozen_) return Status::Ok();  // nothing was issued on the communication stream
  if (last_micro_) BM_TRY(timing_.BackwardEnds(compute_));
  BM_CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_), "communication done");
  BM_TRY(ComputeAfter(comm_done_, "end of micro-batch"));
  GathersAwaited();  // issued before this micro-batch's reductions, on the same stream
  for (Slot& st : stage_) st.pending = false;
  return buckets_ && last_micro_ ? ZeroUnwrittenSlices() : Status::Ok();
}

// Units are used in order, forward and backward, one at a time: by parity, the unit in use
// and the next one (prefetched, or reduced while the next computes) never share a slot. The
// first unit has slots of its own unless it is used alone (FirstUnitUsedAlone); the kept units
// (KeepGatheredLast) have gathered slots of their own.
CudaDataParallel::Slot* CudaDataParallel::WorkSlotFor(int unit) {
  if (unit >= kept_first_) return &kept_[unit - kept_first_];
  return unit == 0 && !first_in_ring_ ? &emb_work_ : &work_ring_[unit % 2];
}

CudaDataParallel::Slot* CudaDataParallel::GradSlotFor(int unit) {
  return unit == 0 && !first_in_ring_ ? &emb_grad_ : &grad_ring_[unit % 2];
}

Status CudaDataParallel::IssueGather(int unit) {
  Slot* s = WorkSlotFor(unit);
  // The slot's previous unit: the compute stream must be done with it.
  BM_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, s->free, 0), "gather waits for its slot");
  const size_t slice = static_cast<size_t>(plan_.slice(unit));
  char* gathered = At<char>(s->offset);
  const void* send = split_ ? static_cast<const void*>(HighHalves(unit))
                            : At<float>(master_) + plan_.shard_offset(unit);
  if (lowp_ && !split_) {  // cast at gather time: the own slice's 16-bit copy, in its place
    char* mine = gathered + plan_.rank() * slice * elem();
    BM_TRY(CastToWork(mine, static_cast<const float*>(send), slice, comm_stream_));
    send = mine;
  }
  BM_TRY(AllGather(send, gathered, slice, work_dtype(), comm_stream_));
  BM_CUDA_CHECK(cudaEventRecord(s->ready, comm_stream_), "gathered unit {}", unit);
  s->unit = unit;
  s->pending = true;
  work_slot_of_unit_[unit] = s;
  return Status::Ok();
}

Status CudaDataParallel::Acquire(int unit, int next) {
  if (zero_ == 1 || zero_ == 2) {
    if (!gather_pending_[unit]) return Status::Ok();
    gather_pending_[unit] = 0;
    return ComputeAfter(unit_gathered_[unit], "gather");
  }
  if (zero_ != 3) return Status::Ok();
  Slot* s = work_slot_of_unit_[unit];
  if (!s || s->unit != unit) {
    BM_TRY(CommAfterCompute());  // the shards are current (after the optimizer step)
    BM_TRY(IssueGather(unit));
    s = work_slot_of_unit_[unit];
  }
  if (s->pending) {
    BM_TRY(ComputeAfter(s->ready, "gather"));
    s->pending = false;
  }
  if (next >= 0) {
    Slot* n = work_slot_of_unit_[next];
    if (!n || n->unit != next) BM_TRY(IssueGather(next));
  }
  return Status::Ok();
}

Status CudaDataParallel::Release(int unit) {
  if (zero_ != 3) return Status::Ok();
  // The data stays until another unit is gathered into the slot (a unit used again
  // right away, as the last layers at the turn from forward to backward, is not gathered
  // twice).
  BM_CUDA_CHECK(cudaEventRecord(work_slot_of_unit_[unit]->free, compute_), "release unit {}", unit);
  return Status::Ok();
}

Status CudaDataParallel::BeginUnitGradients(int unit) {
  if (frozen_) return Status::Ok();
  if (unit == 0 && as_rows_) {  // no rows yet: every token -1
    BM_CUDA_CHECK(
        cudaMemsetAsync(rows_here_.tokens, 0xff, static_cast<size_t>(rows_cap_) * 4, compute_),
        "first unit's rows");
    return Status::Ok();
  }
  if (direct_bf16_) {  // the staging the unit's products write: the last unit's sum has read it
    Slot* st = StageFor(unit);
    if (st->pending) {
      BM_TRY(ComputeAfter(st->ready, "staging"));
      st->pending = false;
    }
    bf16_written_[unit].clear();
  }
  if (!buckets_) {
    if (!per_unit_zeroing_ || !first_micro_) return Status::Ok();
    return ZeroAddedGradients(unit, At<float>(grad_) + layout_.units()[unit].offset);
  }
  Slot* s = GradSlotFor(unit);
  // The slot's previous reduction must have read it.
  if (s->pending) {
    BM_TRY(ComputeAfter(s->ready, "gradient bucket"));
    s->pending = false;
  }
  s->unit = unit;
  grad_slot_of_unit_[unit] = s;
  in_bucket_[unit] = 1;
  return ZeroAddedGradients(unit, At<float>(s->offset));
}

Status CudaDataParallel::GradientsReady(int unit) {
  if (frozen_) return Status::Ok();
  if (!buckets_ && !last_micro_) return Status::Ok();
  if (buckets_) {
    in_bucket_[unit] = 0;
    if (whole_sum_[unit]) return KeepWhole(unit);
  }
  // The step's last reductions are timed: what is left of them when the backward ends is the
  // exposed tail ("end of micro-batch").
  if (last_micro_) BM_TRY(timing_.ReductionReady(unit, compute_));
  BM_TRY(CommAfterCompute());
  if (last_micro_) BM_TRY(timing_.ReductionBegins(comm_stream_));
  BM_TRY(buckets_ ? ReduceUnitToSlices(unit) : ReduceUnit(unit));
  return last_micro_ ? timing_.ReductionEnds(comm_stream_) : Status::Ok();
}

// Zero 0-1 (whole fp32 gradients), on the communication stream: the unit's gradients summed
// over the group, whole (zero 0, and zero 1's SumWhole units) or into the own slice.
Status CudaDataParallel::ReduceUnit(int unit) {
  const Range& u = layout_.units()[unit];
  float* grads = At<float>(grad_) + u.offset;
  const size_t n = static_cast<size_t>(plan_.slice(unit));
  if (reduce_bf16_ && !whole_sum_[unit])
    return ReduceBf16(unit, grads, zero_ == 0 ? grads : grads + plan_.rank() * n, false);
  if (zero_ == 0 || whole_sum_[unit])
    return AllReduce(grads, u.numel, CommType::kFloat32, comm_stream_);
  // Zero 1: the optimizer reads the own slice only, so only it is summed, in place (the
  // unit's numel is a multiple of the ranks: UnitAlign).
  return ReduceScatter(grads, grads + plan_.rank() * n, n, CommType::kFloat32, comm_stream_);
}

// Buckets (zero 2-3, or keep_bf16_), on the communication stream: the unit's bucket
// reduce-scattered into (or, after the step's first micro-batch, added to) its own slice (with
// keep_bf16_ at zero 0: all-reduced, the whole unit); the bucket's `ready` event then frees it.
Status CudaDataParallel::ReduceUnitToSlices(int unit) {
  if (unit == 0 && as_rows_) {
    sliced_[0] = 1;
    return ReduceRows();
  }
  Slot* s = grad_slot_of_unit_[unit];
  float* slice = keep_bf16_ ? nullptr : At<float>(grad_shard_) + plan_.shard_offset(unit);
  const size_t n = static_cast<size_t>(plan_.slice(unit));
  const bool add = sliced_[unit] != 0;  // an earlier micro-batch of the step wrote it
  sliced_[unit] = 1;
  if (reduce_bf16_) {
    BM_TRY(ReduceBf16(unit, At<float>(s->offset), slice, add));
  } else if (!add) {
    BM_TRY(ReduceScatter(At<float>(s->offset), slice, n, CommType::kFloat32, comm_stream_));
  } else {
    BM_TRY(ReduceScatter(At<float>(s->offset), At<float>(rs_tmp_), n, CommType::kFloat32,
                         comm_stream_));
    BM_TRY(AccumulateF32(slice, At<float>(rs_tmp_), n, comm_stream_));
  }
  BM_CUDA_CHECK(cudaEventRecord(s->ready, comm_stream_), "unit {} reduced", unit);
  s->pending = true;
  return Status::Ok();
}

// Zero 2-3, a SumWhole unit (ReduceTiedUnits): this micro-batch's bucket added to its whole
// gradient on the compute stream, so the slot is free again at once.
Status CudaDataParallel::KeepWhole(int unit) {
  const Range& u = layout_.units()[unit];
  const Slot* s = grad_slot_of_unit_[unit];
  float* whole = At<float>(whole_grad_) + whole_at_[unit];
  if (!accumulate_) {
    BM_CUDA_CHECK(cudaMemcpyAsync(whole, At<float>(s->offset), u.numel * 4,
                                  cudaMemcpyDeviceToDevice, compute_),
                  "unit {} gradient kept whole", unit);
    return Status::Ok();
  }
  return AccumulateF32(whole, At<float>(s->offset), u.numel, compute_);
}

Status CudaDataParallel::RefuseFrozen(const char* what) const {
  if (!frozen_) return Status::Ok();
  return Errorf(ErrorCode::kInvalidArgument,
                "{}: the model is frozen (RunSpec::frozen): it has no gradients and no optimizer "
                "state",
                what);
}

float* CudaDataParallel::UnitSquares(int unit) const {
  return At<float>(unit_squares_) + static_cast<size_t>(unit) * kUnitSquareBlocks;
}

bool CudaDataParallel::squares_summed() const {
  return !squared_.empty() &&
         std::all_of(squared_.begin(), squared_.end(), [](char c) { return c; });
}

Status CudaDataParallel::GradSumSquares(float* out, float* scratch) {
  BM_TRY(RefuseFrozen("the gradient norm"));
  BM_TRY(ZeroPendingGradients());  // no micro-batch since ZeroGradients: zeros
  if (squares_summed()) {
    BM_TRY(SumSquarePartials(out, At<float>(unit_squares_),
                             static_cast<int>(squared_.size()) * kUnitSquareBlocks, compute_));
    return zero_ >= 1 ? SumOverGroup(out) : Status::Ok();
  }
  if (sums_own_slices())
    return Status(ErrorCode::kInternal,
                  "GradSumSquares: at zero 1 over several ranks the norm counts the own slices "
                  "(OwnSlicesOf), then the group (SumOverGroup)");
  if (!buckets_) {
    return cuda::GradSumSquares(out, scratch, At<float>(grad_), layout_.total(), compute_);
  }
  BM_TRY(cuda::GradSumSquares(out, scratch, At<float>(grad_shard_), local_size(), compute_));
  return SumOverGroup(out);
}

void CudaDataParallel::SumWhole(const Range& r) {
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t begin = static_cast<size_t>(plan_.unit(u).offset);
    if (begin < r.end() && r.offset < begin + static_cast<size_t>(plan_.unit(u).numel))
      whole_sum_[u] = 1;
  }
}

Status CudaDataParallel::ReduceTiedUnits() {
  if (frozen_ || zero_ < 2 || whole_grad_ == 0) return Status::Ok();
  BM_TRY(CommAfterCompute());  // the stages' exchange added to the whole gradients
  for (int u = 0; u < plan_.num_units(); ++u) {
    if (!whole_sum_[u]) continue;
    // Nothing else wrote the unit's slice of the step's shard buffer: the group's sum is
    // written there.
    BM_TRY(ReduceScatter(At<float>(whole_grad_) + whole_at_[u],
                         At<float>(grad_shard_) + plan_.shard_offset(u),
                         static_cast<size_t>(plan_.slice(u)), CommType::kFloat32, comm_stream_));
  }
  BM_CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_), "tied units reduced");
  return ComputeAfter(comm_done_, "tied units");
}

std::vector<Range> CudaDataParallel::OwnSlicesOf(const std::vector<Range>& ranges) const {
  std::vector<Range> parts;
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t slice = static_cast<size_t>(plan_.slice(u));
    const size_t begin = static_cast<size_t>(plan_.unit(u).offset) + plan_.rank() * slice;
    for (const Range& r : ranges) {
      const size_t b = std::max(begin, r.offset), e = std::min(begin + slice, r.end());
      if (b < e) parts.push_back({b, e - b, false});
    }
  }
  return parts;
}

const float* CudaDataParallel::ReducedGrad(size_t off) const {
  if (!buckets_) return At<float>(grad_) + off;
  const int u = UnitOf(off);
  const size_t slice_begin = static_cast<size_t>(plan_.unit(u).offset) +
                             static_cast<size_t>(plan_.rank() * plan_.slice(u));
  return At<float>(grad_shard_) + static_cast<size_t>(plan_.shard_offset(u)) + (off - slice_begin);
}

Status CudaDataParallel::SumOverGroup(float* value) {
  return AllReduce(value, 1, CommType::kFloat32, compute_);
}

Status CudaDataParallel::OptimizerStep(const AdamWHyper& hyper, const float* sumsq) {
  BM_TRY(RefuseFrozen("the optimizer step"));
  BM_TRY(ZeroPendingGradients());
  BM_TRY(AwaitGathers());  // the own slices are their send buffers
  if (zero_ == 0) {
    // Unsharded: one launch over the whole layout (padding included: zeros stay zeros), the
    // decay chunk by chunk from the mask, rather than one launch per run of matrices or vectors
    // (GPT-2 has about a hundred, most of them a few thousand elements).
    uint32_t* mask = At<uint32_t>(decay_mask_);
    if (!decay_mask_staged_) {
      BM_CUDA_CHECK(cudaMemcpyAsync(mask, decay_mask_host_.data(), decay_mask_host_.size() * 4,
                                    cudaMemcpyHostToDevice, compute_),
                    "weight decay mask");
      decay_mask_staged_ = true;
    }
    const size_t n = layout_.total();
    const auto update = [&](const auto* grads) -> Status {
      if (split_)
        return AdamWSplitUpdate(At<uint16_t>(work_off_), At<uint16_t>(lo_), At<float>(m_),
                                At<float>(v_), grads, sumsq, hyper, n, compute_, mask);
      return WithElementType(work_, [&](auto tag) -> Status {
        using T = decltype(tag);
        using L = std::conditional_t<std::is_same_v<T, float>, __nv_bfloat16, T>;
        L* lowp = lowp_ ? At<L>(work_off_) : nullptr;
        return AdamWUpdate<L>(At<float>(master_), lowp, At<float>(m_), At<float>(v_), grads, sumsq,
                              hyper, n, compute_, mask);
      });
    };
    return keep_bf16_ ? update(SumsOf(0)) : update(At<float>(grad_));
  }
  // ZeRO 1-3: each run of decayed or undecayed elements of the own slices.
  AdamWHyper no_decay = hyper;
  no_decay.weight_decay = 0.0f;
  const std::vector<Range>& segments = layout_.segments();
  if (zero_ == 3)
    for (int u = 0; u < plan_.num_units(); ++u) {  // every gathered unit is stale now
      if (work_slot_of_unit_[u]) work_slot_of_unit_[u]->unit = -1;
      work_slot_of_unit_[u] = nullptr;
    }
  for (int u = 0; u < plan_.num_units(); ++u) {
    const dist::ShardPlan::Range own = plan_.Owned(u);
    const size_t slice_begin = static_cast<size_t>(plan_.unit(u).offset) +
                               static_cast<size_t>(plan_.rank() * plan_.slice(u));
    for (const Range& seg : segments) {
      const size_t b = std::max<size_t>(seg.offset, own.begin);
      const size_t e = std::min<size_t>(seg.end(), own.end);
      if (b >= e) continue;
      // Master and moments: the own slices.
      const size_t local = static_cast<size_t>(plan_.shard_offset(u)) + (b - slice_begin);
      const AdamWHyper& h = seg.decay ? hyper : no_decay;
      const auto update = [&](const auto* grads) -> Status {
        if (split_)  // the high halves: the working copy's own slice (zero 1-2), or hi_ (3)
          return AdamWSplitUpdate(HighHalves(u) + (b - slice_begin), At<uint16_t>(lo_) + local,
                                  At<float>(m_) + local, At<float>(v_) + local, grads, sumsq, h,
                                  e - b, compute_);
        uint16_t* lowp = nullptr;
        if (lowp_ && zero_ <= 2) lowp = At<uint16_t>(work_off_) + b;
        // The 16-bit copy's type (fp32 mode, and zero 3, which casts at gather time, have none:
        // a null pointer).
        return WithElementType(work_, [&](auto tag) -> Status {
          using T = decltype(tag);
          using L = std::conditional_t<std::is_same_v<T, float>, __nv_bfloat16, T>;
          return AdamWUpdate<L>(At<float>(master_) + local, reinterpret_cast<L*>(lowp),
                                At<float>(m_) + local, At<float>(v_) + local, grads, sumsq, h,
                                e - b, compute_);
        });
      };
      if (keep_bf16_) {
        BM_TRY(update(At<__nv_bfloat16>(grad_shard_) + local));
      } else {
        BM_TRY(update(buckets_ ? At<float>(grad_shard_) + local : At<float>(grad_) + b));
      }
      if (!lowp_ && (zero_ == 1 || zero_ == 2))
        BM_CUDA_CHECK(cudaMemcpyAsync(At<float>(work_off_) + b, At<float>(master_) + local,
                                      (e - b) * 4, cudaMemcpyDeviceToDevice, compute_),
                      "working copy");
    }
    // ZeRO-3: the next forward's first two units are gathered as soon as their slices are
    // updated, beside the rest of AdamW, rather than when that forward begins with nothing to
    // hide them behind (its first unit) or only the embeddings' lookup (its second).
    if (zero_ == 3 && u < 2) {
      BM_TRY(CommAfterCompute());
      BM_TRY(IssueGather(u));
    }
  }
  if (zero_ == 1 || zero_ == 2) return GatherWorkAllUnits();
  // The gathers issued later (Acquire's prefetch of the next unit) read slices this step
  // updated after the two above: the communication stream waits for all of AdamW. (Not every
  // slot's free event orders it: the tied embeddings' own slot is not released in the forward.)
  if (zero_ == 3) BM_TRY(CommAfterCompute());
  return Status::Ok();
}

// zero 1-2: every rank's slices of the working weights, to every rank (in place), unit by
// unit in the order the forward uses them; nothing waits here (Acquire, AwaitGathers).
Status CudaDataParallel::GatherWorkAllUnits() {
  BM_TRY(CommAfterCompute());
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t slice = static_cast<size_t>(plan_.slice(u));
    char* unit = At<char>(work_off_) + static_cast<size_t>(plan_.unit(u).offset) * elem();
    BM_TRY(
        AllGather(unit + plan_.rank() * slice * elem(), unit, slice, work_dtype(), comm_stream_));
    BM_CUDA_CHECK(cudaEventRecord(unit_gathered_[u], comm_stream_), "unit {} gathered", u);
    gather_pending_[u] = 1;
  }
  BM_CUDA_CHECK(cudaEventRecord(gathers_done_, comm_stream_), "working weights gathered");
  gathers_outstanding_ = true;
  return Status::Ok();
}

Status CudaDataParallel::AwaitGathers() {
  if (!gathers_outstanding_) return Status::Ok();
  BM_TRY(ComputeAfter(gathers_done_, "all gathers"));
  GathersAwaited();
  return Status::Ok();
}

void CudaDataParallel::GathersAwaited() {
  if (!gathers_outstanding_) return;
  std::fill(gather_pending_.begin(), gather_pending_.end(), 0);
  gathers_outstanding_ = false;
}

}  // namespace bm::train::cuda
