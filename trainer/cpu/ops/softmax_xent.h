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

// dlogits[N,V] = dlosses[n] * (probs[n,v] - [v == targets[n] - v0]). WRITES dlogits
// (not +=), which may alias probs. v0: the first vocabulary id of these
// logits (vocabulary-parallel: a target outside [v0, v0 + V) is another rank's).
template <typename Float>
void CrossEntropyBackward(Float* dlogits, const Float* probs, const int32_t* targets,
                          const Float* dlosses, int64_t N, int64_t V, int64_t v0 = 0);

// Vocabulary-parallel cross-entropy (Megatron-LM's): each tensor-parallel rank
// holds the logits of the ids [v0, v0 + V) and no rank the whole row. Between
// the three steps the caller all-reduces over the ranks what the step made:
//   1. RowMax: maxes[n] = max_v logits[n,v]                   -> all-reduce max
//   2. ShiftedExp: probs[n,v] = exp(logits[n,v] - maxes[n]) (probs may alias
//      logits); sums[n] = Σ_v probs[n,v]; target_logits[n] = logits[n,
//      targets[n] - v0] when this rank holds that id, else 0   -> all-reduce sum
//      (both)
//   3. NormalizeXent: probs[n,v] /= sums[n]; losses[n] = log sums[n] -
//      (target_logits[n] - maxes[n]), as CrossEntropyForward's.
// Then CrossEntropyBackward(..., v0) gives this rank's dlogits.
template <typename Float>
void RowMax(Float* maxes, const Float* logits, int64_t N, int64_t V);
template <typename Float>
void ShiftedExp(Float* probs, Float* sums, Float* target_logits, const Float* logits,
                const Float* maxes, const int32_t* targets, int64_t N, int64_t V, int64_t v0);
template <typename Float>
void NormalizeXent(Float* losses, Float* probs, const Float* sums, const Float* target_logits,
                   const Float* maxes, int64_t N, int64_t V);

// out[n] = the lowest index of the largest logit of row n.
template <typename Float>
void ArgmaxRows(int32_t* out, const Float* logits, int64_t N, int64_t V);

}  // namespace bm::train::cpu
