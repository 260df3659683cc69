#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/activation.cuh"
#include "trainer/cuda/kernels/common.cuh"

namespace bm::train::cuda {
namespace {

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)

__host__ __device__ inline float Gelu(float x) {
  float u = kGeluC * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(u));
}
__host__ __device__ inline float GeluGrad(float x) {
  float u = kGeluC * (x + 0.044715f * x * x * x);
  float t = tanhf(u);
  float du = kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}
__host__ __device__ inline float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// The elementwise activations of the vision tower and the projector, each a value and a
// derivative (the kernels below are shared through these).
struct GeluErfOp {
  static constexpr float kRsqrt2 = 0.7071067811865476f;    // 1/sqrt(2)
  static constexpr float kRsqrt2Pi = 0.3989422804014327f;  // 1/sqrt(2 pi)
  __host__ __device__ static float F(float x) { return 0.5f * x * (1.0f + erff(x * kRsqrt2)); }
  __host__ __device__ static float D(float x) {
    return 0.5f * (1.0f + erff(x * kRsqrt2)) + x * kRsqrt2Pi * expf(-0.5f * x * x);
  }
};
struct QuickGeluOp {
  __host__ __device__ static float F(float x) { return x * Sigmoid(1.702f * x); }
  __host__ __device__ static float D(float x) {
    float s = Sigmoid(1.702f * x);
    return s + 1.702f * x * s * (1.0f - s);
  }
};

// ---- kernels

template <typename T>
__global__ void GeluForwardKernel(T* out, const T* in, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = FromF<T>(Gelu(ToF(in[i])));
}

template <typename T>
__global__ void GeluBackwardKernel(T* din, const T* dout, const T* in, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) din[i] = FromF<T>(ToF(dout[i]) * GeluGrad(ToF(in[i])));
}

template <typename Op, typename T>
__global__ void UnaryForwardKernel(T* out, const T* in, size_t n) {
  constexpr int V = Pack16<T>::kN;
  size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * V;
  if (i >= n) return;
  if (i + V <= n && (reinterpret_cast<size_t>(in + i) & 15) == 0 &&
      (reinterpret_cast<size_t>(out + i) & 15) == 0) {
    Pack16<T> p = Load16(in + i);
#pragma unroll
    for (int k = 0; k < V; ++k) p.v[k] = FromF<T>(Op::F(ToF(p.v[k])));
    Store16(out + i, p);
  } else {
    for (size_t j = i; j < n && j < i + V; ++j) out[j] = FromF<T>(Op::F(ToF(in[j])));
  }
}

template <typename Op, typename T>
__global__ void UnaryBackwardKernel(T* din, const T* dout, const T* in, size_t n) {
  constexpr int V = Pack16<T>::kN;
  size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * V;
  if (i >= n) return;
  if (i + V <= n && ((reinterpret_cast<size_t>(in + i) | reinterpret_cast<size_t>(dout + i) |
                      reinterpret_cast<size_t>(din + i)) &
                     15) == 0) {
    Pack16<T> x = Load16(in + i), g = Load16(dout + i);
#pragma unroll
    for (int k = 0; k < V; ++k) g.v[k] = FromF<T>(ToF(g.v[k]) * Op::D(ToF(x.v[k])));
    Store16(din + i, g);
  } else {
    for (size_t j = i; j < n && j < i + V; ++j) din[j] = FromF<T>(ToF(dout[j]) * Op::D(ToF(in[j])));
  }
}

template <typename Op, typename T>
Status UnaryForward(T* out, const T* in, size_t n, cudaStream_t stream, const char* name) {
  if (n == 0) return Status::Ok();
  UnaryForwardKernel<Op, T>
      <<<CeilDiv(CeilDiv(n, Pack16<T>::kN), 256), 256, 0, stream>>>(out, in, n);
  BM_LAUNCH_CHECK(name, "n={}", n);
  return Status::Ok();
}
template <typename Op, typename T>
Status UnaryBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream,
                     const char* name) {
  if (n == 0) return Status::Ok();
  UnaryBackwardKernel<Op, T>
      <<<CeilDiv(CeilDiv(n, Pack16<T>::kN), 256), 256, 0, stream>>>(din, dout, in, n);
  BM_LAUNCH_CHECK(name, "n={}", n);
  return Status::Ok();
}

template <typename T>
__global__ void SwigluForwardKernel(T* out, const T* in, int rows, int ffn) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<size_t>(rows) * ffn) return;
  size_t r = i / ffn, c = i % ffn;
  float g = ToF(in[r * 2 * ffn + c]), u = ToF(in[r * 2 * ffn + ffn + c]);
  out[i] = FromF<T>(g * Sigmoid(g) * u);
}

template <typename T>
__global__ void SwigluBackwardKernel(T* din, T* out, const T* dout, const T* in, int rows,
                                     int ffn) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<size_t>(rows) * ffn) return;
  size_t r = i / ffn, c = i % ffn;
  float g = ToF(in[r * 2 * ffn + c]), u = ToF(in[r * 2 * ffn + ffn + c]);
  float d = ToF(dout[i]);
  float s = Sigmoid(g);
  din[r * 2 * ffn + c] = FromF<T>(d * u * s * (1.0f + g * (1.0f - s)));
  din[r * 2 * ffn + ffn + c] = FromF<T>(d * g * s);
  if (out) out[i] = FromF<T>(g * s * u);
}

