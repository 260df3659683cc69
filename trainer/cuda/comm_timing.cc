#include "trainer/cuda/comm_timing.h"

#include "trainer/cuda/check.h"

namespace bm::train::cuda {

CommTiming::~CommTiming() {
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
}

Result<cudaEvent_t> CommTiming::Record(cudaStream_t stream, const char* what) {
  if (used_ == pool_.size()) {
    cudaEvent_t e = nullptr;
    BM_CUDA_CHECK(cudaEventCreate(&e), "timing event {}", pool_.size());
    pool_.push_back(e);
  }
  cudaEvent_t e = pool_[used_++];
  BM_CUDA_CHECK(cudaEventRecord(e, stream), "timing event: {}", what);
  return e;
}

Status CommTiming::Wait(cudaStream_t compute, cudaEvent_t event, const char* site) {
  BM_ASSIGN_OR_RETURN(cudaEvent_t before, Record(compute, site));
  BM_CUDA_CHECK(cudaStreamWaitEvent(compute, event, 0), "compute waits on comm ({})", site);
  BM_ASSIGN_OR_RETURN(cudaEvent_t after, Record(compute, site));
  waits_.push_back({before, after, site});
  return Status::Ok();
}

Status CommTiming::ReductionReady(int unit, cudaStream_t compute) {
  BM_ASSIGN_OR_RETURN(cudaEvent_t ready, Record(compute, "gradients ready"));
  marks_.push_back({unit, ready});
  return Status::Ok();
}

Status CommTiming::ReductionBegins(cudaStream_t comm) {
  if (marks_.empty() || marks_.back().begin)
    return Status(ErrorCode::kInternal, "CommTiming: a reduction begins before its ready mark");
  BM_ASSIGN_OR_RETURN(marks_.back().begin, Record(comm, "reduction begins"));
  return Status::Ok();
}

Status CommTiming::ReductionEnds(cudaStream_t comm) {
  if (marks_.empty() || !marks_.back().begin || marks_.back().end)
    return Status(ErrorCode::kInternal, "CommTiming: a reduction ends before it began");
  BM_ASSIGN_OR_RETURN(marks_.back().end, Record(comm, "reduction ends"));
  return Status::Ok();
}

Status CommTiming::BackwardEnds(cudaStream_t compute) {
  BM_ASSIGN_OR_RETURN(backward_end_, Record(compute, "backward end"));
  return Status::Ok();
}

Status CommTiming::Collect() {
  for (const WaitMarks& w : waits_) {
    float ms = 0;
    BM_CUDA_CHECK(cudaEventElapsedTime(&ms, w.before, w.after), "wait timing ({})", w.site);
    wait_ms_ += ms;
    wait_ms_by_site_[w.site] += ms;
  }
  if (backward_end_ && !marks_.empty()) {
    // Every mark against the first one's (the earliest: the backward's first unit).
    const cudaEvent_t origin = marks_.front().ready;
    auto at = [origin](cudaEvent_t e, int unit) -> Result<double> {
      float ms = 0;
      BM_CUDA_CHECK(cudaEventElapsedTime(&ms, origin, e), "unit {} reduction timing", unit);
      return static_cast<double>(ms);
    };
    BM_ASSIGN_OR_RETURN(double backward, at(backward_end_, -1));
    for (const ReductionMarks& m : marks_) {
      if (!m.end) continue;  // (an error left it unfinished)
      BM_ASSIGN_OR_RETURN(double ready, at(m.ready, m.unit));
      BM_ASSIGN_OR_RETURN(double begin, at(m.begin, m.unit));
      BM_ASSIGN_OR_RETURN(double end, at(m.end, m.unit));
      Reduction& r = reductions_[m.unit];
      r.queued_ms += begin - ready;
      r.reduce_ms += end - begin;
      r.after_backward_ms += end - backward;
      ++r.steps;
    }
  }
  waits_.clear();
  marks_.clear();
  backward_end_ = nullptr;
  used_ = 0;
  return Status::Ok();
}

}  // namespace bm::train::cuda
