#include "trainer/cuda/cuda_data_parallel.h"

#include <algorithm>
#include <type_traits>

#include "trainer/cuda/check.h"
#include "trainer/cuda/host_staging.h"
#include "trainer/cuda/kernels/residual.cuh"
#include "trainer/cuda/kernels/split_master.h"

namespace bm::train::cuda {
namespace {

using dist::ReduceOp;
using CommType = dist::DType;

std::vector<dist::UnitSpan> Spans(const ParamLayout& layout) {
  std::vector<dist::UnitSpan> spans;
  for (const Range& u : layout.units())
    spans.push_back({static_cast<int64_t>(u.offset), static_cast<int64_t>(u.numel)});
  return spans;
}

}  // namespace

CudaDataParallel::CudaDataParallel(const ParamLayout& layout, dist::Communicator* comm, int zero,
                                   DType work, bool split_masters)
    : layout_(layout),
      comm_(comm),
      zero_(zero),
      work_(work),
      lowp_(work != DType::kF32),
      split_(split_masters && zero == 0 && work == DType::kBF16),
      plan_(Spans(layout), zero >= 1 ? comm->size() : 1, zero >= 1 ? comm->rank() : 0),
      zero_ranges_(layout.AddedGradients()) {
  grad_slot_of_unit_.assign(layout.units().size(), nullptr);
  work_slot_of_unit_.assign(layout.units().size(), nullptr);
  whole_sum_.assign(layout.units().size(), 0);
}

CudaDataParallel::~CudaDataParallel() {
  if (comm_stream_) cudaStreamSynchronize(comm_stream_);
  for (Slot* s :
       {&emb_work_, &emb_grad_, &work_ring_[0], &work_ring_[1], &grad_ring_[0], &grad_ring_[1]}) {
    if (s->ready) cudaEventDestroy(s->ready);
    if (s->free) cudaEventDestroy(s->free);
  }
  for (cudaEvent_t e : timing_pool_) cudaEventDestroy(e);
  if (comm_done_) cudaEventDestroy(comm_done_);
  for (cudaEvent_t e : unit_gathered_) cudaEventDestroy(e);
  if (gathers_done_) cudaEventDestroy(gathers_done_);
  if (compute_mark_) cudaEventDestroy(compute_mark_);
  if (comm_stream_) cudaStreamDestroy(comm_stream_);
}

void CudaDataParallel::Plan(MemoryPlan* plan) {
  const size_t P = layout_.total(), L = static_cast<size_t>(local_size());
  size_t widest = 0, widest_slice = 0;
  for (int u = 1; u < plan_.num_units(); ++u)
    widest = std::max(widest, static_cast<size_t>(plan_.unit(u).numel));
  for (int u = 0; u < plan_.num_units(); ++u)
    widest_slice = std::max(widest_slice, static_cast<size_t>(plan_.slice(u)));
  const size_t embeddings = static_cast<size_t>(plan_.unit(0).numel);
  if (split_)
    lo_ = plan->Add("params fp32 low halves (the high halves are the bf16 copy)", L * 2);
  else
    master_ = plan->Add(zero_ >= 1 ? "master weights fp32 (own slices)" : "params fp32", L * 4);
  m_ = plan->Add(zero_ >= 1 ? "adamw m (own slices)" : "adamw m", L * 4);
  v_ = plan->Add(zero_ >= 1 ? "adamw v (own slices)" : "adamw v", L * 4);
  if (zero_ == 0) {  // AdamW in one launch: which 64-element chunks are decayed
    decay_mask_host_.assign((P / kDecayChunk + 31) / 32, 0u);
    for (const Range& seg : layout_.segments()) {
      if (!seg.decay) continue;
      for (size_t c = seg.offset / kDecayChunk; c * kDecayChunk < seg.end(); ++c)
        decay_mask_host_[c / 32] |= 1u << (c % 32);
    }
    decay_mask_ = plan->Add("weight decay mask", decay_mask_host_.size() * 4);
  }
  if (zero_ <= 2 && (lowp_ || zero_ >= 1))
    work_off_ = plan->Add(lowp_ ? "params 16-bit copy" : "params fp32 working copy", P * elem());
  if (zero_ == 0 && !lowp_) work_off_ = master_;
  if (zero_ == 3) {
    if (lowp_) work_shard_ = plan->Add("params 16-bit (own slices)", L * 2);
    emb_work_.offset = plan->Add("gathered embeddings", embeddings * elem());
    for (Slot& s : work_ring_) s.offset = plan->Add("gathered unit", widest * elem());
  }
  if (zero_ <= 1) {
    grad_ = plan->Add("grads fp32", P * 4);
  } else {
    grad_shard_ = plan->Add("grads fp32 (own slices)", L * 4);
    rs_tmp_ = plan->Add("reduce-scatter scratch", widest_slice * 4);
    emb_grad_.offset = plan->Add("embeddings gradient bucket", embeddings * 4);
    for (Slot& s : grad_ring_) s.offset = plan->Add("gradient bucket", widest * 4);
  }
}

Status CudaDataParallel::Bind(const DeviceArena* arena, cudaStream_t compute) {
  arena_ = arena;
  compute_ = compute;
  BM_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking),
                "communication stream");
  BM_CUDA_CHECK(cudaEventCreateWithFlags(&comm_done_, cudaEventDisableTiming), "event");
  BM_CUDA_CHECK(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming), "event");
  if (zero_ == 1 || zero_ == 2) {
    BM_CUDA_CHECK(cudaEventCreateWithFlags(&gathers_done_, cudaEventDisableTiming), "event");
    unit_gathered_.assign(plan_.num_units(), nullptr);
    gather_pending_.assign(plan_.num_units(), 0);
    for (cudaEvent_t& e : unit_gathered_)
      BM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "gather event");
  }
  for (Slot* s :
       {&emb_work_, &emb_grad_, &work_ring_[0], &work_ring_[1], &grad_ring_[0], &grad_ring_[1]}) {
    BM_CUDA_CHECK(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming), "slot event");
    BM_CUDA_CHECK(cudaEventCreateWithFlags(&s->free, cudaEventDisableTiming), "slot event");
  }
  return Status::Ok();
}

