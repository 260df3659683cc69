#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/classifier.cuh"
#include "trainer/cuda/kernels/common.cuh"

namespace bm::train::cuda {
namespace {

constexpr int kThreads = 512;
// The single-rank loss: a row's second pass (the gradient, in place) must find the row in L2.
// At 512 threads a row, 4 rows an SM are in flight: 528 rows of GPT-2's 100 KB on 132 SMs, more
// than the 50 MB L2, so the second pass read HBM again (run 38: 0.6 ms a chunk of 8192 rows,
// three passes' bytes). 1024 threads keep the loads in flight an SM and halve the rows.
constexpr int kLossThreads = 1024;

// The loss and its gradient take e^(x - c) as 2^(x log2 e - c log2 e): one fused multiply-add
// and the hardware's ex2.approx (relative error ~2^-22), where expf's range reduction costs
// about twice the instructions. A row's two passes then wait on memory, not on arithmetic
// (run 38: the pass was at 2.5 TB/s with expf). Used by the single-rank kernels; the
// vocabulary-parallel ones keep expf.
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float Exp2Approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// e^(a - b), exactly (expf) or as 2^(a log2 e - b log2 e) by one fused multiply-add and
// Exp2Approx.
struct ExpExact {
  __device__ static float Diff(float a, float b) { return expf(a - b); }
};
struct ExpFast {
  __device__ static float Diff(float a, float b) {
    return Exp2Approx(fmaf(a, kLog2e, -b * kLog2e));
  }
};

// ---- kernels: one block per row; online max/sum in one pass, then the gradient pass.

// Over x[0, n): {the maximum (-inf for n = 0), Σ e^(x - maximum)} by Exp, in one pass (online),
// on every thread of the block; fixed order.
template <typename Exp, typename T>
__device__ float2 BlockMaxSumExp(const T* x, int n, float* shared) {
  float m = -INFINITY, s = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = ToF(x[i]);
    if (v > m) {
      s = s * Exp::Diff(m, v) + 1.0f;
      m = v;
    } else {
      s += Exp::Diff(v, m);
    }
  }
  float block_max = BlockMax(m, shared);
  float scaled = m == -INFINITY ? 0.0f : s * Exp::Diff(m, block_max);
  return make_float2(block_max, BlockSum(scaled, shared));
}

template <typename T>
__global__ void CrossEntropyKernel(T* logits, float* losses, const int* targets,
                                   const float* weights, float grad_scale, int vocab, int ld,
                                   bool write_grad) {
  __shared__ float shared[32];
  int row = blockIdx.x;
  T* x = logits + static_cast<size_t>(row) * ld;
  int target = targets[row];
  float weight = target < 0 ? 0.0f : (weights ? weights[row] : 1.0f);
  const float2 max_sum = BlockMaxSumExp<ExpFast>(x, vocab, shared);
  float lse = max_sum.x + logf(max_sum.y);
  if (threadIdx.x == 0) {
    losses[row] = weight == 0.0f ? 0.0f : weight * (lse - ToF(x[target]));
  }
  if (!write_grad) return;
  __syncthreads();  // everyone has read x[target] before it is overwritten
  float scale = grad_scale * weight, lse2 = lse * kLog2e;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    float p = Exp2Approx(fmaf(ToF(x[i]), kLog2e, -lse2));
    float g = scale * (p - (i == target ? 1.0f : 0.0f));
    x[i] = FromF<T>(g);
  }
}

