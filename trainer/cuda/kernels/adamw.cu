#include <cmath>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/adamw.cuh"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/split_master.h"

namespace bm::train::cuda {
namespace {

// ---- kernels

// Each thread sums its elements (the grid's width apart) in order, four loads issued before
// their products are added: the same sums as one at a time, with four loads in flight.
__global__ void SumSquaresPartialKernel(float* partials, const float* g, size_t n) {
  __shared__ float shared[32];
  float acc = 0.0f;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const float a = g[i], b = g[i + stride], c = g[i + 2 * stride], d = g[i + 3 * stride];
    acc += a * a;
    acc += b * b;
    acc += c * c;
    acc += d * d;
  }
  for (; i < n; i += stride) acc += g[i] * g[i];
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

struct AdamWArgs {
  float lr, beta1, beta2, eps, wd, bc1, bc2_sqrt, max_norm, grad_scale;
};

// What the accumulated gradients are multiplied by: grad_scale (1 / the loss scale), and the
// clipping factor of the norm of the gradients so scaled. grad_scale = 1 gives the bits of a
// plain clip.
__device__ inline float GradFactor(const float* sumsq, const AdamWArgs& a) {
  if (!sumsq || a.max_norm <= 0.0f) return a.grad_scale;
  float norm = sqrtf(sumsq[0]) * a.grad_scale;
  return (norm > a.max_norm ? a.max_norm / (norm + 1e-6f) : 1.0f) * a.grad_scale;
}

// The weight decay of element i: a.wd where decay_mask (one bit per kDecayChunk elements) has
// its chunk's bit, else 0; a.wd everywhere without a mask.
__device__ __forceinline__ float DecayOf(const uint32_t* decay_mask, size_t i, float wd) {
  if (!decay_mask) return wd;
  const size_t chunk = i / kDecayChunk;
  return (decay_mask[chunk / 32] >> (chunk % 32)) & 1u ? wd : 0.0f;
}

// One element's update (both kernels: the same arithmetic, the same bits).
__device__ inline void AdamWOne(float& p, float& m, float& v, float grad, float clip,
                                const AdamWArgs& a, float wd) {
  float g = grad * clip;
  float q = p * (1.0f - a.lr * wd);
  float mi = a.beta1 * m + (1.0f - a.beta1) * g;
  float vi = a.beta2 * v + (1.0f - a.beta2) * g * g;
  q -= (a.lr / a.bc1) * mi / (sqrtf(vi) / a.bc2_sqrt + a.eps);
  m = mi;
  v = vi;
  p = q;
}

// The working copy of an updated master: bf16 as split_master.h rounds it.
template <typename L>
__device__ __forceinline__ L ToWork(float p) {
  return FromF<L>(p);
}
template <>
__device__ __forceinline__ bf16 ToWork<bf16>(float p) {
  return __ushort_as_bfloat16(MasterHigh(FloatBits(p)));
}

// Four gradients as floats (fp32: one 16-byte load; bf16, the sums kept in 16 bits: 8 bytes).
__device__ __forceinline__ float4 Grads4(const float* g, size_t i4) {
  return reinterpret_cast<const float4*>(g)[i4];
}
__device__ __forceinline__ float4 Grads4(const bf16* g, size_t i4) {
  const Four<bf16> x = Load4(g + 4 * i4);
  return make_float4(ToF(x.v[0]), ToF(x.v[1]), ToF(x.v[2]), ToF(x.v[3]));
}

template <typename L, typename G>
__global__ void AdamWKernel(float* params, L* lowp, float* m, float* v, const G* grads,
                            const float* sumsq, AdamWArgs a, const uint32_t* decay_mask, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float p = params[i], mi = m[i], vi = v[i];
  AdamWOne(p, mi, vi, ToF(grads[i]), GradFactor(sumsq, a), a, DecayOf(decay_mask, i, a.wd));
  m[i] = mi;
  v[i] = vi;
  params[i] = p;
  if (lowp) lowp[i] = ToWork<L>(p);
}

// Four low-precision elements: one 8-byte store.
template <typename L>
struct alignas(8) Lowp4 {
  L v[4];
};

// Four elements per thread with 16-byte loads and stores (n4 = n / 4; 16-byte aligned arrays).
template <typename L, typename G>
__global__ void AdamWVec4Kernel(float* params, L* lowp, float* m, float* v, const G* grads,
                                const float* sumsq, AdamWArgs a, const uint32_t* decay_mask,
                                size_t n4) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  float clip = GradFactor(sumsq, a);
  const float wd = DecayOf(decay_mask, 4 * i, a.wd);  // the four share a chunk
  float4 p = reinterpret_cast<float4*>(params)[i], mi = reinterpret_cast<float4*>(m)[i];
  float4 vi = reinterpret_cast<float4*>(v)[i];
  const float4 g = Grads4(grads, i);
  AdamWOne(p.x, mi.x, vi.x, g.x, clip, a, wd);
  AdamWOne(p.y, mi.y, vi.y, g.y, clip, a, wd);
  AdamWOne(p.z, mi.z, vi.z, g.z, clip, a, wd);
  AdamWOne(p.w, mi.w, vi.w, g.w, clip, a, wd);
  reinterpret_cast<float4*>(params)[i] = p;
  reinterpret_cast<float4*>(m)[i] = mi;
  reinterpret_cast<float4*>(v)[i] = vi;
  if (lowp) {
    reinterpret_cast<Lowp4<L>*>(lowp)[i] =
        Lowp4<L>{{ToWork<L>(p.x), ToWork<L>(p.y), ToWork<L>(p.z), ToWork<L>(p.w)}};
  }
}

// Split masters: the fp32 value rebuilt from its halves, updated, split back.
__device__ __forceinline__ void AdamWSplitOne(uint16_t& hi, uint16_t& lo, float& m, float& v,
                                              float grad, float clip, const AdamWArgs& a,
                                              float wd) {
  float p = BitsFloat(JoinMaster(hi, lo));
  AdamWOne(p, m, v, grad, clip, a, wd);
  const uint32_t b = FloatBits(p);
  hi = MasterHigh(b);
  lo = MasterLow(b);
}

template <typename G>
__global__ void AdamWSplitKernel(uint16_t* hi, uint16_t* lo, float* m, float* v, const G* grads,
                                 const float* sumsq, AdamWArgs a, const uint32_t* decay_mask,
                                 size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  uint16_t h = hi[i], l = lo[i];
  float mi = m[i], vi = v[i];
  AdamWSplitOne(h, l, mi, vi, ToF(grads[i]), GradFactor(sumsq, a), a, DecayOf(decay_mask, i, a.wd));
  hi[i] = h, lo[i] = l, m[i] = mi, v[i] = vi;
}

struct alignas(8) Half4 {
  uint16_t v[4];
};

// Four elements per thread (n4 = n / 4; 16-byte aligned fp32 arrays, 8-byte aligned halves).
template <typename G>
__global__ void AdamWSplitVec4Kernel(uint16_t* hi, uint16_t* lo, float* m, float* v, const G* grads,
                                     const float* sumsq, AdamWArgs a, const uint32_t* decay_mask,
                                     size_t n4) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  const float clip = GradFactor(sumsq, a);
  const float wd = DecayOf(decay_mask, 4 * i, a.wd);  // the four share a chunk
  Half4 h = reinterpret_cast<Half4*>(hi)[i], l = reinterpret_cast<Half4*>(lo)[i];
  float4 mi = reinterpret_cast<float4*>(m)[i], vi = reinterpret_cast<float4*>(v)[i];
  const float4 g = Grads4(grads, i);
  AdamWSplitOne(h.v[0], l.v[0], mi.x, vi.x, g.x, clip, a, wd);
  AdamWSplitOne(h.v[1], l.v[1], mi.y, vi.y, g.y, clip, a, wd);
  AdamWSplitOne(h.v[2], l.v[2], mi.z, vi.z, g.z, clip, a, wd);
  AdamWSplitOne(h.v[3], l.v[3], mi.w, vi.w, g.w, clip, a, wd);
  reinterpret_cast<Half4*>(hi)[i] = h;
  reinterpret_cast<Half4*>(lo)[i] = l;
  reinterpret_cast<float4*>(m)[i] = mi;
  reinterpret_cast<float4*>(v)[i] = vi;
}