int CudaDataParallel::UnitOf(size_t off) const {
  const std::vector<Range>& units = layout_.units();
  auto it = std::upper_bound(units.begin(), units.end(), off,
                             [](size_t o, const Range& u) { return o < u.offset; });
  return static_cast<int>(it - units.begin()) - 1;
}

const char* CudaDataParallel::WorkBytes(size_t off) const {
  if (zero_ != 3) return At<char>(work_off_) + off * elem();
  const int u = UnitOf(off);
  const Slot* s = work_slot_of_unit_[u];
  return At<char>(s->offset) + (off - layout_.units()[u].offset) * elem();
}

float* CudaDataParallel::Grad(size_t off) const {
  if (zero_ <= 1) return At<float>(grad_) + off;
  const int u = UnitOf(off);
  const Slot* s = grad_slot_of_unit_[u];
  return At<float>(s->offset) + (off - layout_.units()[u].offset);
}

dist::DType CudaDataParallel::work_dtype() const { return CommDType(work_); }

Status CudaDataParallel::CastToWork(void* out, const float* in, size_t n, cudaStream_t s) const {
  // bf16 rounded as AdamW rounds it (kernels/split_master.h)
  if (work_ == DType::kBF16) return SplitMasters(static_cast<uint16_t*>(out), nullptr, in, n, s);
  return WithElementType(work_, [&](auto tag) -> Status {
    using T = decltype(tag);
    return CastF32<T>(static_cast<T*>(out), in, n, s);
  });
}

// ---- collectives (a host communicator has one rank: local copies)

Status CudaDataParallel::AllReduce(void* data, size_t n, CommType t, cudaStream_t s) {
  if (comm_->device()) return comm_->AllReduce(data, static_cast<int64_t>(n), t, ReduceOp::kSum, s);
  return Status::Ok();
}