// The same with 16-byte accesses (V and ld multiples of 16 / sizeof(T)).
template <typename T>
__global__ void CrossEntropyVecKernel(T* logits, float* losses, const int* targets,
                                      const float* weights, float grad_scale, int vocab, int ld,
                                      bool write_grad) {
  constexpr int V = Pack16<T>::kN;
  __shared__ float shared[32];
  int row = blockIdx.x;
  T* x = logits + static_cast<size_t>(row) * ld;
  int target = targets[row];
  float weight = target < 0 ? 0.0f : (weights ? weights[row] : 1.0f);
  float m = -INFINITY, s = 0.0f;
  for (int i = threadIdx.x * V; i < vocab; i += blockDim.x * V) {
    Pack16<T> p = Load16(x + i);
    float mx = ToF(p.v[0]);
#pragma unroll
    for (int k = 1; k < V; ++k) mx = fmaxf(mx, ToF(p.v[k]));
    if (mx > m) {
      s *= Exp2Approx((m - mx) * kLog2e);
      m = mx;
    }
    const float m2 = m * kLog2e;
#pragma unroll
    for (int k = 0; k < V; ++k) s += Exp2Approx(fmaf(ToF(p.v[k]), kLog2e, -m2));
  }
  float block_max = BlockMax(m, shared);
  float scaled = m == -INFINITY ? 0.0f : s * Exp2Approx((m - block_max) * kLog2e);
  float block_sum = BlockSum(scaled, shared);
  float lse = block_max + logf(block_sum);
  if (threadIdx.x == 0) {
    losses[row] = weight == 0.0f ? 0.0f : weight * (lse - ToF(x[target]));
  }
  if (!write_grad) return;
  __syncthreads();
  float scale = grad_scale * weight, lse2 = lse * kLog2e;
  for (int i = threadIdx.x * V; i < vocab; i += blockDim.x * V) {
    Pack16<T> p = Load16(x + i);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float e = Exp2Approx(fmaf(ToF(p.v[k]), kLog2e, -lse2));
      float g = scale * (e - (i + k == target ? 1.0f : 0.0f));
      p.v[k] = FromF<T>(g);
    }
    Store16(x + i, p);
  }
}

template <typename T>
__global__ void VocabParallelStatsKernel(float* stats, const T* logits, const int* targets, int n,
                                         int real, int ld, int vocab_begin) {
  __shared__ float shared[32];
  int row = blockIdx.x;
  const T* x = logits + static_cast<size_t>(row) * ld;
  const float2 max_sum = BlockMaxSumExp<ExpExact>(x, real, shared);
  if (threadIdx.x == 0) {
    int local = targets[row] < 0 ? -1 : targets[row] - vocab_begin;
    stats[row] = max_sum.x;
    stats[n + row] = max_sum.x;
    stats[2 * n + row] = max_sum.y;
    stats[3 * n + row] = local >= 0 && local < real ? ToF(x[local]) : 0.0f;
  }
}

__global__ void VocabParallelRescaleKernel(float* stats, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float local = stats[i];
  stats[2 * n + i] = local == -INFINITY ? 0.0f : stats[2 * n + i] * expf(local - stats[n + i]);
}

template <typename T>
__global__ void VocabParallelFinishKernel(T* logits, float* losses, const float* stats,
                                          const int* targets, const float* weights,
                                          float grad_scale, int n, int real, int ld,
                                          int vocab_begin, bool write_grad) {
  int row = blockIdx.x;
  T* x = logits + static_cast<size_t>(row) * ld;
  int target = targets[row];
  float weight = target < 0 ? 0.0f : (weights ? weights[row] : 1.0f);
  float lse = stats[n + row] + logf(stats[2 * n + row]);
  if (threadIdx.x == 0) losses[row] = weight == 0.0f ? 0.0f : weight * (lse - stats[3 * n + row]);
  if (!write_grad) return;
  float scale = grad_scale * weight;
  int local = target < 0 ? -1 : target - vocab_begin;
  for (int i = threadIdx.x; i < ld; i += blockDim.x) {
    float g = i < real ? scale * (expf(ToF(x[i]) - lse) - (i == local ? 1.0f : 0.0f)) : 0.0f;
    x[i] = FromF<T>(g);
  }
}

__global__ void SumLossesKernel(float* out, const float* losses, int n) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += losses[i];
  float total = BlockSum(acc, shared);
  if (threadIdx.x == 0) out[0] = total;
}

