// GpuAllocator: hands out GPU ids to steps across processes. Ninja's pools
// count jobs, not GPUs, so a step needing k GPUs takes k lock files
// (flock, released when the step exits or dies) from a machine-wide directory:
//   $BENCHMAKE_GPU_LOCK_DIR, else /tmp/benchmake-gpus-$UID, file gpuN.lock.
// The step then sets CUDA_VISIBLE_DEVICES to the ids it got.
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
