// Internal to trainer/cuda (cuda_vision_tower.cc, cuda_projector.cc): a module's device
// parameters (fp32 masters, the matmuls' working copy, fp32 gradients) and its linear layers'
// three products through cuBLASLt.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/matmul.h"

namespace bm::train::cuda::vision_internal {

// Flat parameters of one module on the device. In fp32 the working copy is the masters. A frozen
// module (Freeze) keeps its working copy alone: no gradients, and in 16 bits no fp32 masters (as a
// frozen CudaModel keeps its 16-bit weights only); its parameters then come back as the working
// copy holds them, widened.
class DeviceParams {
 public:
  DeviceParams() = default;
  ~DeviceParams();
  DeviceParams(const DeviceParams&) = delete;
  DeviceParams& operator=(const DeviceParams&) = delete;

  Status Allocate(size_t count, DType dtype);
  size_t count() const { return count_; }
  // Device bytes held: masters and gradients (fp32), the 16-bit working copy.
  size_t device_bytes() const {
    return count_ * ((master_ ? 4 : 0) + (grad_ ? 4 : 0) + (dtype_ == DType::kF32 ? 0 : 2));
  }
  // device_bytes(), a buffer a line (MemoryPlan::Summary's style).
  std::string Summary() const;
  // A frozen module's: frees the gradients (grad() null from then on; GetGradients reads zeros,
  // ZeroGradients does nothing) and, in 16 bits, the masters (master() null; Set rounds into the
  // working copy, GetMasters widens it).
  void Freeze();
  float* master() const { return master_; }
  float* grad() const { return grad_; }
  template <typename T>
  const T* W(int64_t offset) const {
    return static_cast<const T*>(work_) + offset;
  }
  float* G(int64_t offset) const { return grad_ + offset; }

  // Host <-> device (synchronous on `stream`); Set refreshes the working copy (a frozen module's a
  // chunk at a time through a staging buffer: the same rounding, no masters held).
  Status Set(std::span<const float> flat, cudaStream_t stream);
  Status GetMasters(std::vector<float>* flat, cudaStream_t stream) const;
  Status GetGradients(std::vector<float>* flat, cudaStream_t stream) const;
  Status ZeroGradients(cudaStream_t stream);
  Status RefreshWorkingCopy(cudaStream_t stream);

 private:
  size_t count_ = 0;
  DType dtype_ = DType::kBF16;
  float* master_ = nullptr;
  float* grad_ = nullptr;
  void* work_ = nullptr;  // == master_ in fp32
  // f(T* work, float* staging, size_t chunk) with a device staging buffer of `chunk` floats.
  template <typename F>
  Status ThroughStaging(F&& f) const;
  static constexpr size_t kStagingFloats = size_t{16} << 20;  // a frozen module's Set/GetMasters
};

// y = x Wᵀ + b (+ residual), dx = dy W, dW += dyᵀ x and db += Σ dy, row-major, W [out, in].
struct Linears {
  Matmul* matmul = nullptr;
  cudaStream_t stream = nullptr;
  DType dtype = DType::kBF16;
  float* bias_scratch = nullptr;  // BiasGradScratchFloats(rows, out) of the largest linear

  template <typename T>
  Status Forward(T* y, const T* x, const T* w, const T* b, int rows, int in, int out,
                 const T* residual = nullptr);
  // dx = dy W, written (accumulate: added).
  template <typename T>
  Status InputGrad(T* dx, const T* dy, const T* w, int rows, int in, int out,
                   bool accumulate = false);
  // dw += dyᵀ x; db (may be null) += Σ_rows dy.
  template <typename T>
  Status WeightGrad(float* dw, float* db, const T* dy, const T* x, int rows, int in, int out);
};

}  // namespace bm::train::cuda::vision_internal
