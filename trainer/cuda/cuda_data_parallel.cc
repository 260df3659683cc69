// CudaDataParallel (cuda_data_parallel.h): its buffers in the memory plan, its streams and
// events, the addresses of the working weights and gradients by flat offset, and the
// collectives and stream ordering that the step (cuda_data_parallel_step.cc) and the exchange
// with the host (cuda_data_parallel_host.cc) share.
#include "trainer/cuda/cuda_data_parallel.h"

#include <cuda_bf16.h>

#include <algorithm>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/cuda/kernels/residual.cuh"

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
                                   DType work, bool split_masters, bool frozen)
    : layout_(layout),
      comm_(comm),
      zero_(frozen ? 0 : zero),
      work_(work),
      lowp_(work != DType::kF32),
      split_(split_masters && !frozen && work == DType::kBF16),
      frozen_(frozen),
      plan_(Spans(layout), zero_ >= 1 ? comm->size() : 1, zero_ >= 1 ? comm->rank() : 0),
      zero_ranges_(layout.AddedGradients()) {
  grad_slot_of_unit_.assign(layout.units().size(), nullptr);
  work_slot_of_unit_.assign(layout.units().size(), nullptr);
  whole_sum_.assign(layout.units().size(), 0);
  whole_at_.assign(layout.units().size(), 0);
  sliced_.assign(layout.units().size(), 0);
  in_bucket_.assign(layout.units().size(), 0);
  kept_first_ = plan_.num_units();
}

CudaDataParallel::~CudaDataParallel() {
  if (comm_stream_) cudaStreamSynchronize(comm_stream_);
  for (Slot* s : AllSlots()) {
    if (s->ready) cudaEventDestroy(s->ready);
    if (s->free) cudaEventDestroy(s->free);
  }
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
  size_t embeddings = static_cast<size_t>(plan_.unit(0).numel);
  // Zero 2-3 write fresh buckets every micro-batch; zero 0-1 add to the step's gradients after
  // its first.
  direct_bf16_ = reduce_bf16_ && work_ == DType::kBF16 && (zero_ >= 2 || one_micro_);
  keep_bf16_ = direct_bf16_ && one_micro_ && squares_ &&
               std::none_of(whole_sum_.begin(), whole_sum_.end(), [](char c) { return c; });
  buckets_ = !frozen_ && (zero_ >= 2 || keep_bf16_);
  as_rows_ = keep_bf16_ && first_alone_ && rows_cap_ > 0;
  // KeepGatheredLast: the kept units have gathered slots of their own, the ring the others'.
  kept_first_ = zero_ == 3 && !frozen_ ? plan_.FirstKeptUnit(keep_params_) : plan_.num_units();
  size_t widest_ring = 0;
  for (int u = 1; u < kept_first_; ++u)
    widest_ring = std::max(widest_ring, static_cast<size_t>(plan_.unit(u).numel));
  // FirstUnitUsedAlone: the rings' slots grow to it, if at all, rather than holding it apart.
  first_in_ring_ = first_alone_ && buckets_ && embeddings < 2 * widest;
  if (first_in_ring_) {
    widest = std::max(widest, embeddings);
    widest_ring = std::max(widest_ring, embeddings);
    embeddings = 0;
  }
  if (frozen_) {  // the working weights, nothing else
    work_off_ = plan->Add(lowp_ ? "params 16-bit (frozen)" : "params fp32 (frozen)", P * elem());
    return;
  }
  if (split_) {
    lo_ = plan->Add(zero_ >= 1 ? "master weights' low halves (own slices)"
                               : "params fp32 low halves (the high halves are the bf16 copy)",
                    L * 2);
    if (zero_ == 3) hi_ = plan->Add("master weights' high halves, bf16 (own slices)", L * 2);
  } else {
    master_ = plan->Add(zero_ >= 1 ? "master weights fp32 (own slices)" : "params fp32", L * 4);
  }
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
    if (embeddings > 0) emb_work_.offset = plan->Add("gathered embeddings", embeddings * elem());
    for (Slot& s : work_ring_) s.offset = plan->Add("gathered unit", widest_ring * elem());
    kept_.assign(static_cast<size_t>(plan_.num_units() - kept_first_), Slot{});
    for (int u = kept_first_; u < plan_.num_units(); ++u)
      kept_[u - kept_first_].offset = plan->Add("gathered unit kept to its backward",
                                                static_cast<size_t>(plan_.padded(u)) * elem());
  }
  if (direct_bf16_) bf16_written_.assign(layout_.units().size(), {});
  // (none with keep_bf16_ at zero 0: the products write the sums' place)
  const int stages = !reduce_bf16_ || (keep_bf16_ && zero_ == 0) ? 0 : direct_bf16_ ? 2 : 1;
  for (int i = 0; i < stages; ++i)  // padded = slice x ranks
    stage_[i].offset = plan->Add(i == 0 ? "gradients bf16 (reduction staging)"
                                        : "gradients bf16 (second staging, written directly)",
                                 widest_slice * static_cast<size_t>(plan_.ranks()) * 2);
  if (as_rows_)
    rows_off_ = plan->Add("embedding gradient rows (every rank's tokens and bf16 rows)",
                          static_cast<size_t>(comm_->size()) * RowsSegment() * 2);
  if (squares_ && reduce_bf16_) {
    squared_.assign(static_cast<size_t>(plan_.num_units()), 0);
    unit_squares_ = plan->Add("gradient norm's partial sums (per unit)",
                              squared_.size() * kUnitSquareBlocks * 4);
  }
  if (!buckets_) {
    grad_ = plan->Add("grads fp32", P * 4);
  } else {
    grad_shard_ = keep_bf16_ ? plan->Add(zero_ == 0 ? "grads bf16 (the group's sums)"
                                                    : "grads bf16 (the group's sums, own slices)",
                                         L * 2)
                             : plan->Add("grads fp32 (own slices)", L * 4);
    // (a second micro-batch's slices are added from the bf16 staging when reducing in bf16)
    if (!one_micro_ && !reduce_bf16_)
      rs_tmp_ = plan->Add("reduce-scatter scratch", widest_slice * 4);
    if (embeddings > 0) emb_grad_.offset = plan->Add("embeddings gradient bucket", embeddings * 4);
    for (Slot& s : grad_ring_) s.offset = plan->Add("gradient bucket", widest * 4);
    size_t whole = 0;  // SumWhole's units (the tied embedding's, with pipeline stages)
    for (int u = 0; u < plan_.num_units(); ++u) {
      if (!whole_sum_[u]) continue;
      whole_at_[u] = whole;
      whole += static_cast<size_t>(plan_.unit(u).numel);
    }
    if (whole > 0)
      whole_grad_ = plan->Add("tied units' gradients (whole through the step)", whole * 4);
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
  if (as_rows_) {
    auto* mine = At<__nv_bfloat16>(rows_off_) + static_cast<size_t>(comm_->rank()) * RowsSegment();
    rows_here_ = {mine + 2 * static_cast<size_t>(rows_cap_), reinterpret_cast<int*>(mine)};
  }
  for (Slot* s : AllSlots()) {
    BM_CUDA_CHECK(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming), "slot event");
    BM_CUDA_CHECK(cudaEventCreateWithFlags(&s->free, cudaEventDisableTiming), "slot event");
  }
  return Status::Ok();
}

