// NvmlGpu: the SM clock, the board power and the energy counter of the GPU a CUDA device runs
// on, read through NVML: the energy a training run took (CudaBackend::ReadEnergy, metrics.json's
// "energy"), and the benchmarks' joules a step and clocks (cuda_train_bench).
// Inside a training step an H100/H200 runs at its power limit (docs/PERFORMANCE.md, run 68), so
// the energy a step takes sets its time as much as its kernels do.
//
// NVML is loaded at run time: the driver ships libnvidia-ml.so.1, the toolkit installed here
// has no nvml.h. Only the entry points below are used, with NVML's documented signatures
// (nvmlReturn_t is an int, 0 for success; nvmlDevice_t an opaque pointer). Without NVML (no
// driver, as in CI) Open() returns false and the readings are negative.
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>

namespace bm::train::cuda {

class NvmlGpu {
 public:
  // The GPU of CUDA device `cuda_device`, matched by PCI bus id.
  bool Open(int cuda_device) {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    auto by_pci = reinterpret_cast<int (*)(const char*, void**)>(
        dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    clock_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    power_ = reinterpret_cast<int (*)(void*, unsigned*)>(dlsym(lib, "nvmlDeviceGetPowerUsage"));
    energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(
        dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
    char bus[32];
    if (!init || !by_pci || !clock_ || !power_ || !energy_ || init() != 0 ||
        cudaDeviceGetPCIBusId(bus, sizeof(bus), cuda_device) != cudaSuccess ||
        by_pci(bus, &device_) != 0) {
      device_ = nullptr;
      return false;
    }
    return true;
  }
  bool ok() const { return device_ != nullptr; }

  // The SM clock now (NVML_CLOCK_SM), MHz.
  double SmMhz() const {
    unsigned v = 0;
    return ok() && clock_(device_, 1, &v) == 0 ? static_cast<double>(v) : -1.0;
  }
  // The board's power draw (NVML averages it over about a second), watts.
  double Watts() const {
    unsigned mw = 0;
    return ok() && power_(device_, &mw) == 0 ? mw / 1000.0 : -1.0;
  }
  // The energy the GPU has used since the driver loaded, joules: subtract two readings seconds
  // apart. The counter does not resolve less: run 71 read 200-430 W over half-second bursts of
  // products that hold the GPU at its 700 W cap, and 855 W over 150 ms ones.
  double Joules() const {
    unsigned long long mj = 0;
    return ok() && energy_(device_, &mj) == 0 ? static_cast<double>(mj) / 1000.0 : -1.0;
  }

 private:
  void* device_ = nullptr;
  int (*clock_)(void*, int, unsigned*) = nullptr;
  int (*power_)(void*, unsigned*) = nullptr;
  int (*energy_)(void*, unsigned long long*) = nullptr;
};

}  // namespace bm::train::cuda
