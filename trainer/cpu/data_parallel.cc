#include "trainer/cpu/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "trainer/cpu/ops/adamw.h"
#include "trainer/dist/bf16.h"

namespace bm::train::cpu {
namespace {

using dist::DType;
using dist::ReduceOp;

std::vector<dist::UnitSpan> Spans(const ParamLayout& layout) {
  std::vector<dist::UnitSpan> spans;
  for (const ParamUnit& u : layout.units()) spans.push_back({u.offset, u.numel});
  return spans;
}

}  // namespace

DataParallel::DataParallel(Model<float>* model, dist::Communicator* comm, int zero)
    : model_(model),
      comm_(comm),
      zero_(zero),
      plan_(Spans(model->layout()), zero >= 1 ? comm->size() : 1, zero >= 1 ? comm->rank() : 0) {
  // The AdamW segments: each tensor's part of each owned range, in shard
  // coordinates (without ZeRO the plan has one rank and shard == flat).
  for (int u = 0; u < plan_.num_units(); ++u) {
    const dist::ShardPlan::Range own = plan_.Owned(u);
    const int64_t slice_begin = plan_.unit(u).offset + plan_.rank() * plan_.slice(u);
    for (const ParamTensor& t : model_->layout().tensors()) {
      const int64_t b = std::max(own.begin, t.offset), e = std::min(own.end, t.offset + t.numel);
      if (b >= e) continue;
      segments_.push_back({b, plan_.shard_offset(u) + (b - slice_begin), e - b, t.weight_decay});
    }
  }
  // The units holding a tied embedding that another pipeline stage adds its gradient to after
  // the backward (the two stages' units are cut into slices at different places). Zero 1 sums
  // them whole before that exchange; zero 2-3 keep them local through the step and
  // reduce-scatter them after it (ReduceTiedUnits).
  tied_unit_.assign(plan_.num_units(), false);
  if (const ParamTensor* tied = model_->shard().tied_across_stages()) {
    for (int u = 0; u < plan_.num_units(); ++u) {
      const dist::UnitSpan& unit = plan_.unit(u);
      tied_unit_[u] =
          unit.offset < tied->offset + tied->numel && tied->offset < unit.offset + unit.numel;
    }
  }
  whole_sum_.assign(plan_.num_units(), zero_ == 0);
  if (zero_ == 1) whole_sum_ = tied_unit_;
  m_.assign(plan_.shard_size(), 0.0f);
  v_.assign(plan_.shard_size(), 0.0f);
  if (zero_ >= 2) shard_grads_.assign(plan_.shard_size(), 0.0f);
  if (zero_ == 3) shard_params_.assign(plan_.shard_size(), 0.0f);
  gather_.resize(plan_.num_units());
  gather_ticket_.assign(plan_.num_units(), 0);
  resident_.assign(plan_.num_units(), zero_ != 3);
  kept_first_ = plan_.num_units();
  if (zero_ == 3) std::fill(model_->params().begin(), model_->params().end(), NAN);
}

DataParallel::~DataParallel() { (void)queue_.Drain(); }

void DataParallel::ExtractShard(const float* full, float* shard) const {
  for (int u = 0; u < plan_.num_units(); ++u) {
    const dist::ShardPlan::Range own = plan_.Owned(u);
    float* out = shard + plan_.shard_offset(u);
    std::copy(full + own.begin, full + own.end, out);
    std::fill(out + own.size(), out + plan_.slice(u), 0.0f);  // padding
  }
}

void DataParallel::SubmitGather(int u, const float* slice) {
  std::vector<float> send(slice, slice + plan_.slice(u));
  gather_[u].resize(plan_.padded(u));
  gather_ticket_[u] = queue_.Submit([this, u, send = std::move(send)] {
    return comm_->AllGather(send.data(), gather_[u].data(), plan_.slice(u), DType::kFloat32);
  });
}

Status DataParallel::FinishGather(int u, float* dest) {
  BM_TRY(queue_.Wait(gather_ticket_[u]));
  gather_ticket_[u] = 0;
  std::copy(gather_[u].begin(), gather_[u].begin() + plan_.unit(u).numel, dest);
  return Status::Ok();
}

Status DataParallel::GatherAllUnits(const float* shard, float* full) {
  for (int u = 0; u < plan_.num_units(); ++u) SubmitGather(u, shard + plan_.shard_offset(u));
  for (int u = 0; u < plan_.num_units(); ++u) BM_TRY(FinishGather(u, full + plan_.unit(u).offset));
  return Status::Ok();
}

Status DataParallel::SetParameters(std::span<const float> full) {
  if (zero_ == 3) {
    ExtractShard(full.data(), shard_params_.data());
    DropKept();
    return Status::Ok();
  }
  std::copy(full.begin(), full.end(), model_->params().begin());
  return Status::Ok();
}

Status DataParallel::GetParameters(std::span<float> full) {
  if (zero_ == 3) return GatherAllUnits(shard_params_.data(), full.data());
  std::copy(model_->params().begin(), model_->params().end(), full.begin());
  return Status::Ok();
}

Status DataParallel::ZeroGrad() {
  std::fill(model_->grads().begin(), model_->grads().end(), 0.0f);
  std::fill(shard_grads_.begin(), shard_grads_.end(), 0.0f);
  return Status::Ok();
}

void DataParallel::Acquire(int unit, int next) {
  if (zero_ != 3) return;
  if (!resident_[unit]) {
    if (gather_ticket_[unit] == 0)
      SubmitGather(unit, shard_params_.data() + plan_.shard_offset(unit));
    // A failed gather leaves NaN parameters; the error comes back from
    // EndMicroBatch (the queue's errors are sticky).
    (void)FinishGather(unit, model_->params().data() + plan_.unit(unit).offset);
    resident_[unit] = true;
  }
  if (next >= 0 && !resident_[next] && gather_ticket_[next] == 0)
    SubmitGather(next, shard_params_.data() + plan_.shard_offset(next));
}

void DataParallel::Release(int unit) {
  if (zero_ != 3 || unit >= kept_first_) return;
  float* p = model_->params().data() + plan_.unit(unit).offset;
  std::fill(p, p + plan_.unit(unit).numel, NAN);
  resident_[unit] = false;
}

void DataParallel::DropKept() {
  for (int u = kept_first_; u < plan_.num_units(); ++u) {
    float* p = model_->params().data() + plan_.unit(u).offset;
    std::fill(p, p + plan_.unit(u).numel, NAN);
    resident_[u] = false;
  }
}

void DataParallel::GradientsReady(int unit) {
  float* grads = model_->grads().data() + plan_.unit(unit).offset;
  const int64_t n = plan_.unit(unit).numel;
  if (zero_ <= 1 && !last_micro_) return;  // accumulate locally; reduce once per step
  if (zero_ <= 1 && whole_sum_[unit]) {
    queue_.Submit([this, unit, grads, n] { return AllReduceGrads(unit, grads, n); });
    return;
  }
  if (zero_ == 1) {
    // The optimizer updates the own slice only, so only it needs the sum (Megatron's
    // distributed optimizer): the rest of the unit's gradients stay this rank's own.
    queue_.Submit([this, unit, grads] {
      std::vector<float> recv(plan_.slice(unit));
      BM_TRY(ReduceScatterUnit(unit, grads, recv.data()));
      const dist::ShardPlan::Range own = plan_.Owned(unit);
      std::copy_n(recv.begin(), own.size(), model_->grads().data() + own.begin);
      return Status::Ok();
    });
    return;
  }
  if (tied_unit_[unit]) return;  // reduced after the pipeline's exchange (ReduceTiedUnits)
  SubmitShardReduction(unit);
}

void DataParallel::SubmitShardReduction(int unit) {
  // Stages 2-3: the unit's gradient is taken here, on the caller's thread, and the local copy
  // cleared, before the caller goes on: a pipeline stage runs the same unit's backward of the
  // next micro-batch without waiting for this reduction, and would add to a buffer the
  // communication thread has yet to read and clear. Then it is reduce-scattered into this
  // rank's slice and added to the shard.
  float* grads = model_->grads().data() + plan_.unit(unit).offset;
  const int64_t n = plan_.unit(unit).numel;
  std::vector<float> send(plan_.padded(unit), 0.0f);
  std::copy_n(grads, n, send.begin());
  std::fill(grads, grads + n, 0.0f);
  float* shard = shard_grads_.data() + plan_.shard_offset(unit);
  queue_.Submit([this, unit, shard, send = std::move(send)] {
    std::vector<float> recv(plan_.slice(unit));
    BM_TRY(ReduceScatterGrads(unit, send.data(), recv.data()));
    for (size_t i = 0; i < recv.size(); ++i) shard[i] += recv[i];
    return Status::Ok();
  });
}

Status DataParallel::ReduceTiedUnits() {
  if (zero_ < 2) return Status::Ok();
  for (int u = 0; u < plan_.num_units(); ++u)
    if (tied_unit_[u]) SubmitShardReduction(u);
  return queue_.Drain();
}

Status DataParallel::ReduceScatterUnit(int unit, const float* grads, float* slice) {
  std::vector<float> send(plan_.padded(unit), 0.0f);
  std::copy_n(grads, plan_.unit(unit).numel, send.begin());
  return ReduceScatterGrads(unit, send.data(), slice);
}

Status DataParallel::AllReduceGrads(int unit, float* data, int64_t n) {
  if (!bf16_ || tied_unit_[unit]) return comm_->AllReduce(data, n, DType::kFloat32, ReduceOp::kSum);
  std::vector<uint16_t> h(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) h[i] = dist::FloatToBf16(data[i]);
  BM_TRY(comm_->AllReduce(h.data(), n, DType::kBFloat16, ReduceOp::kSum));
  for (int64_t i = 0; i < n; ++i) data[i] = dist::Bf16ToFloat(h[i]);
  return Status::Ok();
}

Status DataParallel::ReduceScatterGrads(int unit, const float* send, float* slice) {
  const int64_t n = plan_.slice(unit);
  if (!bf16_ || tied_unit_[unit])
    return comm_->ReduceScatter(send, slice, n, DType::kFloat32, ReduceOp::kSum);
  std::vector<uint16_t> out(static_cast<size_t>(plan_.padded(unit))), in(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) out[i] = dist::FloatToBf16(send[i]);
  BM_TRY(comm_->ReduceScatter(out.data(), in.data(), n, DType::kBFloat16, ReduceOp::kSum));
  for (int64_t i = 0; i < n; ++i) slice[i] = dist::Bf16ToFloat(in[i]);
  return Status::Ok();
}

Status DataParallel::EndMicroBatch() { return queue_.Drain(); }

Result<double> DataParallel::GradNormSquared() {
  // The parameters this rank owns (all of them without tensor or pipeline parallelism).
  const std::vector<std::pair<int64_t, int64_t>> owned = model_->shard().OwnedRanges();
  double sum = 0;
  if (zero_ == 0) {
    for (auto [begin, end] : owned)
      sum += SumOfSquares(model_->grads().data() + begin, end - begin);
    return sum;  // the same on every rank of the group
  }
  if (zero_ == 1) {
    // Reduced are the own slices only: their part of the owned ranges, then over the group.
    for (int u = 0; u < plan_.num_units(); ++u) {
      const dist::ShardPlan::Range own = plan_.Owned(u);
      for (auto [begin, end] : owned) {
        const int64_t b = std::max(begin, own.begin), e = std::min(end, own.end);
        if (b < e) sum += SumOfSquares(model_->grads().data() + b, e - b);
      }
    }
  } else {
    // The reduced slices, as segments of tensors (their flat offsets), within the owned ranges.
    for (const Segment& seg : segments_)
      for (auto [begin, end] : owned) {
        const int64_t b = std::max(begin, seg.flat), e = std::min(end, seg.flat + seg.n);
        if (b < e) sum += SumOfSquares(shard_grads_.data() + seg.shard + (b - seg.flat), e - b);
      }
  }
  BM_TRY(queue_.Wait(queue_.Submit(
      [this, &sum] { return comm_->AllReduce(&sum, 1, DType::kFloat64, ReduceOp::kSum); })));
  return sum;
}

Status DataParallel::OptimizerStep(const AdamWStep& step, float norm) {
  // grad_scale (1 / the loss scale) folds into the clipping factor: one pass.
  const float scale = ClipScale(norm * step.grad_scale, step.grad_clip) * step.grad_scale;
  float* params = zero_ == 3 ? shard_params_.data() : model_->params().data();
  const float* grads = zero_ >= 2 ? shard_grads_.data() : model_->grads().data();
  for (const Segment& s : segments_) {
    const int64_t p = zero_ == 3 ? s.shard : s.flat, g = zero_ >= 2 ? s.shard : s.flat;
    AdamWUpdate(params + p, grads + g, m_.data() + s.shard, v_.data() + s.shard, s.n, step.lr,
                step.beta1, step.beta2, step.eps, s.decay ? step.weight_decay : 0.0f, scale,
                step.step);
  }
  if (zero_ == 1 || zero_ == 2) {
    // Every rank updated its own slices: gather them so all hold all parameters.
    std::vector<float> shard(plan_.shard_size());
    ExtractShard(model_->params().data(), shard.data());
    BM_TRY(GatherAllUnits(shard.data(), model_->params().data()));
  }
  if (zero_ == 3) DropKept();
  return Status::Ok();
}

Status DataParallel::GetLocalState(std::span<float> params, std::span<float> m,
                                   std::span<float> v) const {
  if (zero_ == 3) {
    std::copy(shard_params_.begin(), shard_params_.end(), params.begin());
  } else if (Sharded()) {
    ExtractShard(model_->params().data(), params.data());
  } else {
    std::copy(model_->params().begin(), model_->params().end(), params.begin());
  }
  std::copy(m_.begin(), m_.end(), m.begin());
  std::copy(v_.begin(), v_.end(), v.begin());
  return Status::Ok();
}

Status DataParallel::SetLocalState(std::span<const float> params, std::span<const float> m,
                                   std::span<const float> v) {
  std::copy(m.begin(), m.end(), m_.begin());
  std::copy(v.begin(), v.end(), v_.begin());
  if (zero_ == 3) {
    std::copy(params.begin(), params.end(), shard_params_.begin());
    DropKept();
    return Status::Ok();
  }
  if (Sharded()) return GatherAllUnits(params.data(), model_->params().data());
  std::copy(params.begin(), params.end(), model_->params().begin());
  return Status::Ok();
}

Status DataParallel::GetOptimizerState(std::span<float> m, std::span<float> v) const {
  if (Sharded())
    return Status(ErrorCode::kUnsupported,
                  "the AdamW state is sharded (zero >= 1): each rank holds its local state");
  std::copy(m_.begin(), m_.end(), m.begin());
  std::copy(v_.begin(), v_.end(), v.begin());
  return Status::Ok();
}

Status DataParallel::SetOptimizerState(std::span<const float> m, std::span<const float> v) {
  if (Sharded())
    return Status(ErrorCode::kUnsupported,
                  "the AdamW state is sharded (zero >= 1): set each rank's local state");
  std::copy(m.begin(), m.end(), m_.begin());
  std::copy(v.begin(), v.end(), v_.begin());
  return Status::Ok();
}

Status DataParallel::GetGradients(std::span<float> grads) const {
  if (zero_ >= 2 || (zero_ == 1 && plan_.ranks() > 1))
    return Status(ErrorCode::kUnsupported,
                  "the gradients are reduce-scattered (zero >= 1 over several ranks): each rank "
                  "holds the sum of its own slices");
  std::copy(model_->grads().begin(), model_->grads().end(), grads.begin());
  return Status::Ok();
}

int64_t DataParallel::bytes() const {
  int64_t n =
      static_cast<int64_t>(m_.size() + v_.size() + shard_params_.size() + shard_grads_.size());
  for (const auto& g : gather_) n += static_cast<int64_t>(g.capacity());
  return n * 4;
}

}  // namespace bm::train::cpu
