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
//
// Vocabulary-parallel cross-entropy (tensor parallelism, Megatron's): a TP rank holds the
// logits of its share of the vocabulary, [N, ld] whose first `real` columns are the ids
// vocab_begin.. and the rest padding (ignored, their gradient 0). No rank sees a whole row;
// three launches around two all-reduces over the TP group give every rank the losses
// CrossEntropy would give on the whole row. `stats` is [4, N] fp32:
//   VocabParallelStats: stats[0] = the local row maximum (-inf without real columns),
//     stats[1] = the same (to be all-reduced with max), stats[2] = Σ exp(x - local max),
//     stats[3] = the target's logit when the target is one of this rank's ids, else 0
//   the caller all-reduces stats[1] (max): the row's maximum M
//   VocabParallelRescale: stats[2] *= exp(stats[0] - M), relative to M
//   the caller all-reduces stats[2..3] (sum, 2N contiguous floats): Σ exp(x - M) over the whole
//     row and the target's logit
//   VocabParallelFinish: losses as CrossEntropy's with lse = M + log(stats[2]); with write_grad
//     this rank's dlogits in place (the real columns of CrossEntropy's gradient, padding 0).
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
template <typename T>
Status VocabParallelStats(float* stats, const T* logits, const int* targets, int n, int real,
                          int ld, int vocab_begin, cudaStream_t stream);
Status VocabParallelRescale(float* stats, int n, cudaStream_t stream);
template <typename T>
Status VocabParallelFinish(T* logits, float* losses, const float* stats, const int* targets,
                           const float* weights, float grad_scale, int n, int real, int ld,
                           int vocab_begin, bool write_grad, cudaStream_t stream);
// argmax[r] = the index of the largest of logits[r, 0..V) (the lowest index on ties).
template <typename T>
Status ArgmaxRows(int* argmax, const T* logits, int n, int vocab, int ld, cudaStream_t stream);

// ---- CPU twin (fp32)
void CrossEntropyCpu(float* logits, float* losses, const int* targets, const float* weights,
                     float grad_scale, int n, int vocab, int ld, bool write_grad);
void ArgmaxRowsCpu(int* argmax, const float* logits, int n, int vocab, int ld);
void VocabParallelStatsCpu(float* stats, const float* logits, const int* targets, int n, int real,
                           int ld, int vocab_begin);
void VocabParallelRescaleCpu(float* stats, int n);
void VocabParallelFinishCpu(float* logits, float* losses, const float* stats, const int* targets,
                            const float* weights, float grad_scale, int n, int real, int ld,
                            int vocab_begin, bool write_grad);

}  // namespace bm::train::cuda
