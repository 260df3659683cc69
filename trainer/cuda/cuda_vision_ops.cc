#include "trainer/cuda/cuda_vision_ops.h"

#include <fmt/format.h>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/residual.cuh"

namespace bm::train::cuda::vision_internal {

DeviceParams::~DeviceParams() {
  if (work_ != nullptr && work_ != master_) cudaFree(work_);
  cudaFree(master_);
  cudaFree(grad_);
}

Status DeviceParams::Allocate(size_t count, DType dtype) {
  count_ = count;
  dtype_ = dtype;
  const size_t n = std::max<size_t>(count, 1);
  BM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&master_), n * 4), "{} master floats", count);
  BM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&grad_), n * 4), "{} gradient floats", count);
  if (dtype == DType::kF32) {
    work_ = master_;
  } else {
    BM_CUDA_CHECK(cudaMalloc(&work_, n * 2), "{} working weights", count);
  }
  BM_CUDA_CHECK(cudaMemset(master_, 0, n * 4), "masters");
  BM_CUDA_CHECK(cudaMemset(grad_, 0, n * 4), "gradients");
  return RefreshWorkingCopy(nullptr);
}

std::string DeviceParams::Summary() const {
  const double mib = count_ / 1048576.0;
  std::string out = fmt::format("parameters: {:.1f} MiB\n", device_bytes() / 1048576.0);
  if (master_) out += fmt::format("  {:>10.1f} MiB  masters fp32\n", mib * 4);
  if (dtype_ != DType::kF32) out += fmt::format("  {:>10.1f} MiB  16-bit working copy\n", mib * 2);
  if (grad_) out += fmt::format("  {:>10.1f} MiB  gradients fp32\n", mib * 4);
  return out;
}

void DeviceParams::Freeze() {
  cudaFree(grad_);
  grad_ = nullptr;
  if (dtype_ == DType::kF32) return;  // the masters are the working copy
  cudaFree(master_);
  master_ = nullptr;
}

namespace {
// A frozen 16-bit module's parameters, a chunk at a time through `staging` (device fp32):
// host -> staging -> working copy (cast), or working copy -> staging (widened) -> host.
template <typename T>
Status CastChunks(T* work, std::span<const float> in, float* staging, size_t chunk,
                  cudaStream_t stream) {
  for (size_t at = 0; at < in.size(); at += chunk) {
    const size_t n = std::min(chunk, in.size() - at);
    BM_CUDA_CHECK(cudaMemcpyAsync(staging, in.data() + at, n * 4, cudaMemcpyHostToDevice, stream),
                  "parameters [{}, {}) to the device", at, at + n);
    BM_TRY(CastF32<T>(work + at, staging, n, stream));
    BM_CUDA_CHECK(cudaStreamSynchronize(stream), "parameters to the device");
  }
  return Status::Ok();
}
template <typename T>
Status WidenChunks(std::span<float> out, const T* work, float* staging, size_t chunk,
                   cudaStream_t stream) {
  for (size_t at = 0; at < out.size(); at += chunk) {
    const size_t n = std::min(chunk, out.size() - at);
    BM_TRY(WidenF32<T>(staging, work + at, n, false, stream));
    BM_CUDA_CHECK(cudaMemcpyAsync(out.data() + at, staging, n * 4, cudaMemcpyDeviceToHost, stream),
                  "parameters [{}, {}) to the host", at, at + n);
    BM_CUDA_CHECK(cudaStreamSynchronize(stream), "parameters to the host");
  }
  return Status::Ok();
}

// A device staging buffer for a frozen module's chunks, freed when it goes.
struct Staging {
  float* ptr = nullptr;
  ~Staging() { cudaFree(ptr); }
};
}  // namespace

template <typename F>
Status DeviceParams::ThroughStaging(F&& f) const {
  Staging staging;
  const size_t chunk = std::max<size_t>(std::min(count_, kStagingFloats), 1);
  BM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&staging.ptr), chunk * 4),
                "a staging buffer of {} floats", chunk);
  if (dtype_ == DType::kBF16) return f(static_cast<__nv_bfloat16*>(work_), staging.ptr, chunk);
  return f(static_cast<__half*>(work_), staging.ptr, chunk);
}

Status DeviceParams::Set(std::span<const float> flat, cudaStream_t stream) {
  if (flat.size() != count_) {
    return Errorf(ErrorCode::kInvalidArgument, "parameters: {} floats given, the layout has {}",
                  flat.size(), count_);
  }
  if (!master_) {  // frozen in 16 bits
    return ThroughStaging([&](auto* work, float* staging, size_t chunk) {
      return CastChunks(work, flat, staging, chunk, stream);
    });
  }
  BM_CUDA_CHECK(cudaMemcpyAsync(master_, flat.data(), count_ * 4, cudaMemcpyHostToDevice, stream),
                "parameters to the device");
  BM_TRY(RefreshWorkingCopy(stream));
  BM_CUDA_CHECK(cudaStreamSynchronize(stream), "parameters to the device");
  return Status::Ok();
}

