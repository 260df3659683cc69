// Helpers for the CUDA backend's tests: device buffers, poisoning, bf16 / fp16 rounding on the
// host, the relative-error check, the skip when no GPU is present, and a group that only has a
// size and a rank (for plans and argument checks).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/dist/communicator.h"

namespace bm::train::cuda::testing {

// A device group's size and rank, for what plans or checks without communicating
// (CudaDataParallel's constructor and Plan, CudaModel::Create's argument checks): every
// collective is refused (kInternal).
class PlanOnlyGroup final : public dist::Communicator {
 public:
  PlanOnlyGroup(int size, int rank) : size_(size), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view transport() const override { return "plan"; }
  bool device() const override { return true; }
  Status AllReduce(void*, int64_t, dist::DType, dist::ReduceOp, void*) override { return No(); }
  Status ReduceScatter(const void*, void*, int64_t, dist::DType, dist::ReduceOp, void*) override {
    return No();
  }
  Status AllGather(const void*, void*, int64_t, dist::DType, void*) override { return No(); }
  Status Broadcast(void*, int64_t, dist::DType, int, void*) override { return No(); }
  Status Send(const void*, int64_t, dist::DType, int, void*) override { return No(); }
  Status Recv(void*, int64_t, dist::DType, int, void*) override { return No(); }
  Status SendRecv(const void*, int64_t, int, void*, int64_t, int, dist::DType, void*) override {
    return No();
  }
  Status Barrier() override { return No(); }

 private:
  static Status No() { return Status(ErrorCode::kInternal, "a plan-only group communicates"); }
  int size_, rank_;
};

inline std::string NoDeviceReason() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  }
  return count == 0 ? "no CUDA device" : "";
}

#define BM_SKIP_WITHOUT_GPU()                                            \
  do {                                                                   \
    std::string reason = ::bm::train::cuda::testing::NoDeviceReason();   \
    if (!reason.empty()) GTEST_SKIP() << "GPU test skipped: " << reason; \
  } while (0)

template <typename T>
float ToFloat(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else
    return __bfloat162float(v);
}
template <typename T>
T FromFloat(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(v);
  else
    return __float2bfloat16_rn(v);
}
// What the device sees after conversion to T, back in fp32.
template <typename T>
std::vector<float> Rounded(std::vector<float> v) {
  for (float& x : v) x = ToFloat(FromFloat<T>(x));
  return v;
}

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(&ptr_, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess);
    Poison();
  }
  explicit DeviceBuffer(const std::vector<float>& host) : DeviceBuffer(host.size()) {
    Upload(host);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return static_cast<T*>(ptr_); }
  // All bits set: NaN for fp32, bf16 and fp16.
  void Poison() { EXPECT_EQ(cudaMemset(ptr_, 0xff, n_ * sizeof(T)), cudaSuccess); }
  void Upload(const std::vector<float>& host) {
    std::vector<T> tmp(host.size());
    for (size_t i = 0; i < host.size(); ++i) tmp[i] = FromFloat<T>(host[i]);
    EXPECT_EQ(cudaMemcpy(ptr_, tmp.data(), tmp.size() * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<float> Download() const {
    std::vector<T> tmp(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(tmp.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<float> out(n_);
    for (size_t i = 0; i < n_; ++i) out[i] = ToFloat(tmp[i]);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t n_;
};

inline std::vector<float> RandomVector(size_t n, float scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// ||got - want|| / ||want||; +inf when got has a NaN or an infinity.
inline double RelativeError(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    double d = double(got[i]) - want[i];
    num += d * d;
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// fp16 (10 mantissa bits) is finer than bf16 (7): the 16-bit tolerance holds for both.
template <typename T>
constexpr double kTol = std::is_same_v<T, float> ? 2e-5 : 1e-2;

template <typename T>
const char* TypeName() {
  return std::is_same_v<T, float> ? "fp32" : std::is_same_v<T, __half> ? "fp16" : "bf16";
}

}  // namespace bm::train::cuda::testing
