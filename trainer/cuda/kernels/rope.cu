#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/rope.cuh"

namespace bm::train::cuda {
namespace {

// ---- kernels: one thread per (row, rotated head, pair).

template <typename T>
__global__ void RopeKernel(T* qkv, const float* table, int rows, int seq, int rot_heads,
                           int all_heads, int head_dim, float sign) {
  int half = head_dim / 2;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  size_t total = static_cast<size_t>(rows) * rot_heads * half;
  if (i >= total) return;
  int p = static_cast<int>(i % half);
  int h = static_cast<int>((i / half) % rot_heads);
  int row = static_cast<int>(i / (static_cast<size_t>(half) * rot_heads));
  int t = row % seq;
  float c = table[(static_cast<size_t>(t) * half + p) * 2];
  float s = sign * table[(static_cast<size_t>(t) * half + p) * 2 + 1];
  T* x = qkv + (static_cast<size_t>(row) * all_heads + h) * head_dim;
  float a = ToF(x[p]), b = ToF(x[p + half]);
  x[p] = FromF<T>(a * c - b * s);
  x[p + half] = FromF<T>(b * c + a * s);
}

// Vectorized: each thread rotates V = 16 / sizeof(T) consecutive pairs (head_dim / 2 a multiple
// of V).
template <typename T>
__global__ void RopeVecKernel(T* qkv, const float* table, int rows, int seq, int rot_heads,
                              int all_heads, int head_dim, float sign) {
  constexpr int V = Pack16<T>::kN;
  int half = head_dim / 2, groups = half / V;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  size_t total = static_cast<size_t>(rows) * rot_heads * groups;
  if (i >= total) return;
  int p0 = static_cast<int>(i % groups) * V;
  int h = static_cast<int>((i / groups) % rot_heads);
  int row = static_cast<int>(i / (static_cast<size_t>(groups) * rot_heads));
  int t = row % seq;
  T* x = qkv + (static_cast<size_t>(row) * all_heads + h) * head_dim;
  Pack16<T> a = Load16(x + p0), b = Load16(x + p0 + half);
  const float* cs = table + (static_cast<size_t>(t) * half + p0) * 2;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float c = cs[2 * k], s = sign * cs[2 * k + 1];
    float ak = ToF(a.v[k]), bk = ToF(b.v[k]);
    a.v[k] = FromF<T>(ak * c - bk * s);
    b.v[k] = FromF<T>(bk * c + ak * s);
  }
  Store16(x + p0, a);
  Store16(x + p0 + half, b);
}

}  // namespace

std::vector<float> RopeTable(int seq, int head_dim, double theta) {
  int half = head_dim / 2;
  std::vector<float> table(static_cast<size_t>(seq) * half * 2);
  for (int t = 0; t < seq; ++t) {
    for (int p = 0; p < half; ++p) {
      double inv = std::pow(theta, -2.0 * p / head_dim);
      double a = t * inv;
      table[(static_cast<size_t>(t) * half + p) * 2] = static_cast<float>(std::cos(a));
      table[(static_cast<size_t>(t) * half + p) * 2 + 1] = static_cast<float>(std::sin(a));
    }
  }
  return table;
}

// ---- launchers

template <typename T>
Status Rope(T* qkv, const float* table, int batch, int seq, int heads, int kv_heads, int head_dim,
            bool inverse, cudaStream_t stream) {
  int rows = batch * seq;
  size_t total = static_cast<size_t>(rows) * (heads + kv_heads) * (head_dim / 2);
  if (total == 0) return Status::Ok();
  if ((head_dim / 2) % Pack16<T>::kN == 0 && Vectorizable<T>(0, qkv)) {
    RopeVecKernel<T><<<CeilDiv(total / Pack16<T>::kN, 256), 256, 0, stream>>>(
        qkv, table, rows, seq, heads + kv_heads, heads + 2 * kv_heads, head_dim,
        inverse ? -1.0f : 1.0f);
  } else {
    RopeKernel<T><<<CeilDiv(total, 256), 256, 0, stream>>>(qkv, table, rows, seq, heads + kv_heads,
                                                           heads + 2 * kv_heads, head_dim,
                                                           inverse ? -1.0f : 1.0f);
  }
  BM_LAUNCH_CHECK("RopeKernel", "B={} T={} H={} Hkv={} D={}", batch, seq, heads, kv_heads,
                  head_dim);
  return Status::Ok();
}

template Status Rope<float>(float*, const float*, int, int, int, int, int, bool, cudaStream_t);
template Status Rope<bf16>(bf16*, const float*, int, int, int, int, int, bool, cudaStream_t);
template Status Rope<fp16>(fp16*, const float*, int, int, int, int, int, bool, cudaStream_t);

// ---- CPU twin

void RopeCpu(float* qkv, const float* table, int batch, int seq, int heads, int kv_heads,
             int head_dim, bool inverse) {
  int half = head_dim / 2, all = heads + 2 * kv_heads;
  for (int row = 0; row < batch * seq; ++row) {
    int t = row % seq;
    for (int h = 0; h < heads + kv_heads; ++h) {
      float* x = qkv + (static_cast<size_t>(row) * all + h) * head_dim;
      for (int p = 0; p < half; ++p) {
        float c = table[(static_cast<size_t>(t) * half + p) * 2];
        float s = table[(static_cast<size_t>(t) * half + p) * 2 + 1] * (inverse ? -1.0f : 1.0f);
        float a = x[p], b = x[p + half];
        x[p] = a * c - b * s;
        x[p + half] = b * c + a * s;
      }
    }
  }
}

}  // namespace bm::train::cuda