Status CudaDataParallel::ReduceScatter(const void* send, void* recv, size_t n, CommType t,
                                       cudaStream_t s) {
  if (comm_->device())
    return comm_->ReduceScatter(send, recv, static_cast<int64_t>(n), t, ReduceOp::kSum, s);
  if (send != recv)
    BM_CUDA_CHECK(cudaMemcpyAsync(recv, send, n * dist::DTypeSize(t), cudaMemcpyDeviceToDevice, s),
                  "reduce-scatter of one rank, {} elements", n);
  return Status::Ok();
}

Status CudaDataParallel::AllGather(const void* send, void* recv, size_t n, CommType t,
                                   cudaStream_t s) {
  if (comm_->device()) return comm_->AllGather(send, recv, static_cast<int64_t>(n), t, s);
  if (send != recv)
    BM_CUDA_CHECK(cudaMemcpyAsync(recv, send, n * dist::DTypeSize(t), cudaMemcpyDeviceToDevice, s),
                  "all-gather of one rank, {} elements", n);
  return Status::Ok();
}

// ---- stream ordering

Status CudaDataParallel::CommAfterCompute() {
  BM_CUDA_CHECK(cudaEventRecord(compute_mark_, compute_), "compute mark");
  BM_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, compute_mark_, 0), "comm waits on compute");
  return Status::Ok();
}

// The compute stream waits for `comm_event`, between two timing events (the exposed wait).
Status CudaDataParallel::ComputeAfter(cudaEvent_t comm_event) {
  if (timing_used_ + 2 > timing_pool_.size()) {
    for (int i = 0; i < 2; ++i) {
      cudaEvent_t e = nullptr;
      BM_CUDA_CHECK(cudaEventCreate(&e), "timing event");
      timing_pool_.push_back(e);
    }
  }
  WaitPair w{timing_pool_[timing_used_], timing_pool_[timing_used_ + 1]};
  timing_used_ += 2;
  BM_CUDA_CHECK(cudaEventRecord(w.before, compute_), "wait timing");
  BM_CUDA_CHECK(cudaStreamWaitEvent(compute_, comm_event, 0), "compute waits on comm");
  BM_CUDA_CHECK(cudaEventRecord(w.after, compute_), "wait timing");
  waits_.push_back(w);
  return Status::Ok();
}

Status CudaDataParallel::CollectWaits() {
  for (const WaitPair& w : waits_) {
    float ms = 0;
    BM_CUDA_CHECK(cudaEventElapsedTime(&ms, w.before, w.after), "wait timing");
    wait_ms_ += ms;
  }
  waits_.clear();
  timing_used_ = 0;
  return Status::Ok();
}

// ---- a step

Status CudaDataParallel::ZeroPendingGradients() {
  if (!zero_pending_ || zero_ >= 2) return Status::Ok();
  zero_pending_ = false;
  BM_CUDA_CHECK(cudaMemsetAsync(At<float>(grad_), 0, layout_.total() * 4, compute_), "zero grads");
  return Status::Ok();
}