__global__ void SplitMastersKernel(uint16_t* __restrict__ hi, uint16_t* __restrict__ lo,
                                   const float* __restrict__ p, size_t n, bool four) {
  ForEachElement(
      n, four,
      [&](size_t i) {
        const Four<float> x = Load4(p + i);
        Four<uint16_t> h, l;
        for (int k = 0; k < 4; ++k) {
          const uint32_t b = FloatBits(x.v[k]);
          h.v[k] = MasterHigh(b);
          l.v[k] = MasterLow(b);
        }
        Store4(hi + i, h);
        if (lo) Store4(lo + i, l);
      },
      [&](size_t i) {
        const uint32_t b = FloatBits(p[i]);
        hi[i] = MasterHigh(b);
        if (lo) lo[i] = MasterLow(b);
      });
}

__global__ void JoinMastersKernel(float* __restrict__ p, const uint16_t* __restrict__ hi,
                                  const uint16_t* __restrict__ lo, size_t n, bool four) {
  ForEachElement(
      n, four,
      [&](size_t i) {
        const Four<uint16_t> h = Load4(hi + i), l = Load4(lo + i);
        Four<float> x;
        for (int k = 0; k < 4; ++k) x.v[k] = BitsFloat(JoinMaster(h.v[k], l.v[k]));
        Store4(p + i, x);
      },
      [&](size_t i) { p[i] = BitsFloat(JoinMaster(hi[i], lo[i])); });
}

}  // namespace

