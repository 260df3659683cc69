// GPU facts for `benchmake-train --probe` (the engine's platform key): how many GPUs, their
// names and memory, the driver's and the runtime's CUDA versions.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace bm::train::cuda {

struct GpuFacts {
  int driver_version = 0;   // e.g. 13000 for CUDA 13.0
  int runtime_version = 0;  // the CUDA runtime this trainer was built with
  struct Gpu {
    std::string name;
    size_t memory_bytes = 0;
    int sm_major = 0, sm_minor = 0, multiprocessors = 0;
  };
  std::vector<Gpu> gpus;       // empty when no device is visible
  std::string ToJson() const;  // {"driver":"13.0","cuda_runtime":"13.0","gpus":[...]}
};

// Never fails for want of a GPU: no device gives an empty list.
Result<GpuFacts> ProbeGpus();

}  // namespace bm::train::cuda
