// The classifier's loss: softmax cross-entropy over rows of logits, fused with its gradient,
// with loss masks. The LM head's matmul produces the logits one chunk of rows at a time
// (CudaModel), so full logits for the whole batch never exist; this kernel turns a chunk's
// logits into per-row losses and, in place, into dlogits.
//
// logits [N, V] (leading dimension ld >= V); targets [N] (a negative target: row ignored);
// weights [N] fp32 loss-mask weights or null (all 1); losses [N] fp32, written:
//   losses[r] = weight[r] * (logsumexp(logits[r]) - logits[r, target[r]])   (0 if ignored)
// With write_grad, logits[r] is overwritten with
//   grad_scale * weight[r] * (softmax(logits[r]) - onehot(target[r]))       (0 if ignored)
// (grad_scale is typically 1 / number of unmasked tokens in the global batch.)
//
// SumLosses: out[0] = sum of losses[0..n) in a fixed order (one block), so reruns agree bitwise.
#pragma once

#include <cuda_runtime_api.h>

#include "base/result.h"

namespace bm::train::cuda {

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status CrossEntropy(T* logits, float* losses, const int* targets, const float* weights,
                    float grad_scale, int n, int vocab, int ld, bool write_grad,
                    cudaStream_t stream);
Status SumLosses(float* out, const float* losses, int n, cudaStream_t stream);
// argmax[r] = the index of the largest of logits[r, 0..V) (the lowest index on ties).
template <typename T>
Status ArgmaxRows(int* argmax, const T* logits, int n, int vocab, int ld, cudaStream_t stream);

// ---- CPU twin (fp32)
void CrossEntropyCpu(float* logits, float* losses, const int* targets, const float* weights,
                     float grad_scale, int n, int vocab, int ld, bool write_grad);
void ArgmaxRowsCpu(int* argmax, const float* logits, int n, int vocab, int ld);

}  // namespace bm::train::cuda
