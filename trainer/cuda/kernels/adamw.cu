#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/kernels/common.cuh"

namespace bm::train::cuda {
namespace {

// ---- kernels

__global__ void SumSquaresPartialKernel(float* partials, const float* g, size_t n) {
  __shared__ float shared[32];
  float acc = 0.0f;
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    acc += g[i] * g[i];
  }
  float total = BlockSum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__global__ void SumSquaresFinishKernel(float* out, const float* partials, int count) {
  __shared__ float shared[32];
  float acc = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  float total = BlockSum(acc, shared);
  if (threadIdx.x == 0) out[0] = total;
}

__global__ void AdamWKernel(float* params, bf16* lowp, float* m, float* v, const float* grads,
                            const float* sumsq, float lr, float beta1, float beta2, float eps,
                            float wd, float bc1, float bc2_sqrt, float max_norm, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float clip = 1.0f;
  if (sumsq && max_norm > 0.0f) {
    float norm = sqrtf(sumsq[0]);
    if (norm > max_norm) clip = max_norm / (norm + 1e-6f);
  }
  float g = grads[i] * clip;
  float p = params[i] * (1.0f - lr * wd);
  float mi = beta1 * m[i] + (1.0f - beta1) * g;
  float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
  p -= (lr / bc1) * mi / (sqrtf(vi) / bc2_sqrt + eps);
  m[i] = mi;
  v[i] = vi;
  params[i] = p;
  if (lowp) lowp[i] = __float2bfloat16_rn(p);
}

}  // namespace

// ---- launchers

Status GradSumSquares(float* out, float* scratch, const float* grads, size_t n,
                      cudaStream_t stream) {
  SumSquaresPartialKernel<<<kGradNormBlocks, 512, 0, stream>>>(scratch, grads, n);
  BM_LAUNCH_CHECK("SumSquaresPartialKernel", "n={}", n);
  SumSquaresFinishKernel<<<1, 1024, 0, stream>>>(out, scratch, kGradNormBlocks);
  BM_LAUNCH_CHECK("SumSquaresFinishKernel", "n={}", n);
  return Status::Ok();
}

Status AdamWUpdate(float* params, bf16* params_lowp, float* m, float* v, const float* grads,
                   const float* sumsq, const AdamWHyper& h, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  float bc1 = 1.0f - std::pow(h.beta1, static_cast<float>(h.step));
  float bc2_sqrt = std::sqrt(1.0f - std::pow(h.beta2, static_cast<float>(h.step)));
  AdamWKernel<<<CeilDiv(n, 256), 256, 0, stream>>>(params, params_lowp, m, v, grads, sumsq, h.lr,
                                                   h.beta1, h.beta2, h.eps, h.weight_decay, bc1,
                                                   bc2_sqrt, h.max_norm, n);
  BM_LAUNCH_CHECK("AdamWKernel", "n={}", n);
  return Status::Ok();
}

// ---- CPU twins

double GradSumSquaresCpu(const float* grads, size_t n) {
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) acc += static_cast<double>(grads[i]) * grads[i];
  return acc;
}

void AdamWUpdateCpu(float* params, float* m, float* v, const float* grads, double sumsq,
                    const AdamWHyper& h, size_t n) {
  float clip = 1.0f;
  float norm = static_cast<float>(std::sqrt(sumsq));
  if (h.max_norm > 0.0f && norm > h.max_norm) clip = h.max_norm / (norm + 1e-6f);
  float bc1 = 1.0f - std::pow(h.beta1, static_cast<float>(h.step));
  float bc2_sqrt = std::sqrt(1.0f - std::pow(h.beta2, static_cast<float>(h.step)));
  for (size_t i = 0; i < n; ++i) {
    float g = grads[i] * clip;
    float p = params[i] * (1.0f - h.lr * h.weight_decay);
    m[i] = h.beta1 * m[i] + (1.0f - h.beta1) * g;
    v[i] = h.beta2 * v[i] + (1.0f - h.beta2) * g * g;
    params[i] = p - (h.lr / bc1) * m[i] / (std::sqrt(v[i]) / bc2_sqrt + h.eps);
  }
}

}  // namespace bm::train::cuda