Status CudaDataParallel::BeginMicroBatch(bool last) {
  last_micro_ = last;
  if (zero_ >= 2) {
    // Fresh buckets every micro-batch; the own slices accumulate (zeroed once per step).
    first_micro_ = true;
    if (zero_pending_) {
      BM_CUDA_CHECK(cudaMemsetAsync(At<float>(grad_shard_), 0, local_size() * 4, compute_),
                    "zero gradient slices");
      zero_pending_ = false;
      accumulate_ = false;
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
  BM_CUDA_CHECK(cudaEventRecord(comm_done_, comm_stream_), "communication done");
  BM_TRY(ComputeAfter(comm_done_));
  GathersAwaited();  // issued before this micro-batch's reductions, on the same stream
  return Status::Ok();
}

// Units are used in order, forward and backward, one at a time: by parity, the unit in use
// and the next one (prefetched, or reduced while the next computes) never share a slot.
CudaDataParallel::Slot* CudaDataParallel::WorkSlotFor(int unit) {
  return unit == 0 ? &emb_work_ : &work_ring_[unit % 2];
}

CudaDataParallel::Slot* CudaDataParallel::GradSlotFor(int unit) {
  return unit == 0 ? &emb_grad_ : &grad_ring_[unit % 2];
}

Status CudaDataParallel::IssueGather(int unit) {
  Slot* s = WorkSlotFor(unit);
  // The slot's previous unit: the compute stream must be done with it.
  BM_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, s->free, 0), "gather waits for its slot");
  const size_t slice = static_cast<size_t>(plan_.slice(unit));
  const void* send =
      lowp_ ? static_cast<const void*>(At<uint16_t>(work_shard_) + plan_.shard_offset(unit))
            : static_cast<const void*>(At<float>(master_) + plan_.shard_offset(unit));
  BM_TRY(AllGather(send, At<char>(s->offset), slice, work_dtype(), comm_stream_));
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
    return ComputeAfter(unit_gathered_[unit]);
  }
  if (zero_ != 3) return Status::Ok();
  Slot* s = work_slot_of_unit_[unit];
  if (!s || s->unit != unit) {
    BM_TRY(CommAfterCompute());  // the shards are current (after the optimizer step)
    BM_TRY(IssueGather(unit));
    s = work_slot_of_unit_[unit];
  }
  if (s->pending) {
    BM_TRY(ComputeAfter(s->ready));
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
  if (zero_ <= 1) {
    if (!per_unit_zeroing_ || !first_micro_) return Status::Ok();
    return ZeroAddedGradients(unit, At<float>(grad_) + layout_.units()[unit].offset);
  }
  Slot* s = GradSlotFor(unit);
  // The slot's previous reduction must have read it.
  if (s->pending) {
    BM_TRY(ComputeAfter(s->ready));
    s->pending = false;
  }
  s->unit = unit;
  grad_slot_of_unit_[unit] = s;
  return ZeroAddedGradients(unit, At<float>(s->offset));
}

