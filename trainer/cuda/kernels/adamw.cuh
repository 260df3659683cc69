// AdamW over fp32 master weights with global-norm gradient clipping, as PyTorch's
// torch.optim.AdamW and clip_grad_norm_ compute them (after GradScaler's unscale_ with fp16):
//   s = grad_scale (1 / the loss scale; 1 without one)
//   norm = sqrt(sumsq) * s;  clip = norm > max_norm ? max_norm / (norm + 1e-6) : 1
//   (clip = 1 if max_norm <= 0);  g = grad * (clip * s)
//   p = p * (1 - lr * wd);  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p = p - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// and, when a low-precision copy is given, p_lowp = (L) p, L = bf16 or fp16 (bf16 rounded to
// nearest with ties away from zero: kernels/split_master.h).
//
// GradSumSquares: out[0] = sum of grads[i]^2 over all n, in two fixed-order stages (deterministic);
// scratch holds kGradNormBlocks floats. The clip factor is read on the device, so the update
// needs no host round trip.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "base/result.h"

namespace bm::train::cuda {

constexpr int kGradNormBlocks = 1024;
// A unit's share of the norm: its partial sums of squares (kernels/residual.cuh's
// WidenF32Squares).
constexpr int kUnitSquareBlocks = 512;
// A weight-decay mask's granularity (ParamLayout starts every tensor at a multiple of it).
constexpr size_t kDecayChunk = 64;

struct AdamWHyper {
  float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  int step = 1;  // 1-based, for the bias corrections
  float max_norm = 1.0f;
  float grad_scale = 1.0f;  // the gradients as accumulated times this are the true ones
};

// ---- launchers
Status GradSumSquares(float* out, float* scratch, const float* grads, size_t n,
                      cudaStream_t stream);
// out[0] = the sum of `count` partial sums of squares (GradSumSquares' second stage alone; e.g.
// WidenF32Squares' partials, written as the gradients were reduced), in a fixed order.
Status SumSquarePartials(float* out, const float* partials, int count, cudaStream_t stream);
// sumsq: device pointer to the global sum of squares (from GradSumSquares), or null.
// L = __nv_bfloat16 or __half; params_lowp may be null (fp32 mode). G: the gradients' type,
// float, or __nv_bfloat16 (sums kept in bf16, widened as they are read: the same update as from
// their fp32 widening). decay_mask (device): bit c
// of word c / 32 set where elements [c kDecayChunk, (c + 1) kDecayChunk) of the arrays are
// decayed (h.weight_decay), clear where not (0); null: h.weight_decay everywhere. With it, one
// launch covers a whole layout of decayed matrices and undecayed vectors.
template <typename L, typename G>
Status AdamWUpdate(float* params, L* params_lowp, float* m, float* v, const G* grads,
                   const float* sumsq, const AdamWHyper& h, size_t n, cudaStream_t stream,
                   const uint32_t* decay_mask = nullptr);

// The masters' bf16 working copy (hi) and, when lo is given, their low halves
// (kernels/split_master.h).
Status SplitMasters(uint16_t* hi, uint16_t* lo, const float* params, size_t n, cudaStream_t stream);
// The fp32 masters back from their halves (what GetParameters gathers at ZeRO >= 1).
Status JoinMasters(float* params, const uint16_t* hi, const uint16_t* lo, size_t n,
                   cudaStream_t stream);
// AdamW over split masters (RunSpec::split_masters): each fp32 master rebuilt exactly from its
// bf16 working copy `hi` and low half `lo`, updated as AdamWUpdate does, and split back
// (G: float or __nv_bfloat16, as there).
template <typename G>
Status AdamWSplitUpdate(uint16_t* hi, uint16_t* lo, float* m, float* v, const G* grads,
                        const float* sumsq, const AdamWHyper& h, size_t n, cudaStream_t stream,
                        const uint32_t* decay_mask = nullptr);

// ---- CPU twins
double GradSumSquaresCpu(const float* grads, size_t n);
void AdamWUpdateCpu(float* params, float* m, float* v, const float* grads, double sumsq,
                    const AdamWHyper& h, size_t n);

}  // namespace bm::train::cuda