template <typename T>
__global__ void ArgmaxKernel(int* argmax, const T* logits, int vocab, int ld) {
  __shared__ float sv[1024];
  __shared__ int si[1024];
  const T* x = logits + static_cast<size_t>(blockIdx.x) * ld;
  float best = -INFINITY;
  int idx = vocab;
  for (int i = threadIdx.x; i < vocab; i += blockDim.x) {
    float v = ToF(x[i]);
    if (v > best) best = v, idx = i;  // increasing i per thread: first max kept
  }
  sv[threadIdx.x] = best;
  si[threadIdx.x] = idx;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      float ov = sv[threadIdx.x + s];
      int oi = si[threadIdx.x + s];
      if (ov > sv[threadIdx.x] || (ov == sv[threadIdx.x] && oi < si[threadIdx.x])) {
        sv[threadIdx.x] = ov;
        si[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) argmax[blockIdx.x] = si[0] < vocab ? si[0] : 0;
}

}  // namespace

// ---- launchers

template <typename T>
Status ArgmaxRows(int* argmax, const T* logits, int n, int vocab, int ld, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  ArgmaxKernel<T><<<n, 512, 0, stream>>>(argmax, logits, vocab, ld);
  BM_LAUNCH_CHECK("ArgmaxKernel", "N={} V={}", n, vocab);
  return Status::Ok();
}
template Status ArgmaxRows<float>(int*, const float*, int, int, int, cudaStream_t);
template Status ArgmaxRows<bf16>(int*, const bf16*, int, int, int, cudaStream_t);
template Status ArgmaxRows<fp16>(int*, const fp16*, int, int, int, cudaStream_t);

void ArgmaxRowsCpu(int* argmax, const float* logits, int n, int vocab, int ld) {
  for (int r = 0; r < n; ++r) {
    const float* x = logits + static_cast<size_t>(r) * ld;
    int best = 0;
    for (int i = 1; i < vocab; ++i) {
      if (x[i] > x[best]) best = i;
    }
    argmax[r] = best;
  }
}

template <typename T>
Status CrossEntropy(T* logits, float* losses, const int* targets, const float* weights,
                    float grad_scale, int n, int vocab, int ld, bool write_grad,
                    cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  if (Vectorizable<T>(vocab, logits) && ld % Pack16<T>::kN == 0) {
    CrossEntropyVecKernel<T><<<n, kLossThreads, 0, stream>>>(logits, losses, targets, weights,
                                                             grad_scale, vocab, ld, write_grad);
  } else {
    CrossEntropyKernel<T><<<n, kLossThreads, 0, stream>>>(logits, losses, targets, weights,
                                                          grad_scale, vocab, ld, write_grad);
  }
  BM_LAUNCH_CHECK("CrossEntropyKernel", "N={} V={} ld={}", n, vocab, ld);
  return Status::Ok();
}

template <typename T>
Status VocabParallelStats(float* stats, const T* logits, const int* targets, int n, int real,
                          int ld, int vocab_begin, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  VocabParallelStatsKernel<T>
      <<<n, kThreads, 0, stream>>>(stats, logits, targets, n, real, ld, vocab_begin);
  BM_LAUNCH_CHECK("VocabParallelStatsKernel", "N={} real={} ld={}", n, real, ld);
  return Status::Ok();
}

Status VocabParallelRescale(float* stats, int n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  VocabParallelRescaleKernel<<<CeilDiv(n, 256), 256, 0, stream>>>(stats, n);
  BM_LAUNCH_CHECK("VocabParallelRescaleKernel", "N={}", n);
  return Status::Ok();
}

template <typename T>
Status VocabParallelFinish(T* logits, float* losses, const float* stats, const int* targets,
                           const float* weights, float grad_scale, int n, int real, int ld,
                           int vocab_begin, bool write_grad, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  VocabParallelFinishKernel<T><<<n, kThreads, 0, stream>>>(
      logits, losses, stats, targets, weights, grad_scale, n, real, ld, vocab_begin, write_grad);
  BM_LAUNCH_CHECK("VocabParallelFinishKernel", "N={} real={} ld={}", n, real, ld);
  return Status::Ok();
}

#define BM_VOCAB_PARALLEL(T)                                                                 \
  template Status VocabParallelStats<T>(float*, const T*, const int*, int, int, int, int,    \
                                        cudaStream_t);                                       \
  template Status VocabParallelFinish<T>(T*, float*, const float*, const int*, const float*, \
                                         float, int, int, int, int, bool, cudaStream_t);