Status CudaDataParallel::GradientsReady(int unit) {
  const Range& u = layout_.units()[unit];
  if (zero_ <= 1) {
    if (!last_micro_) return Status::Ok();
    BM_TRY(CommAfterCompute());
    float* grads = At<float>(grad_) + u.offset;
    if (zero_ == 0 || whole_sum_[unit])
      return AllReduce(grads, u.numel, CommType::kFloat32, comm_stream_);
    // Zero 1: the optimizer reads the own slice only, so only it is summed, in place (the
    // unit's numel is a multiple of the ranks: UnitAlign).
    const size_t n = static_cast<size_t>(plan_.slice(unit));
    return ReduceScatter(grads, grads + plan_.rank() * n, n, CommType::kFloat32, comm_stream_);
  }
  Slot* s = grad_slot_of_unit_[unit];
  BM_TRY(CommAfterCompute());
  float* slice = At<float>(grad_shard_) + plan_.shard_offset(unit);
  const size_t n = static_cast<size_t>(plan_.slice(unit));
  if (!accumulate_) {
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

Status CudaDataParallel::GradSumSquares(float* out, float* scratch) {
  if (sums_own_slices())
    return Status(ErrorCode::kInternal,
                  "GradSumSquares: at zero 1 over several ranks the norm counts the own slices "
                  "(OwnSlicesOf), then the group (SumOverGroup)");
  if (zero_ <= 1) {
    BM_TRY(ZeroPendingGradients());
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

Status CudaDataParallel::SumOverGroup(float* value) {
  return AllReduce(value, 1, CommType::kFloat32, compute_);
}

Status CudaDataParallel::OptimizerStep(const AdamWHyper& hyper, const float* sumsq) {
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
    float* grads = At<float>(grad_);
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
  }
  // ZeRO 1-3: each run of decayed or undecayed elements of the own slices.
  AdamWHyper no_decay = hyper;
  no_decay.weight_decay = 0.0f;
  const std::vector<Range>& segments = layout_.segments();
  for (int u = 0; u < plan_.num_units(); ++u) {
    const dist::ShardPlan::Range own = plan_.Owned(u);
    const size_t slice_begin = static_cast<size_t>(plan_.unit(u).offset) +
                               static_cast<size_t>(plan_.rank() * plan_.slice(u));
    for (const Range& seg : segments) {
      const size_t b = std::max<size_t>(seg.offset, own.begin);
      const size_t e = std::min<size_t>(seg.end(), own.end);
      if (b >= e) continue;
      // Master and moments: the own slices (the masters are whole: split_ is zero 0's).
      const size_t local = static_cast<size_t>(plan_.shard_offset(u)) + (b - slice_begin);
      float* grads = zero_ >= 2 ? At<float>(grad_shard_) + local : At<float>(grad_) + b;
      uint16_t* lowp = nullptr;
      if (lowp_)
        lowp = zero_ == 3 ? At<uint16_t>(work_shard_) + local : At<uint16_t>(work_off_) + b;
      // The 16-bit copy's type (fp32 mode has none: a null bf16 pointer).
      BM_TRY(WithElementType(work_, [&](auto tag) -> Status {
        using T = decltype(tag);
        using L = std::conditional_t<std::is_same_v<T, float>, __nv_bfloat16, T>;
        return AdamWUpdate<L>(At<float>(master_) + local, reinterpret_cast<L*>(lowp),
                              At<float>(m_) + local, At<float>(v_) + local, grads, sumsq,
                              seg.decay ? hyper : no_decay, e - b, compute_);
      }));
      if (!lowp_ && (zero_ == 1 || zero_ == 2))
        BM_CUDA_CHECK(cudaMemcpyAsync(At<float>(work_off_) + b, At<float>(master_) + local,
                                      (e - b) * 4, cudaMemcpyDeviceToDevice, compute_),
                      "working copy");
    }
  }
  if (zero_ == 1 || zero_ == 2) return GatherWorkAllUnits();
  if (zero_ == 3)
    for (int u = 0; u < plan_.num_units(); ++u) {  // every gathered unit is stale now
      if (work_slot_of_unit_[u]) work_slot_of_unit_[u]->unit = -1;
      work_slot_of_unit_[u] = nullptr;
    }
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
  BM_TRY(ComputeAfter(gathers_done_));
  GathersAwaited();
  return Status::Ok();
}

void CudaDataParallel::GathersAwaited() {
  if (!gathers_outstanding_) return;
  std::fill(gather_pending_.begin(), gather_pending_.end(), 0);
  gathers_outstanding_ = false;
}

// The working weights' own slices from the masters (zero >= 1).
Status CudaDataParallel::WriteWorkSlices(cudaStream_t s) {
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t slice = static_cast<size_t>(plan_.slice(u));
    const float* from = At<float>(master_) + plan_.shard_offset(u);
    if (zero_ == 3) {
      if (lowp_)
        BM_TRY(CastToWork(At<uint16_t>(work_shard_) + plan_.shard_offset(u), from, slice, s));
      continue;
    }
    const size_t to = static_cast<size_t>(plan_.unit(u).offset) + plan_.rank() * slice;
    if (lowp_) {
      BM_TRY(CastToWork(At<uint16_t>(work_off_) + to, from, slice, s));
    } else {
      BM_CUDA_CHECK(
          cudaMemcpyAsync(At<float>(work_off_) + to, from, slice * 4, cudaMemcpyDeviceToDevice, s),
          "working copy");
    }
  }
  return Status::Ok();
}

// ---- host exchange

Status CudaDataParallel::SetParameters(const RangeSource& fill) {
  const size_t P = layout_.total();
  if (split_) {
    std::vector<float> flat(P);
    fill(0, flat);
    return SetSplitMasters(flat);
  }
  HostStaging staging;  // chunks no larger than what goes up (a small model's are small)
  BM_TRY(staging.Init(compute_, zero_ == 0 ? P : static_cast<size_t>(local_size())));
  if (zero_ == 0) {
    BM_TRY(staging.Upload(fill, 0, P, At<float>(master_)));
    return MastersChanged();
  }
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t begin = static_cast<size_t>(plan_.unit(u).offset) +
                         static_cast<size_t>(plan_.rank() * plan_.slice(u));
    BM_TRY(staging.Upload(fill, begin, static_cast<size_t>(plan_.slice(u)),
                          At<float>(master_) + plan_.shard_offset(u)));
  }
  return MastersChanged();
}

// After the masters were written: the working weights follow (collective for zero 1-2).
Status CudaDataParallel::MastersChanged() {
  if (zero_ == 0) {
    if (lowp_)
      BM_TRY(CastToWork(At<uint16_t>(work_off_), At<float>(master_), layout_.total(), compute_));
  } else {
    BM_TRY(AwaitGathers());  // a gather still reading the own slices the write replaces
    BM_TRY(WriteWorkSlices(compute_));
    if (zero_ <= 2) BM_TRY(GatherWorkAllUnits());
    for (Slot* s : {&emb_work_, &work_ring_[0], &work_ring_[1]}) s->unit = -1;
    std::fill(work_slot_of_unit_.begin(), work_slot_of_unit_.end(), nullptr);
  }
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "parameters");
  BM_CUDA_CHECK(cudaStreamSynchronize(comm_stream_), "parameters");
  GathersAwaited();
  return Status::Ok();
}