// Vectorized twins: each thread handles 16 bytes of outputs (the GELU forward: kGeluPacks of
// them, a block's width apart, both loads issued before either is used; one load a thread in
// flight left it at three quarters of the copy bandwidth, its tanhf between the loads).
constexpr int kGeluPacks = 2;

template <typename T>
__global__ void GeluForwardVecKernel(T* out, const T* in, size_t n) {
  constexpr int V = Pack16<T>::kN;
  const size_t first =
      (blockIdx.x * static_cast<size_t>(blockDim.x) * kGeluPacks + threadIdx.x) * V;
  Pack16<T> p[kGeluPacks];
#pragma unroll
  for (int u = 0; u < kGeluPacks; ++u) {
    const size_t i = first + static_cast<size_t>(u) * blockDim.x * V;
    if (i < n) p[u] = Load16(in + i);
  }
#pragma unroll
  for (int u = 0; u < kGeluPacks; ++u) {
    const size_t i = first + static_cast<size_t>(u) * blockDim.x * V;
    if (i >= n) break;
#pragma unroll
    for (int k = 0; k < V; ++k) p[u].v[k] = FromF<T>(Gelu(ToF(p[u].v[k])));
    Store16(out + i, p[u]);
  }
}

template <typename T>
__global__ void GeluBackwardVecKernel(T* din, const T* dout, const T* in, size_t n) {
  constexpr int V = Pack16<T>::kN;
  size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * V;
  if (i >= n) return;
  Pack16<T> x = Load16(in + i), g = Load16(dout + i);
#pragma unroll
  for (int k = 0; k < V; ++k) g.v[k] = FromF<T>(ToF(g.v[k]) * GeluGrad(ToF(x.v[k])));
  Store16(din + i, g);
}

template <typename T>
__global__ void SwigluForwardVecKernel(T* out, const T* in, int rows, int ffn) {
  constexpr int V = Pack16<T>::kN;
  size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * V;
  if (i >= static_cast<size_t>(rows) * ffn) return;
  size_t r = i / ffn, c = i % ffn;
  Pack16<T> g = Load16(in + r * 2 * ffn + c), u = Load16(in + r * 2 * ffn + ffn + c);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float gk = ToF(g.v[k]);
    g.v[k] = FromF<T>(gk * Sigmoid(gk) * ToF(u.v[k]));
  }
  Store16(out + i, g);
}

template <typename T>
__global__ void SwigluBackwardVecKernel(T* din, T* out, const T* dout, const T* in, int rows,
                                        int ffn) {
  constexpr int V = Pack16<T>::kN;
  size_t i = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) * V;
  if (i >= static_cast<size_t>(rows) * ffn) return;
  size_t r = i / ffn, c = i % ffn;
  Pack16<T> g = Load16(in + r * 2 * ffn + c), u = Load16(in + r * 2 * ffn + ffn + c);
  Pack16<T> d = Load16(dout + i), dg, du, o;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float gk = ToF(g.v[k]), uk = ToF(u.v[k]), dk = ToF(d.v[k]);
    float sg = Sigmoid(gk);
    dg.v[k] = FromF<T>(dk * uk * sg * (1.0f + gk * (1.0f - sg)));
    du.v[k] = FromF<T>(dk * gk * sg);
    o.v[k] = FromF<T>(gk * sg * uk);
  }
  Store16(din + r * 2 * ffn + c, dg);
  Store16(din + r * 2 * ffn + ffn + c, du);
  if (out) Store16(out + i, o);
}

}  // namespace

// ---- launchers

