// CudaDataParallel's exchange with the host (cuda_data_parallel.h): parameters, gradients and
// the AdamW state in and out, staged in chunks (host_staging.h), gathered from the ranks' slices
// at zero >= 1, and the split masters' halves.
#include <algorithm>
#include <span>
#include <vector>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cuda_data_parallel.h"
#include "trainer/cuda/host_staging.h"
#include "trainer/cuda/kernels/split_master.h"
#include "trainer/dist/bf16.h"

namespace bm::train::cuda {
namespace {

using CommType = dist::DType;

}  // namespace

// The working weights' own slices from whole masters (zero 1-2; split masters' high halves are
// those slices; zero 3 casts when it gathers a unit: IssueGather).
Status CudaDataParallel::WriteWorkSlices(cudaStream_t s) {
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t slice = static_cast<size_t>(plan_.slice(u));
    const float* from = At<float>(master_) + plan_.shard_offset(u);
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

Status CudaDataParallel::SetParameters(const RangeSource& fill) {
  if (frozen_) return SetFrozen(fill);
  const size_t P = layout_.total();
  if (split_) {  // this rank's slices
    BM_TRY(SetSplitMasters([&](int u, size_t at, std::span<float> out) {
      fill(static_cast<size_t>(plan_.unit(u).offset + plan_.rank() * plan_.slice(u)) + at, out);
    }));
    return MastersChanged();
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
    if (lowp_ && !split_)
      BM_TRY(CastToWork(At<uint16_t>(work_off_), At<float>(master_), layout_.total(), compute_));
  } else {
    BM_TRY(AwaitGathers());  // a gather still reading the own slices the write replaces
    if (zero_ <= 2) {
      if (!split_) BM_TRY(WriteWorkSlices(compute_));
      BM_TRY(GatherWorkAllUnits());
    }
    for (Slot* s : WorkSlots()) s->unit = -1;
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
    float* space = buckets_ ? At<float>(GradSlotFor(u)->offset) : At<float>(grad_);
    const float* mine = At<float>(master_) + plan_.shard_offset(u);
    if (split_) {  // joined into its place in the space, then gathered in place
      float* place = space + plan_.rank() * slice;
      BM_TRY(JoinMasters(place, HighHalves(u), At<uint16_t>(lo_) + plan_.shard_offset(u), slice,
                         comm_stream_));
      mine = place;
    }
    BM_TRY(AllGather(mine, space, slice, CommType::kFloat32, comm_stream_));
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

// split_: the low halves lie in local order; the high halves unit by unit (HighHalves). A
// chunk's host buffers are reused once its copies are done, so the host holds a chunk, not the
// shard (as HostStaging does for whole masters).
Status CudaDataParallel::SetSplitMasters(const SliceSource& values) {
  const size_t chunk = std::min(static_cast<size_t>(local_size()), HostStaging::kChunk);
  std::vector<float> v(chunk);
  std::vector<uint16_t> hi(chunk), lo(chunk);
  BM_TRY(AwaitGathers());  // at zero 1-2 the high halves are the gathers' send buffers
  for (int u = 0; u < plan_.num_units(); ++u) {
    const size_t slice = static_cast<size_t>(plan_.slice(u));
    for (size_t at = 0; at < slice; at += chunk) {
      const size_t n = std::min(chunk, slice - at);
      values(u, at, std::span<float>(v.data(), n));
      SplitMastersCpu(v.data(), n, hi.data(), lo.data());
      BM_CUDA_CHECK(
          cudaMemcpyAsync(HighHalves(u) + at, hi.data(), n * 2, cudaMemcpyHostToDevice, compute_),
          "unit {} masters' high halves", u);
      BM_CUDA_CHECK(cudaMemcpyAsync(At<uint16_t>(lo_) + plan_.shard_offset(u) + at, lo.data(),
                                    n * 2, cudaMemcpyHostToDevice, compute_),
                    "unit {} masters' low halves", u);
      BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "parameters");  // before the buffers change
    }
  }
  return Status::Ok();
}

Status CudaDataParallel::GetSplitMasters(std::vector<float>* local) {
  const size_t n = static_cast<size_t>(local_size());
  std::vector<uint16_t> hi(n), lo(n);
  for (int u = 0; u < plan_.num_units(); ++u)
    BM_CUDA_CHECK(
        cudaMemcpyAsync(hi.data() + plan_.shard_offset(u), HighHalves(u),
                        static_cast<size_t>(plan_.slice(u)) * 2, cudaMemcpyDeviceToHost, compute_),
        "unit {} masters' high halves", u);
  BM_CUDA_CHECK(
      cudaMemcpyAsync(lo.data(), At<uint16_t>(lo_), n * 2, cudaMemcpyDeviceToHost, compute_),
      "masters' low halves");
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "parameters");
  local->resize(n);
  JoinMastersCpu(hi.data(), lo.data(), n, local->data());
  return Status::Ok();
}

// Frozen: the working weights themselves (fp32), or a chunk at a time converted on the host
// (16-bit, rounded as CastToWork rounds: kernels/split_master.h's MasterHigh for bf16).
Status CudaDataParallel::SetFrozen(const RangeSource& fill) {
  const size_t P = layout_.total();
  if (!lowp_) {
    HostStaging staging;
    BM_TRY(staging.Init(compute_, P));
    BM_TRY(staging.Upload(fill, 0, P, At<float>(work_off_)));
    BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "frozen parameters");
    return Status::Ok();
  }
  if (work_ != DType::kBF16)
    return Status(ErrorCode::kUnsupported, "a frozen model's working weights: bf16 or fp32");
  const size_t chunk = std::min(P, HostStaging::kChunk);
  std::vector<float> values(chunk);
  std::vector<uint16_t> bits(chunk);
  for (size_t at = 0; at < P; at += chunk) {
    const size_t n = std::min(chunk, P - at);
    fill(at, std::span<float>(values.data(), n));
    SplitMastersCpu(values.data(), n, bits.data(), nullptr);
    BM_CUDA_CHECK(cudaMemcpyAsync(At<uint16_t>(work_off_) + at, bits.data(), n * 2,
                                  cudaMemcpyHostToDevice, compute_),
                  "frozen parameters [{}, {})", at, at + n);
    BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "frozen parameters");  // before bits change
  }
  return Status::Ok();
}