Status CudaDataParallel::GatherMaster(const RangeSink& take) {
  BM_TRY(CommAfterCompute());
  HostStaging staging;
  if (take) {
    int64_t widest = 0;
    for (int u = 0; u < plan_.num_units(); ++u) widest = std::max(widest, plan_.unit(u).numel);
    BM_TRY(staging.Init(comm_stream_, static_cast<size_t>(widest)));
  }
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t slice = static_cast<size_t>(plan_.slice(u));
    float* space = zero_ == 1 ? At<float>(grad_) : At<float>(GradSlotFor(u)->offset);
    BM_TRY(AllGather(At<float>(master_) + plan_.shard_offset(u), space, slice, CommType::kFloat32,
                     comm_stream_));
    if (take) {
      BM_TRY(staging.Download(space, static_cast<size_t>(plan_.unit(u).numel),
                              static_cast<size_t>(plan_.unit(u).offset), take));
    }
  }
  BM_CUDA_CHECK(cudaStreamSynchronize(comm_stream_), "gathering parameters");
  // The gradient buffers served as gather space: the next step writes them fresh.
  zero_pending_ = true;
  for (Slot* s : {&emb_grad_, &grad_ring_[0], &grad_ring_[1]}) s->unit = -1;
  return Status::Ok();
}

// split_: the halves from the host's fp32 values (zero 0: all of them).
Status CudaDataParallel::SetSplitMasters(const std::vector<float>& flat) {
  const size_t n = flat.size();
  std::vector<uint16_t> hi(n), lo(n);
  SplitMastersCpu(flat.data(), n, hi.data(), lo.data());
  BM_CUDA_CHECK(
      cudaMemcpyAsync(At<uint16_t>(work_off_), hi.data(), n * 2, cudaMemcpyHostToDevice, compute_),
      "parameters' high halves");
  BM_CUDA_CHECK(
      cudaMemcpyAsync(At<uint16_t>(lo_), lo.data(), n * 2, cudaMemcpyHostToDevice, compute_),
      "parameters' low halves");
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "parameters");
  return Status::Ok();
}

Status CudaDataParallel::GetSplitMasters(std::vector<float>* flat) {
  const size_t n = layout_.total();
  std::vector<uint16_t> hi(n), lo(n);
  BM_CUDA_CHECK(
      cudaMemcpyAsync(hi.data(), At<uint16_t>(work_off_), n * 2, cudaMemcpyDeviceToHost, compute_),
      "parameters' high halves");
  BM_CUDA_CHECK(
      cudaMemcpyAsync(lo.data(), At<uint16_t>(lo_), n * 2, cudaMemcpyDeviceToHost, compute_),
      "parameters' low halves");
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "parameters");
  flat->resize(n);
  JoinMastersCpu(hi.data(), lo.data(), n, flat->data());
  return Status::Ok();
}