template <typename T>
Status GeluForward(T* out, const T* in, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  if (n % Pack16<T>::kN == 0 && Vectorizable<T>(0, out, in)) {
    GeluForwardVecKernel<T>
        <<<CeilDiv(n / Pack16<T>::kN, 256 * kGeluPacks), 256, 0, stream>>>(out, in, n);
  } else {
    GeluForwardKernel<T><<<CeilDiv(n, 256), 256, 0, stream>>>(out, in, n);
  }
  BM_LAUNCH_CHECK("GeluForwardKernel", "n={}", n);
  return Status::Ok();
}
template <typename T>
Status GeluBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  if (n % Pack16<T>::kN == 0 && Vectorizable<T>(0, din, dout) && Vectorizable<T>(0, in)) {
    GeluBackwardVecKernel<T><<<CeilDiv(n / Pack16<T>::kN, 256), 256, 0, stream>>>(din, dout, in, n);
  } else {
    GeluBackwardKernel<T><<<CeilDiv(n, 256), 256, 0, stream>>>(din, dout, in, n);
  }
  BM_LAUNCH_CHECK("GeluBackwardKernel", "n={}", n);
  return Status::Ok();
}
template <typename T>
Status SwigluForward(T* out, const T* in, int rows, int ffn, cudaStream_t stream) {
  size_t n = static_cast<size_t>(rows) * ffn;
  if (n == 0) return Status::Ok();
  if (Vectorizable<T>(ffn, out, in)) {
    SwigluForwardVecKernel<T>
        <<<CeilDiv(n / Pack16<T>::kN, 256), 256, 0, stream>>>(out, in, rows, ffn);
  } else {
    SwigluForwardKernel<T><<<CeilDiv(n, 256), 256, 0, stream>>>(out, in, rows, ffn);
  }
  BM_LAUNCH_CHECK("SwigluForwardKernel", "N={} F={}", rows, ffn);
  return Status::Ok();
}
template <typename T>
Status SwigluBackward(T* din, T* out, const T* dout, const T* in, int rows, int ffn,
                      cudaStream_t stream) {
  size_t n = static_cast<size_t>(rows) * ffn;
  if (n == 0) return Status::Ok();
  if (Vectorizable<T>(ffn, din, dout) && Vectorizable<T>(ffn, in, out)) {
    SwigluBackwardVecKernel<T>
        <<<CeilDiv(n / Pack16<T>::kN, 256), 256, 0, stream>>>(din, out, dout, in, rows, ffn);
  } else {
    SwigluBackwardKernel<T><<<CeilDiv(n, 256), 256, 0, stream>>>(din, out, dout, in, rows, ffn);
  }
  BM_LAUNCH_CHECK("SwigluBackwardKernel", "N={} F={}", rows, ffn);
  return Status::Ok();
}

template <typename T>
Status GeluErfForward(T* out, const T* in, size_t n, cudaStream_t stream) {
  return UnaryForward<GeluErfOp>(out, in, n, stream, "GeluErfForwardKernel");
}
template <typename T>
Status GeluErfBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream) {
  return UnaryBackward<GeluErfOp>(din, dout, in, n, stream, "GeluErfBackwardKernel");
}
template <typename T>
Status QuickGeluForward(T* out, const T* in, size_t n, cudaStream_t stream) {
  return UnaryForward<QuickGeluOp>(out, in, n, stream, "QuickGeluForwardKernel");
}
template <typename T>
Status QuickGeluBackward(T* din, const T* dout, const T* in, size_t n, cudaStream_t stream) {
  return UnaryBackward<QuickGeluOp>(din, dout, in, n, stream, "QuickGeluBackwardKernel");
}

#define BM_INSTANTIATE(T)                                                           \
  template Status GeluErfForward<T>(T*, const T*, size_t, cudaStream_t);            \
  template Status GeluErfBackward<T>(T*, const T*, const T*, size_t, cudaStream_t); \
  template Status QuickGeluForward<T>(T*, const T*, size_t, cudaStream_t);          \
  template Status QuickGeluBackward<T>(T*, const T*, const T*, size_t, cudaStream_t);
BM_INSTANTIATE(float)
BM_INSTANTIATE(bf16)
BM_INSTANTIATE(fp16)
#undef BM_INSTANTIATE

#define BM_INSTANTIATE(T)                                                        \
  template Status GeluForward<T>(T*, const T*, size_t, cudaStream_t);            \
  template Status GeluBackward<T>(T*, const T*, const T*, size_t, cudaStream_t); \
  template Status SwigluForward<T>(T*, const T*, int, int, cudaStream_t);        \
  template Status SwigluBackward<T>(T*, T*, const T*, const T*, int, int, cudaStream_t);
BM_INSTANTIATE(float)
BM_INSTANTIATE(bf16)
BM_INSTANTIATE(fp16)
#undef BM_INSTANTIATE

// ---- CPU twins

void GeluForwardCpu(float* out, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Gelu(in[i]);
}
void GeluBackwardCpu(float* din, const float* dout, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) din[i] = dout[i] * GeluGrad(in[i]);
}
void GeluErfForwardCpu(float* out, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = GeluErfOp::F(in[i]);
}
void GeluErfBackwardCpu(float* din, const float* dout, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) din[i] = dout[i] * GeluErfOp::D(in[i]);
}
void QuickGeluForwardCpu(float* out, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = QuickGeluOp::F(in[i]);
}
void QuickGeluBackwardCpu(float* din, const float* dout, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) din[i] = dout[i] * QuickGeluOp::D(in[i]);
}
void SwigluForwardCpu(float* out, const float* in, int rows, int ffn) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < ffn; ++c) {
      float g = in[static_cast<size_t>(r) * 2 * ffn + c];
      float u = in[static_cast<size_t>(r) * 2 * ffn + ffn + c];
      out[static_cast<size_t>(r) * ffn + c] = g * Sigmoid(g) * u;
    }
  }
}
void SwigluBackwardCpu(float* din, const float* dout, const float* in, int rows, int ffn) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < ffn; ++c) {
      size_t gi = static_cast<size_t>(r) * 2 * ffn + c, ui = gi + ffn;
      float g = in[gi], u = in[ui], d = dout[static_cast<size_t>(r) * ffn + c];
      float s = Sigmoid(g);
      din[gi] = d * u * s * (1.0f + g * (1.0f - s));
      din[ui] = d * g * s;
    }
  }
}

}  // namespace bm::train::cuda
