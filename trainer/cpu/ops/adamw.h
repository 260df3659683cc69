// AdamW (decoupled weight decay, Loshchilov & Hutter), fp32 state, and the
// global gradient norm used for clipping.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// One update of n parameters at step t (1-based):
//   g = grads * grad_scale        (grad_scale: clipping factor times 1 / the loss scale)
//   m = beta1 m + (1 - beta1) g
//   v = beta2 v + (1 - beta2) g²
//   params -= lr * ( (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + weight_decay * params
//   )
void AdamWUpdate(float* params, const float* grads, float* m, float* v, int64_t n, float lr,
                 float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                 int64_t t);

// Σ x² accumulated in double, in fixed blocks summed in order: the same bits
// for any thread count.
double SumOfSquares(const float* x, int64_t n);

// The clipping factor for a global norm: 1 when norm <= clip or clip <= 0,
// else clip / (norm + 1e-6).
float ClipScale(float norm, float clip);

}  // namespace bm::train::cpu