// ---- launchers

Status GradSumSquares(float* out, float* scratch, const float* grads, size_t n,
                      cudaStream_t stream) {
  SumSquaresPartialKernel<<<kGradNormBlocks, 512, 0, stream>>>(scratch, grads, n);
  BM_LAUNCH_CHECK("SumSquaresPartialKernel", "n={}", n);
  return SumSquarePartials(out, scratch, kGradNormBlocks, stream);
}

Status SumSquarePartials(float* out, const float* partials, int count, cudaStream_t stream) {
  SumSquaresFinishKernel<<<1, 1024, 0, stream>>>(out, partials, count);
  BM_LAUNCH_CHECK("SumSquaresFinishKernel", "count={}", count);
  return Status::Ok();
}

namespace {

AdamWArgs ArgsOf(const AdamWHyper& h) {
  return {h.lr,
          h.beta1,
          h.beta2,
          h.eps,
          h.weight_decay,
          1.0f - std::pow(h.beta1, static_cast<float>(h.step)),
          std::sqrt(1.0f - std::pow(h.beta2, static_cast<float>(h.step))),
          h.max_norm,
          h.grad_scale};
}

bool Aligned(const void* p, size_t bytes) {
  return (reinterpret_cast<size_t>(p) & (bytes - 1)) == 0;
}

}  // namespace

template <typename L, typename G>
Status AdamWUpdate(float* params, L* params_lowp, float* m, float* v, const G* grads,
                   const float* sumsq, const AdamWHyper& h, size_t n, cudaStream_t stream,
                   const uint32_t* decay_mask) {
  if (n == 0) return Status::Ok();
  const AdamWArgs a = ArgsOf(h);
  if (n % 4 == 0 && Aligned(params, 16) && Aligned(m, 16) && Aligned(v, 16) &&
      Aligned(grads, 4 * sizeof(G)) && Aligned(params_lowp, 8)) {
    AdamWVec4Kernel<<<CeilDiv(n / 4, 256), 256, 0, stream>>>(params, params_lowp, m, v, grads,
                                                             sumsq, a, decay_mask, n / 4);
  } else {
    AdamWKernel<<<CeilDiv(n, 256), 256, 0, stream>>>(params, params_lowp, m, v, grads, sumsq, a,
                                                     decay_mask, n);
  }
  BM_LAUNCH_CHECK("AdamWKernel", "n={}", n);
  return Status::Ok();
}