namespace {
Status Download(std::vector<float>* flat, const float* src, size_t n, cudaStream_t stream) {
  flat->resize(n);
  BM_CUDA_CHECK(cudaMemcpyAsync(flat->data(), src, n * 4, cudaMemcpyDeviceToHost, stream),
                "{} floats to the host", n);
  BM_CUDA_CHECK(cudaStreamSynchronize(stream), "{} floats to the host", n);
  return Status::Ok();
}
}  // namespace

Status DeviceParams::GetMasters(std::vector<float>* flat, cudaStream_t stream) const {
  if (!master_) {  // frozen in 16 bits: the working copy, widened
    flat->resize(count_);
    return ThroughStaging([&](auto* work, float* staging, size_t chunk) {
      return WidenChunks(std::span<float>(*flat), work, staging, chunk, stream);
    });
  }
  return Download(flat, master_, count_, stream);
}
Status DeviceParams::GetGradients(std::vector<float>* flat, cudaStream_t stream) const {
  if (!grad_) {  // released: a frozen module's
    flat->assign(count_, 0.0f);
    return Status::Ok();
  }
  return Download(flat, grad_, count_, stream);
}
Status DeviceParams::ZeroGradients(cudaStream_t stream) {
  if (!grad_) return Status::Ok();
  BM_CUDA_CHECK(cudaMemsetAsync(grad_, 0, std::max<size_t>(count_, 1) * 4, stream),
                "zero {} gradients", count_);
  return Status::Ok();
}
Status DeviceParams::RefreshWorkingCopy(cudaStream_t stream) {
  if (!master_) return Status::Ok();  // frozen in 16 bits: nothing updates it
  switch (dtype_) {
    case DType::kF32:
      return Status::Ok();
    case DType::kBF16:
      return CastF32<__nv_bfloat16>(static_cast<__nv_bfloat16*>(work_), master_, count_, stream);
    case DType::kF16:
      return CastF32<__half>(static_cast<__half*>(work_), master_, count_, stream);
  }
  return Status::Ok();
}

template <typename T>
Status Linears::Forward(T* y, const T* x, const T* w, const T* b, int rows, int in, int out,
                        const T* residual) {
  MatmulArgs a;
  a.m = rows, a.n = out, a.k = in;
  a.trans_b = true;
  a.ab_type = a.d_type = dtype;
  a.a = x, a.lda = in, a.b = w, a.ldb = in, a.d = y, a.ldd = out;
  if (residual) a.c = residual, a.beta = 1.0f;
  if (b != nullptr) {
    a.epilogue = Epilogue::kBias;
    a.bias = b;
    if (matmul->Supports(a)) return matmul->Run(a, stream);
    a.epilogue = Epilogue::kNone, a.bias = nullptr;
  }
  BM_TRY(matmul->Run(a, stream));
  if (b == nullptr) return Status::Ok();
  return AddBias<T>(y, b, rows, out, stream);
}

template <typename T>
Status Linears::InputGrad(T* dx, const T* dy, const T* w, int rows, int in, int out,
                          bool accumulate) {
  MatmulArgs d;
  d.m = rows, d.n = in, d.k = out;
  d.ab_type = d.d_type = dtype;
  d.a = dy, d.lda = out, d.b = w, d.ldb = in, d.d = dx, d.ldd = in;
  d.beta = accumulate ? 1.0f : 0.0f;
  return matmul->Run(d, stream);
}

template <typename T>
Status Linears::WeightGrad(float* dw, float* db, const T* dy, const T* x, int rows, int in,
                           int out) {
  MatmulArgs g;
  g.m = out, g.n = in, g.k = rows;
  g.trans_a = true;
  g.ab_type = dtype, g.d_type = DType::kF32;
  g.a = dy, g.lda = out, g.b = x, g.ldb = in, g.d = dw, g.ldd = in;
  g.beta = 1.0f;
  BM_TRY(matmul->Run(g, stream));
  if (db == nullptr) return Status::Ok();
  return BiasGrad<T>(db, bias_scratch, dy, rows, out, stream);
}

#define BM_INSTANTIATE(T)                                                                         \
  template Status Linears::Forward<T>(T*, const T*, const T*, const T*, int, int, int, const T*); \
  template Status Linears::InputGrad<T>(T*, const T*, const T*, int, int, int, bool);             \
  template Status Linears::WeightGrad<T>(float*, float*, const T*, const T*, int, int, int);
BM_INSTANTIATE(float)
BM_INSTANTIATE(__nv_bfloat16)
BM_INSTANTIATE(__half)
#undef BM_INSTANTIATE

}  // namespace bm::train::cuda::vision_internal
