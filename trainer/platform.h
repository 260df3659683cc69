// The platform facts of this machine, as `benchmake-train --probe` prints
// them (docs/METRICS.md): CPU model and cores, GPUs, driver and CUDA versions, the cuBLASLt
// and cuDNN libraries loaded, the InfiniBand/RoCE ports (interconnect), and the trainer's build
// id. The engine puts them in the key of platform-dependent steps, so they must be stable across
// runs on one machine (no clocks, loads or free memory).
//
// The CUDA backend fills the GPU part: with BENCHMAKE_HAVE_CUDA, Probe() calls
//   nlohmann::json bm::train::cuda::ProbeCudaPlatform(bool libraries);
// (declared in trainer/cuda/cuda_backend.h) which returns
//   {"gpus": [{"name", "memory_bytes", "compute_capability"}...], "driver": "580.159.04", "cuda":
//   "13.0", "cublaslt": "13.1.0", "cudnn": "9.19.0"}
// and never fails (no GPU: an empty list and nulls).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace bm::train {

// "benchmake-train 0.1.0 (g++ 12.2.0; cuda: off)".
std::string TrainerBuildId();

// gpu_libraries = false leaves "cublaslt" and "cudnn" null without loading them (cuBLASLt alone
// costs about 0.4 s): the record of a CPU run, in which none of their kernels ran.
nlohmann::json ProbePlatform(bool gpu_libraries = true);

// The process's peak resident set (getrusage's ru_maxrss): the CPU LLaVA runs' memory.
int64_t PeakResidentBytes();

}  // namespace bm::train