template Status AdamWUpdate<bf16, float>(float*, bf16*, float*, float*, const float*, const float*,
                                         const AdamWHyper&, size_t, cudaStream_t, const uint32_t*);
template Status AdamWUpdate<fp16, float>(float*, fp16*, float*, float*, const float*, const float*,
                                         const AdamWHyper&, size_t, cudaStream_t, const uint32_t*);
template Status AdamWUpdate<bf16, bf16>(float*, bf16*, float*, float*, const bf16*, const float*,
                                        const AdamWHyper&, size_t, cudaStream_t, const uint32_t*);
template Status AdamWUpdate<fp16, bf16>(float*, fp16*, float*, float*, const bf16*, const float*,
                                        const AdamWHyper&, size_t, cudaStream_t, const uint32_t*);

template <typename G>
Status AdamWSplitUpdate(uint16_t* hi, uint16_t* lo, float* m, float* v, const G* grads,
                        const float* sumsq, const AdamWHyper& h, size_t n, cudaStream_t stream,
                        const uint32_t* decay_mask) {
  if (n == 0) return Status::Ok();
  const AdamWArgs a = ArgsOf(h);
  if (n % 4 == 0 && Aligned(hi, 8) && Aligned(lo, 8) && Aligned(m, 16) && Aligned(v, 16) &&
      Aligned(grads, 4 * sizeof(G))) {
    AdamWSplitVec4Kernel<<<CeilDiv(n / 4, 256), 256, 0, stream>>>(hi, lo, m, v, grads, sumsq, a,
                                                                  decay_mask, n / 4);
  } else {
    AdamWSplitKernel<<<CeilDiv(n, 256), 256, 0, stream>>>(hi, lo, m, v, grads, sumsq, a, decay_mask,
                                                          n);
  }
  BM_LAUNCH_CHECK("AdamWSplitKernel", "n={}", n);
  return Status::Ok();
}

template Status AdamWSplitUpdate<float>(uint16_t*, uint16_t*, float*, float*, const float*,
                                        const float*, const AdamWHyper&, size_t, cudaStream_t,
                                        const uint32_t*);
template Status AdamWSplitUpdate<bf16>(uint16_t*, uint16_t*, float*, float*, const bf16*,
                                       const float*, const AdamWHyper&, size_t, cudaStream_t,
                                       const uint32_t*);

Status SplitMasters(uint16_t* hi, uint16_t* lo, const float* params, size_t n,
                    cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool four = FourAligned({hi, lo, params});
  SplitMastersKernel<<<ElementwiseBlocks(n, four), 256, 0, stream>>>(hi, lo, params, n, four);
  BM_LAUNCH_CHECK("SplitMastersKernel", "n={}", n);
  return Status::Ok();
}

Status JoinMasters(float* params, const uint16_t* hi, const uint16_t* lo, size_t n,
                   cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool four = FourAligned({params, hi, lo});
  JoinMastersKernel<<<ElementwiseBlocks(n, four), 256, 0, stream>>>(params, hi, lo, n, four);
  BM_LAUNCH_CHECK("JoinMastersKernel", "n={}", n);
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
  float norm = static_cast<float>(std::sqrt(sumsq)) * h.grad_scale;
  if (h.max_norm > 0.0f && norm > h.max_norm) clip = h.max_norm / (norm + 1e-6f);
  clip *= h.grad_scale;
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
