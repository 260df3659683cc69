// Token (and learned position) embedding.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// Vocabulary-parallel (tensor parallelism, trainer/model/shard.h): wte holds
// the rows of token ids [v0, v0 + rows) only; a token outside them looks up a
// zero row and gets no gradient. The defaults hold every id.
inline constexpr int64_t kAllRows = INT64_MAX;

// out[B,T,C] = wte[inp[b,t] - v0, :] + wpe[t, :]   (wpe nullable: no positions)
template <typename Float>
void EmbeddingForward(Float* out, const int32_t* inp, const Float* wte, const Float* wpe, int64_t B,
                      int64_t T, int64_t C, int64_t v0 = 0, int64_t rows = kAllRows);

// dwte[inp[b,t] - v0, :] += dout[b,t,:];  dwpe[t,:] += Σ_b dout[b,t,:]   (dwpe nullable)
template <typename Float>
void EmbeddingBackward(Float* dwte, Float* dwpe, const Float* dout, const int32_t* inp, int64_t B,
                       int64_t T, int64_t C, int64_t v0 = 0, int64_t rows = kAllRows);

// out[r,:] += wpe[(first_row + r) % T, :] for r < rows: the positions added
// after a vocabulary-parallel lookup's all-reduce (one addition, as
// EmbeddingForward's), to rows first_row.. of the [B*T, C] stream.
template <typename Float>
void AddPositions(Float* out, const Float* wpe, int64_t first_row, int64_t rows, int64_t T,
                  int64_t C);

}  // namespace bm::train::cpu
