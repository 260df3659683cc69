// The classifier's loss: softmax cross-entropy over the vocabulary, and the
// argmax used by greedy decoding. The model runs it on chunks of rows so the
// full [B*T, V] logits never exist at once.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// For N rows of V logits: probs[N,V] = softmax(logits) (probs may alias logits),
// losses[N] = -log probs[n, targets[n]].
template <typename Float>
void CrossEntropyForward(Float* losses, Float* probs, const Float* logits, const int32_t* targets,
                         int64_t N, int64_t V);

// dlogits[N,V] = dlosses[n] * (probs[n,v] - [v == targets[n]]). WRITES dlogits
// (not +=), which may alias probs.
template <typename Float>
void CrossEntropyBackward(Float* dlogits, const Float* probs, const int32_t* targets,
                          const Float* dlosses, int64_t N, int64_t V);

// out[n] = the lowest index of the largest logit of row n.
template <typename Float>
void ArgmaxRows(int32_t* out, const Float* logits, int64_t N, int64_t V);

}  // namespace bm::train::cpu