std::vector<CudaDataParallel::Slot*> CudaDataParallel::AllSlots() {
  std::vector<Slot*> all = {&emb_grad_, &grad_ring_[0], &grad_ring_[1], &stage_[0], &stage_[1]};
  for (Slot* s : WorkSlots()) all.push_back(s);
  return all;
}

std::vector<CudaDataParallel::Slot*> CudaDataParallel::WorkSlots() {
  std::vector<Slot*> work = {&emb_work_, &work_ring_[0], &work_ring_[1]};
  for (Slot& s : kept_) work.push_back(&s);
  return work;
}

int CudaDataParallel::UnitOf(size_t off) const {
  const std::vector<Range>& units = layout_.units();
  auto it = std::upper_bound(units.begin(), units.end(), off,
                             [](size_t o, const Range& u) { return o < u.offset; });
  return static_cast<int>(it - units.begin()) - 1;
}

__nv_bfloat16* CudaDataParallel::GradBf16(size_t off, size_t n) {
  if (!direct_bf16_) return nullptr;
  for (const Range& r : zero_ranges_)
    if (r.offset < off + n && off < r.end()) return nullptr;
  const int u = UnitOf(off);
  if (whole_sum_[u]) return nullptr;
  const size_t at = off - layout_.units()[u].offset;
  bf16_written_[u].push_back({at, n, false});
  return Staged(u) + at;
}

__nv_bfloat16* CudaDataParallel::Staged(int unit) const {
  if (keep_bf16_ && zero_ == 0) return SumsOf(unit);
  return At<__nv_bfloat16>(stage_[direct_bf16_ ? unit % 2 : 0].offset);
}

__nv_bfloat16* CudaDataParallel::SumsOf(int unit) const {
  return At<__nv_bfloat16>(grad_shard_) + plan_.shard_offset(unit);
}

const char* CudaDataParallel::WorkBytes(size_t off) const {
  if (zero_ != 3) return At<char>(work_off_) + off * elem();
  const int u = UnitOf(off);
  const Slot* s = work_slot_of_unit_[u];
  return At<char>(s->offset) + (off - layout_.units()[u].offset) * elem();
}

float* CudaDataParallel::Grad(size_t off) const {
  if (frozen_) return nullptr;
  if (!buckets_) return At<float>(grad_) + off;
  const int u = UnitOf(off);
  if (whole_sum_[u] && !in_bucket_[u])
    return At<float>(whole_grad_) + whole_at_[u] + (off - layout_.units()[u].offset);
  const Slot* s = grad_slot_of_unit_[u];
  return At<float>(s->offset) + (off - layout_.units()[u].offset);
}