Status CudaDataParallel::GetFrozen(const RangeSink& take) {
  const size_t P = layout_.total();
  if (!take) return Status::Ok();
  if (!lowp_) {
    HostStaging staging;
    BM_TRY(staging.Init(compute_, P));
    return staging.Download(At<float>(work_off_), P, 0, take);
  }
  const size_t chunk = std::min(P, HostStaging::kChunk);
  std::vector<uint16_t> bits(chunk);
  std::vector<float> values(chunk);
  for (size_t at = 0; at < P; at += chunk) {
    const size_t n = std::min(chunk, P - at);
    BM_CUDA_CHECK(cudaMemcpyAsync(bits.data(), At<uint16_t>(work_off_) + at, n * 2,
                                  cudaMemcpyDeviceToHost, compute_),
                  "frozen parameters [{}, {})", at, at + n);
    BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "frozen parameters");
    for (size_t i = 0; i < n; ++i) values[i] = BitsFloat(static_cast<uint32_t>(bits[i]) << 16);
    take(at, std::span<const float>(values.data(), n));
  }
  return Status::Ok();
}

Status CudaDataParallel::GetParameters(const RangeSink& take) {
  if (frozen_) return GetFrozen(take);
  if (zero_ >= 1) return GatherMaster(take);
  if (split_) {
    std::vector<float> flat;
    BM_TRY(GetSplitMasters(&flat));
    if (take) take(0, flat);
    return Status::Ok();
  }
  if (!take) return Status::Ok();
  HostStaging staging;
  BM_TRY(staging.Init(compute_, layout_.total()));
  return staging.Download(At<float>(master_), layout_.total(), 0, take);
}

Status CudaDataParallel::GetGradients(std::vector<float>* flat) {
  BM_TRY(RefuseFrozen("GetGradients"));
  if (zero_ >= 2 || sums_own_slices())
    return Status(ErrorCode::kUnsupported,
                  "the gradients are reduce-scattered (zero >= 1 over several ranks): each rank "
                  "holds the sum of its own slices");
  BM_TRY(ZeroPendingGradients());
  BM_CUDA_CHECK(cudaStreamSynchronize(comm_stream_), "gradients");
  flat->resize(layout_.total());
  if (!keep_bf16_) {
    BM_CUDA_CHECK(cudaMemcpyAsync(flat->data(), At<float>(grad_), flat->size() * 4,
                                  cudaMemcpyDeviceToHost, compute_),
                  "gradients");
    BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "gradients");
    return Status::Ok();
  }
  // The bf16 sums (the whole layout in order: one rank's slices), widened as AdamW reads them.
  std::vector<uint16_t> sums(flat->size());
  BM_CUDA_CHECK(
      cudaMemcpyAsync(sums.data(), SumsOf(0), sums.size() * 2, cudaMemcpyDeviceToHost, compute_),
      "gradients");
  BM_CUDA_CHECK(cudaStreamSynchronize(compute_), "gradients");
  std::transform(sums.begin(), sums.end(), flat->begin(), dist::Bf16ToFloat);
  return Status::Ok();
}

Status CudaDataParallel::GetOptimizerState(std::vector<float>* m, std::vector<float>* v) {
  BM_TRY(RefuseFrozen("GetOptimizerState"));
  if (zero_ >= 1)
    return Status(ErrorCode::kUnsupported,
                  "the AdamW state is sharded (zero >= 1): each rank holds its local state");
  return GetLocalState(nullptr, m, v);
}

Status CudaDataParallel::SetOptimizerState(const std::vector<float>& m,
                                           const std::vector<float>& v) {
  BM_TRY(RefuseFrozen("SetOptimizerState"));
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
  BM_TRY(RefuseFrozen("GetLocalState"));
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
  BM_TRY(RefuseFrozen("SetLocalState"));
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
  if (split_) {
    BM_TRY(SetSplitMasters([&](int u, size_t at, std::span<float> out) {
      std::copy_n(master.begin() + plan_.shard_offset(u) + static_cast<int64_t>(at), out.size(),
                  out.begin());
    }));
  }
  return MastersChanged();
}

}  // namespace bm::train::cuda
