// GpuAllocator: hands out GPU ids to steps across processes. Ninja's pools
// count jobs, not GPUs, so a step needing k GPUs takes k lock files
// (flock, released when the step exits or dies) from a machine-wide directory:
//   $BENCHMAKE_GPU_LOCK_DIR, else /tmp/benchmake-gpus-$UID, file gpuN.lock.
// The step then sets CUDA_VISIBLE_DEVICES to the ids it got.
//
// All or nothing, and no deadlock: one acquirer at a time holds acquire.lock
// (the others queue on it holding no GPU) and gathers free GPUs until it has
// all k; only then does the step run. GPUs are freed only by running steps,
// which wait for nothing, so the acquirer always gets its k in the end, and a
// 4-GPU step is not starved by 2-GPU steps that keep slipping in: while it
// gathers, they queue. Two leases never share a GPU (each GPU is one flock).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "base/file_lock.h"

namespace bm::engine {

struct GpuLease {
  std::vector<int> ids;
  std::vector<FileLock> locks;
  std::string VisibleDevices() const;  // "0,1"
};

std::string GpuLockDir();

// Waits until `count` of the `total` GPUs are free, saying so once on
// `notice` when it has to wait. kInvalidArgument when count > total.
Result<GpuLease> AcquireGpus(int count, int total, const std::string& lock_dir,
                             std::ostream* notice);

}  // namespace bm::engine