BM_VOCAB_PARALLEL(float)
BM_VOCAB_PARALLEL(bf16)
BM_VOCAB_PARALLEL(fp16)
#undef BM_VOCAB_PARALLEL

Status SumLosses(float* out, const float* losses, int n, cudaStream_t stream) {
  SumLossesKernel<<<1, 1024, 0, stream>>>(out, losses, n);
  BM_LAUNCH_CHECK("SumLossesKernel", "n={}", n);
  return Status::Ok();
}

template Status CrossEntropy<float>(float*, float*, const int*, const float*, float, int, int, int,
                                    bool, cudaStream_t);
template Status CrossEntropy<bf16>(bf16*, float*, const int*, const float*, float, int, int, int,
                                   bool, cudaStream_t);
template Status CrossEntropy<fp16>(fp16*, float*, const int*, const float*, float, int, int, int,
                                   bool, cudaStream_t);

// ---- CPU twin

void CrossEntropyCpu(float* logits, float* losses, const int* targets, const float* weights,
                     float grad_scale, int n, int vocab, int ld, bool write_grad) {
  for (int r = 0; r < n; ++r) {
    float* x = logits + static_cast<size_t>(r) * ld;
    int target = targets[r];
    float weight = target < 0 ? 0.0f : (weights ? weights[r] : 1.0f);
    double m = -INFINITY;
    for (int i = 0; i < vocab; ++i) m = std::fmax(m, x[i]);
    double s = 0.0;
    for (int i = 0; i < vocab; ++i) s += std::exp(x[i] - m);
    double lse = m + std::log(s);
    losses[r] = weight == 0.0f ? 0.0f : static_cast<float>(weight * (lse - x[target]));
    if (!write_grad) continue;
    for (int i = 0; i < vocab; ++i) {
      double p = std::exp(x[i] - lse);
      x[i] = static_cast<float>(grad_scale * weight * (p - (i == target ? 1.0 : 0.0)));
    }
  }
}

void VocabParallelStatsCpu(float* stats, const float* logits, const int* targets, int n, int real,
                           int ld, int vocab_begin) {
  for (int r = 0; r < n; ++r) {
    const float* x = logits + static_cast<size_t>(r) * ld;
    double m = -INFINITY, s = 0.0;
    for (int i = 0; i < real; ++i) m = std::fmax(m, x[i]);
    for (int i = 0; i < real; ++i) s += std::exp(x[i] - m);
    const int local = targets[r] < 0 ? -1 : targets[r] - vocab_begin;
    stats[r] = stats[n + r] = static_cast<float>(m);
    stats[2 * n + r] = static_cast<float>(s);
    stats[3 * n + r] = local >= 0 && local < real ? x[local] : 0.0f;
  }
}

void VocabParallelRescaleCpu(float* stats, int n) {
  for (int i = 0; i < n; ++i) {
    const float local = stats[i];
    stats[2 * n + i] =
        local == -INFINITY
            ? 0.0f
            : static_cast<float>(stats[2 * n + i] * std::exp(double(local) - stats[n + i]));
  }
}

void VocabParallelFinishCpu(float* logits, float* losses, const float* stats, const int* targets,
                            const float* weights, float grad_scale, int n, int real, int ld,
                            int vocab_begin, bool write_grad) {
  for (int r = 0; r < n; ++r) {
    float* x = logits + static_cast<size_t>(r) * ld;
    const int target = targets[r];
    const float weight = target < 0 ? 0.0f : (weights ? weights[r] : 1.0f);
    const double lse = stats[n + r] + std::log(double(stats[2 * n + r]));
    losses[r] = weight == 0.0f ? 0.0f : static_cast<float>(weight * (lse - stats[3 * n + r]));
    if (!write_grad) continue;
    const int local = target < 0 ? -1 : target - vocab_begin;
    for (int i = 0; i < ld; ++i) {
      const double p = i < real ? std::exp(x[i] - lse) - (i == local ? 1.0 : 0.0) : 0.0;
      x[i] = static_cast<float>(grad_scale * weight * p);
    }
  }
}

}  // namespace bm::train::cuda