size_t CudaDataParallel::ReducedGradEnd(int unit) const {
  if (!buckets_) return grad_ + layout_.units()[unit].end() * 4;
  return grad_shard_ +
         static_cast<size_t>(plan_.shard_offset(unit) + plan_.slice(unit)) * (keep_bf16_ ? 2 : 4);
}

uint16_t* CudaDataParallel::HighHalves(int unit) const {
  if (zero_ == 3) return At<uint16_t>(hi_) + plan_.shard_offset(unit);
  return At<uint16_t>(work_off_) + static_cast<size_t>(plan_.unit(unit).offset) +
         static_cast<size_t>(plan_.rank() * plan_.slice(unit));
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

Status CudaDataParallel::ReduceBf16(int unit, const float* grads, float* out, bool accumulate) {
  // Zero 0: the unit as it is; 1-3: its numel is a multiple of the ranks (UnitAlign).
  const size_t count =
      static_cast<size_t>(zero_ == 0 ? plan_.unit(unit).numel : plan_.padded(unit));
  const size_t slice = static_cast<size_t>(plan_.slice(unit));
  __nv_bfloat16* stage = Staged(unit);
  if (!direct_bf16_) {
    BM_TRY(CastF32<__nv_bfloat16>(stage, grads, count, comm_stream_));
  } else {  // round what the backward wrote in fp32: the gaps between GradBf16's ranges
    std::vector<Range>& written = bf16_written_[unit];
    std::sort(written.begin(), written.end(),
              [](const Range& a, const Range& b) { return a.offset < b.offset; });
    size_t at = 0;
    for (size_t i = 0; i <= written.size(); ++i) {
      const size_t end = i < written.size() ? written[i].offset : count;
      if (end > at) BM_TRY(CastF32<__nv_bfloat16>(stage + at, grads + at, end - at, comm_stream_));
      if (i < written.size()) at = std::max(at, written[i].end());
    }
    written.clear();
  }
  __nv_bfloat16* sum = stage;
  size_t n = count;
  if (zero_ == 0) {
    BM_TRY(AllReduce(stage, count, CommType::kBFloat16, comm_stream_));
  } else {  // in place, or into the kept sums' own slice
    sum = keep_bf16_ ? SumsOf(unit) : stage + plan_.rank() * slice, n = slice;
    BM_TRY(ReduceScatter(stage, sum, slice, CommType::kBFloat16, comm_stream_));
  }
  if (squares_ && last_micro_) {  // the step's sums, final: their squares (squares_summed)
    BM_TRY(WidenF32Squares<__nv_bfloat16>(keep_bf16_ ? nullptr : out, sum, n, accumulate,
                                          UnitSquares(unit), comm_stream_));
    squared_[unit] = 1;
  } else {
    BM_TRY(WidenF32<__nv_bfloat16>(out, sum, n, accumulate, comm_stream_));
  }
  // One staging: the stream's order keeps it; none at zero 0 with the sums kept.
  if (!direct_bf16_ || (keep_bf16_ && zero_ == 0)) return Status::Ok();
  Slot* st = StageFor(unit);
  BM_CUDA_CHECK(cudaEventRecord(st->ready, comm_stream_), "unit {} staging read", unit);
  st->pending = true;
  return Status::Ok();
}

Status CudaDataParallel::ReduceRows() {
  auto* all = At<__nv_bfloat16>(rows_off_);
  const size_t seg = RowsSegment();
  BM_TRY(AllGather(all + static_cast<size_t>(comm_->rank()) * seg, all, seg, CommType::kBFloat16,
                   comm_stream_));
  __nv_bfloat16* sums = SumsOf(0);
  const size_t n = static_cast<size_t>(plan_.slice(0)), first = plan_.rank() * n;
  BM_CUDA_CHECK(cudaMemsetAsync(sums, 0, n * 2, comm_stream_), "zero the first unit's sums");
  for (int r = 0; r < comm_->size(); ++r) {  // in rank order: the same sums on every rank
    const __nv_bfloat16* segment = all + static_cast<size_t>(r) * seg;
    BM_TRY(EmbeddingRowsAdd(sums, first, n, reinterpret_cast<const int*>(segment),
                            segment + 2 * static_cast<size_t>(rows_cap_), rows_cap_, rows_cols_,
                            comm_stream_));
  }
  BM_TRY(WidenF32Squares<__nv_bfloat16>(nullptr, sums, n, false, UnitSquares(0), comm_stream_));
  squared_[0] = 1;
  return Status::Ok();
}

// ---- stream ordering

Status CudaDataParallel::CommAfterCompute() {
  BM_CUDA_CHECK(cudaEventRecord(compute_mark_, compute_), "compute mark");
  BM_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, compute_mark_, 0), "comm waits on compute");
  return Status::Ok();
}

// The compute stream waits for `comm_event`, between two timing events (the exposed wait).
Status CudaDataParallel::ComputeAfter(cudaEvent_t comm_event, const char* site) {
  return timing_.Wait(compute_, comm_event, site);
}

}  // namespace bm::train::cuda