Status CudaDataParallel::GetParameters(const RangeSink& take) {
  if (split_) {
    std::vector<float> flat;
    BM_TRY(GetSplitMasters(&flat));
    if (take) take(0, flat);
    return Status::Ok();
  }
  if (zero_ >= 1) return GatherMaster(take);
  if (!take) return Status::Ok();
  HostStaging staging;
  BM_TRY(staging.Init(compute_, layout_.total()));
  return staging.Download(At<float>(master_), layout_.total(), 0, take);
}

Status CudaDataParallel::GetGradients(std::vector<float>* flat) {
  if (zero_ >= 2 || sums_own_slices())
    return Status(ErrorCode::kUnsupported,
                  "the gradients are reduce-scattered (zero >= 1 over several ranks): each rank "
                  "holds the sum of its own slices");
  BM_TRY(ZeroPendingGradients());
  BM_CUDA_CHECK(cudaStreamSynchronize(comm_stream_), "gradients");
  flat->resize(layout_.total());
  BM_CUDA_CHECK(cudaMemcpyAsync(flat->data(), At<float>(grad_), flat->size() * 4,
                                cudaMemcpyDeviceToHost, compute_),
                "gradients");
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "gradients");
  return Status::Ok();
}

Status CudaDataParallel::GetOptimizerState(std::vector<float>* m, std::vector<float>* v) {
  if (zero_ >= 1)
    return Status(ErrorCode::kUnsupported,
                  "the AdamW state is sharded (zero >= 1): each rank holds its local state");
  return GetLocalState(nullptr, m, v);
}

Status CudaDataParallel::SetOptimizerState(const std::vector<float>& m,
                                           const std::vector<float>& v) {
  if (zero_ >= 1)
    return Status(ErrorCode::kUnsupported,
                  "the AdamW state is sharded (zero >= 1): set each rank's local state");
  const size_t n = static_cast<size_t>(local_size());
  if (m.size() != n || v.size() != n)
    return Errorf(ErrorCode::kInvalidArgument, "optimizer state of {}/{} floats, layout has {}",
                  m.size(), v.size(), n);
  BM_CUDA_CHECK(cudaMemcpyAsync(At<float>(m_), m.data(), n * 4, cudaMemcpyHostToDevice, compute_),
                "adam m");
  BM_CUDA_CHECK(cudaMemcpyAsync(At<float>(v_), v.data(), n * 4, cudaMemcpyHostToDevice, compute_),
                "adam v");
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "optimizer state");
  return Status::Ok();
}

Status CudaDataParallel::GetLocalState(std::vector<float>* master, std::vector<float>* m,
                                       std::vector<float>* v) {
  const size_t n = static_cast<size_t>(local_size());
  if (split_ && master) BM_TRY(GetSplitMasters(master));
  for (auto [out, off] : {std::pair{split_ ? nullptr : master, master_}, {m, m_}, {v, v_}}) {
    if (!out) continue;
    out->resize(n);
    BM_CUDA_CHECK(
        cudaMemcpyAsync(out->data(), At<float>(off), n * 4, cudaMemcpyDeviceToHost, compute_),
        "local state");
  }
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "local state");
  return Status::Ok();
}

Status CudaDataParallel::SetLocalState(const std::vector<float>& master,
                                       const std::vector<float>& m, const std::vector<float>& v) {
  const size_t n = static_cast<size_t>(local_size());
  if (master.size() != n || m.size() != n || v.size() != n)
    return Errorf(ErrorCode::kInvalidArgument,
                  "local state of {}, {} and {} floats; this rank holds {}", master.size(),
                  m.size(), v.size(), n);
  for (auto [in, off] : {std::pair{&master, master_}, {&m, m_}, {&v, v_}}) {
    if (split_ && in == &master) continue;
    BM_CUDA_CHECK(
        cudaMemcpyAsync(At<float>(off), in->data(), n * 4, cudaMemcpyHostToDevice, compute_),
        "local state");
  }
  return split_ ? SetSplitMasters(master) : MastersChanged();
}

}  // namespace bm::train::cuda
