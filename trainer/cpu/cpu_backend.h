// The CPU reference backend (device = "cpu"): fp32, Model<float> plus AdamW
// state. The oracle that the CUDA backend is checked against.
#pragma once

#include "trainer/backend.h"

namespace bm::train::cpu {

// Never null. Threads: BackendOptions::threads for OpenMP and OpenBLAS.
Backend* CreateCpuBackend();

// "AMD EPYC 7B13" from /proc/cpuinfo, or "unknown CPU".
std::string CpuModelName();
// Physical memory in bytes (sysconf), 0 if unknown.
int64_t PhysicalMemoryBytes();

}  // namespace bm::train::cpu
