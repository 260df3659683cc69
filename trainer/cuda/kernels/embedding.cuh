// Token (and learned position) embedding, forward and backward.
//
// Shapes: tokens [N] with N = B*T (row n is position n % T); wte [V, C]; wpe [T, C] or null;
// out [N, C]. Gradients are fp32 and accumulated (+=).
//
// A vocabulary-parallel embedding (tensor parallelism) holds the rows of the ids
// [vocab_begin, vocab_begin + vocab_rows) only: wte's row i is id vocab_begin + i, and a token
// outside that range looks up zeros (the TP group's all-reduce then sums the one real row).
// The whole table is vocab_begin 0, vocab_rows V.
//
// The backward pass is deterministic without atomics: the host groups positions by token
// (EmbeddingBuckets, positions in increasing order) and one block sums each token's rows in
// that order.
//
// Spliced rows (LLaVA's image features, cuda_model.h's SplicedRows): at `count` distinct flat
// positions the lookup is replaced by given rows (plus the learned position, gpt). The forward
// overwrites those rows of the lookup's output; the backward copies the output gradient's rows
// out (the rows' gradient) and the buckets leave those positions out, so the token embedding gets
// nothing from them while the positions' gradient (a sum over every row) still does.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <vector>

#include "base/result.h"

namespace bm::train::cuda {

struct EmbeddingBuckets {
  std::vector<int> tokens;     // distinct tokens, increasing
  std::vector<int> offsets;    // size tokens.size() + 1, into positions
  std::vector<int> positions;  // row indices n, grouped by token, increasing within a group
};
// The tokens in [vocab_begin, vocab_begin + vocab_rows), as local rows (token - vocab_begin);
// the others have no bucket. Precondition: tokens[n] >= 0. `skip` (nullable, [n]): positions
// with skip[i] != 0 (spliced rows) are in no bucket.
EmbeddingBuckets BuildEmbeddingBuckets(const int* tokens, int n, int vocab_begin, int vocab_rows,
                                       const unsigned char* skip = nullptr);

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status EmbeddingForward(T* out, const int* tokens, const T* wte, const T* wpe, int n, int seq,
                        int channels, int vocab_begin, int vocab_rows, cudaStream_t stream);
// dwte[tok] += sum of dout rows of that token; dwpe[t] += sum over batch of dout[b*seq + t].
// bucket_* are device copies of EmbeddingBuckets; dwpe may be null.
template <typename T>
Status EmbeddingBackward(float* dwte, float* dwpe, const T* dout, const int* bucket_tokens,
                         const int* bucket_offsets, const int* bucket_positions, int num_buckets,
                         int n, int seq, int channels, cudaStream_t stream);
// The token rows' gradients as rows of their own (a sparse gradient: CudaDataParallel's
// FirstUnitAsRows): rows[b] = the bf16 rounding of the sum EmbeddingBackward adds to
// dwte[bucket_tokens[b]] (the same order and rounding as that sum added to zeros and cast),
// row_tokens[b] = bucket_tokens[b], for b < num_buckets.
template <typename T>
Status EmbeddingBackwardRows(__nv_bfloat16* rows, int* row_tokens, const T* dout,
                             const int* bucket_tokens, const int* bucket_offsets,
                             const int* bucket_positions, int num_buckets, int channels,
                             cudaStream_t stream);
// Rows added into a bf16 table of `channels` columns of which `out` holds the elements [first,
// first + count) (a rank's slice): for each of num_rows rows i with tokens[i] >= 0, the elements
// of row tokens[i] there become the bf16 rounding of their value plus rows[i]'s (in fp32); rows
// with a negative token are skipped. The tokens of one call must be distinct.
Status EmbeddingRowsAdd(__nv_bfloat16* out, size_t first, size_t count, const int* tokens,
                        const __nv_bfloat16* rows, int num_rows, int channels, cudaStream_t stream);
// out holds rows [first_row, first_row + out_rows) of the stream (first_row > 0: this rank's
// rows under sequence parallelism). For each i < count whose positions[i] (a flat position
// b*seq + t) lies there: out[positions[i] - first_row] = rows[i] (+ wpe[positions[i] % seq]
// when wpe is not null). Other rows are left as they are.
template <typename T>
Status EmbeddingSpliceForward(T* out, const int* positions, const T* rows, const T* wpe, int count,
                              int first_row, int out_rows, int seq, int channels,
                              cudaStream_t stream);
// drows[i] = dout[positions[i]] (dout: the whole stream's gradient, [N, channels]).
template <typename T>
Status EmbeddingSpliceBackward(T* drows, const T* dout, const int* positions, int count,
                               int channels, cudaStream_t stream);

// ---- CPU twins (fp32)
void EmbeddingForwardCpu(float* out, const int* tokens, const float* wte, const float* wpe, int n,
                         int seq, int channels, int vocab_begin, int vocab_rows);
// skip (nullable, [n]): rows with skip[row] != 0 add to dwpe only.
void EmbeddingBackwardCpu(float* dwte, float* dwpe, const float* dout, const int* tokens, int n,
                          int seq, int channels, const unsigned char* skip = nullptr);
void EmbeddingSpliceForwardCpu(float* out, const int* positions, const float* rows,
                               const float* wpe, int count, int first_row, int out_rows, int seq,
                               int channels);
void EmbeddingSpliceBackwardCpu(float* drows, const float* dout, const int* positions, int count,
                                int channels);
// EmbeddingBackwardRows over the buckets `b` (rows[k] for bucket k; bf16 values as floats) and
// EmbeddingRowsAdd on a table part of bf16 values held as floats: each sum rounded to bf16.
void EmbeddingBackwardRowsCpu(float* rows, const float* dout, const EmbeddingBuckets& b,
                              int channels);
void EmbeddingRowsAddCpu(float* out, size_t first, size_t count, const int* tokens,
                         const float* rows, int num_rows, int channels);

}  // namespace bm::train::cuda
