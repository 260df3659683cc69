#include "trainer/cuda/probe.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace bm::train::cuda {
namespace {

std::string Version(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

}  // namespace

std::string GpuFacts::ToJson() const {
  nlohmann::json j;
  j["driver"] = driver_version ? Version(driver_version) : "";
  j["cuda_runtime"] = Version(runtime_version);
  j["gpus"] = nlohmann::json::array();
  for (const Gpu& g : gpus) {
    j["gpus"].push_back({{"name", g.name},
                         {"memory_bytes", g.memory_bytes},
                         {"compute_capability", fmt::format("{}.{}", g.sm_major, g.sm_minor)},
                         {"multiprocessors", g.multiprocessors}});
  }
  return j.dump();
}

Result<GpuFacts> ProbeGpus() {
  GpuFacts facts;
  cudaDriverGetVersion(&facts.driver_version);
  cudaRuntimeGetVersion(&facts.runtime_version);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear: no device is not an error here
    return facts;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      return Errorf(ErrorCode::kUnavailable, "cudaGetDeviceProperties({}) failed", i);
    }
    facts.gpus.push_back({p.name, p.totalGlobalMem, p.major, p.minor, p.multiProcessorCount});
  }
  return facts;
}

}  // namespace bm::train::cuda
