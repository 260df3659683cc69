// CommTiming: where a training step's communication costs time, read from CUDA timing events
// that CudaDataParallel records on its compute and communication streams:
//   - the compute stream's waits on the communication stream, by site (Wait): the exposed
//     communication;
//   - the reductions of a step's last micro-batch, unit by unit: when the unit's gradients were
//     ready on the compute stream, when its reduction began and ended on the communication
//     stream, and when the compute stream finished the backward (BackwardEnds), so that the
//     reductions still running after it (the step's exposed tail) show where their time went:
//     queued behind earlier ones, or their own length.
// Collect() reads the events recorded since the last call (after the streams synchronized) into
// running sums, and frees them for reuse; call it after every synchronized step, forward or
// evaluation, or the pool grows with every wait recorded.
//
//   CommTiming t;
//   t.Wait(compute, gathered, "gather");          // instead of cudaStreamWaitEvent
//   t.ReductionReady(3, compute); t.ReductionBegins(comm); ...; t.ReductionEnds(comm);
//   t.BackwardEnds(compute);
//   cudaStreamSynchronize(compute); t.Collect();
//
// Thread safety: none (the stream owner's thread).
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace bm::train::cuda {

class CommTiming {
 public:
  CommTiming() = default;
  CommTiming(const CommTiming&) = delete;
  CommTiming& operator=(const CommTiming&) = delete;
  ~CommTiming();

  // `compute` waits for `event` (recorded on another stream); the wait is timed as `site`.
  Status Wait(cudaStream_t compute, cudaEvent_t event, const char* site);

  // Unit `unit`'s reduction in the step's last micro-batch: its gradients ready (on the compute
  // stream), the reduction's first and last work queued (on the communication stream).
  Status ReductionReady(int unit, cudaStream_t compute);
  Status ReductionBegins(cudaStream_t comm);
  Status ReductionEnds(cudaStream_t comm);
  // The compute stream is done with the step's last backward (before it waits for the
  // reductions).
  Status BackwardEnds(cudaStream_t compute);

  // Adds what was recorded since the last call; the events must be complete.
  Status Collect();

  double wait_ms() const { return wait_ms_; }
  const std::map<std::string, double>& wait_ms_by_site() const { return wait_ms_by_site_; }

  // Per unit, summed over the steps collected: milliseconds from its gradients ready to its
  // reduction's start (queued behind earlier communication), the reduction's own length, and
  // its end after the backward's end (negative: ended before it).
  struct Reduction {
    double queued_ms = 0, reduce_ms = 0, after_backward_ms = 0;
    int steps = 0;
  };
  const std::map<int, Reduction>& reductions() const { return reductions_; }

 private:
  // A timing event from the pool, recorded on `stream` (`what`: for the error).
  Result<cudaEvent_t> Record(cudaStream_t stream, const char* what);

  struct WaitMarks {
    cudaEvent_t before, after;
    const char* site;
  };
  struct ReductionMarks {
    int unit;
    cudaEvent_t ready, begin = nullptr, end = nullptr;
  };
  std::vector<cudaEvent_t> pool_;
  size_t used_ = 0;
  std::vector<WaitMarks> waits_;
  std::vector<ReductionMarks> marks_;
  cudaEvent_t backward_end_ = nullptr;
  double wait_ms_ = 0;
  std::map<std::string, double> wait_ms_by_site_;
  std::map<int, Reduction> reductions_;
};

}  // namespace bm::train::cuda
