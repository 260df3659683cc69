#include <algorithm>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/embedding.cuh"
#include "trainer/dist/bf16.h"

namespace bm::train::cuda {
namespace {

// ---- kernels

template <typename T>
__global__ void EmbeddingForwardKernel(T* out, const int* tokens, const T* wte, const T* wpe,
                                       int seq, int channels, int vocab_begin, int vocab_rows) {
  int row = blockIdx.x;
  int local = tokens[row] - vocab_begin;
  const T* e =
      local >= 0 && local < vocab_rows ? wte + static_cast<size_t>(local) * channels : nullptr;
  const T* p = wpe ? wpe + static_cast<size_t>(row % seq) * channels : nullptr;
  T* o = out + static_cast<size_t>(row) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    float v = e ? ToF(e[c]) : 0.0f;
    if (p) v += ToF(p[c]);
    o[c] = FromF<T>(v);
  }
}

template <typename T>
__global__ void EmbeddingBackwardTokensKernel(float* dwte, const T* dout, const int* bucket_tokens,
                                              const int* bucket_offsets,
                                              const int* bucket_positions, int channels) {
  int b = blockIdx.x;
  int begin = bucket_offsets[b], end = bucket_offsets[b + 1];
  float* g = dwte + static_cast<size_t>(bucket_tokens[b]) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    float acc = 0.0f;
    for (int i = begin; i < end; ++i) {
      acc += ToF(dout[static_cast<size_t>(bucket_positions[i]) * channels + c]);
    }
    g[c] += acc;
  }
}

// EmbeddingBackwardTokensKernel's sums, written as bf16 rows of their own (0 + the sum, as the
// dense kernel adds it to zeros, then rounded as CastF32 rounds), each with its token.
template <typename T>
__global__ void EmbeddingBackwardRowsKernel(bf16* rows, int* row_tokens, const T* dout,
                                            const int* bucket_tokens, const int* bucket_offsets,
                                            const int* bucket_positions, int channels) {
  const int b = blockIdx.x;
  const int begin = bucket_offsets[b], end = bucket_offsets[b + 1];
  bf16* g = rows + static_cast<size_t>(b) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    float acc = 0.0f;
    for (int i = begin; i < end; ++i)
      acc += ToF(dout[static_cast<size_t>(bucket_positions[i]) * channels + c]);
    g[c] = FromF<bf16>(0.0f + acc);
  }
  if (threadIdx.x == 0) row_tokens[b] = bucket_tokens[b];
}

// One rank's rows added into the elements [first, first + count) of a [V, channels] table (its
// part `out`), each sum rounded to bf16; rows whose token is negative are padding.
__global__ void EmbeddingRowsAddKernel(bf16* out, size_t first, size_t count, const int* tokens,
                                       const bf16* rows, int channels) {
  const int i = blockIdx.x, token = tokens[i];
  if (token < 0) return;
  const size_t row = static_cast<size_t>(token) * channels;
  if (row + channels <= first || row >= first + count) return;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    const size_t e = row + c;
    if (e < first || e >= first + count) continue;
    bf16& o = out[e - first];
    o = FromF<bf16>(ToF(o) + ToF(rows[static_cast<size_t>(i) * channels + c]));
  }
}

template <typename T>
__global__ void EmbeddingBackwardPositionsKernel(float* dwpe, const T* dout, int n, int seq,
                                                 int channels) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<size_t>(seq) * channels) return;
  int t = static_cast<int>(i / channels), c = static_cast<int>(i % channels);
  float acc = 0.0f;
  for (int row = t; row < n; row += seq) acc += ToF(dout[static_cast<size_t>(row) * channels + c]);
  dwpe[i] += acc;
}

template <typename T>
__global__ void EmbeddingSpliceForwardKernel(T* out, const int* positions, const T* rows,
                                             const T* wpe, int first_row, int out_rows, int seq,
                                             int channels) {
  const int i = blockIdx.x, pos = positions[i], row = pos - first_row;
  if (row < 0 || row >= out_rows) return;
  const T* r = rows + static_cast<size_t>(i) * channels;
  const T* p = wpe ? wpe + static_cast<size_t>(pos % seq) * channels : nullptr;
  T* o = out + static_cast<size_t>(row) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    if (p) {
      o[c] = FromF<T>(ToF(r[c]) + ToF(p[c]));
    } else {
      o[c] = r[c];  // the row's bits
    }
  }
}

template <typename T>
__global__ void EmbeddingSpliceBackwardKernel(T* drows, const T* dout, const int* positions,
                                              int channels) {
  const int i = blockIdx.x;
  const T* g = dout + static_cast<size_t>(positions[i]) * channels;
  T* d = drows + static_cast<size_t>(i) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) d[c] = g[c];
}

}  // namespace

// ---- launchers

template <typename T>
Status EmbeddingForward(T* out, const int* tokens, const T* wte, const T* wpe, int n, int seq,
                        int channels, int vocab_begin, int vocab_rows, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  EmbeddingForwardKernel<T>
      <<<n, 256, 0, stream>>>(out, tokens, wte, wpe, seq, channels, vocab_begin, vocab_rows);
  BM_LAUNCH_CHECK("EmbeddingForwardKernel", "N={} T={} C={}", n, seq, channels);
  return Status::Ok();
}

template <typename T>
Status EmbeddingBackward(float* dwte, float* dwpe, const T* dout, const int* bucket_tokens,
                         const int* bucket_offsets, const int* bucket_positions, int num_buckets,
                         int n, int seq, int channels, cudaStream_t stream) {
  if (num_buckets > 0) {
    EmbeddingBackwardTokensKernel<T><<<num_buckets, 256, 0, stream>>>(
        dwte, dout, bucket_tokens, bucket_offsets, bucket_positions, channels);
    BM_LAUNCH_CHECK("EmbeddingBackwardTokensKernel", "buckets={} C={}", num_buckets, channels);
  }
  if (dwpe) {
    size_t total = static_cast<size_t>(seq) * channels;
    EmbeddingBackwardPositionsKernel<T>
        <<<CeilDiv(total, 256), 256, 0, stream>>>(dwpe, dout, n, seq, channels);
    BM_LAUNCH_CHECK("EmbeddingBackwardPositionsKernel", "N={} T={} C={}", n, seq, channels);
  }
  return Status::Ok();
}

template <typename T>
Status EmbeddingBackwardRows(bf16* rows, int* row_tokens, const T* dout, const int* bucket_tokens,
                             const int* bucket_offsets, const int* bucket_positions,
                             int num_buckets, int channels, cudaStream_t stream) {
  if (num_buckets == 0) return Status::Ok();
  EmbeddingBackwardRowsKernel<T><<<num_buckets, 256, 0, stream>>>(
      rows, row_tokens, dout, bucket_tokens, bucket_offsets, bucket_positions, channels);
  BM_LAUNCH_CHECK("EmbeddingBackwardRowsKernel", "buckets={} C={}", num_buckets, channels);
  return Status::Ok();
}

Status EmbeddingRowsAdd(bf16* out, size_t first, size_t count, const int* tokens, const bf16* rows,
                        int num_rows, int channels, cudaStream_t stream) {
  if (num_rows == 0 || count == 0) return Status::Ok();
  EmbeddingRowsAddKernel<<<num_rows, 256, 0, stream>>>(out, first, count, tokens, rows, channels);
  BM_LAUNCH_CHECK("EmbeddingRowsAddKernel", "rows={} C={}", num_rows, channels);
  return Status::Ok();
}

template <typename T>
Status EmbeddingSpliceForward(T* out, const int* positions, const T* rows, const T* wpe, int count,
                              int first_row, int out_rows, int seq, int channels,
                              cudaStream_t stream) {
  if (count == 0) return Status::Ok();
  EmbeddingSpliceForwardKernel<T>
      <<<count, 256, 0, stream>>>(out, positions, rows, wpe, first_row, out_rows, seq, channels);
  BM_LAUNCH_CHECK("EmbeddingSpliceForwardKernel", "count={} rows={} C={}", count, out_rows,
                  channels);
  return Status::Ok();
}

template <typename T>
Status EmbeddingSpliceBackward(T* drows, const T* dout, const int* positions, int count,
                               int channels, cudaStream_t stream) {
  if (count == 0) return Status::Ok();
  EmbeddingSpliceBackwardKernel<T><<<count, 256, 0, stream>>>(drows, dout, positions, channels);
  BM_LAUNCH_CHECK("EmbeddingSpliceBackwardKernel", "count={} C={}", count, channels);
  return Status::Ok();
}

#define BM_SPLICE_INSTANTIATE(T)                                                               \
  template Status EmbeddingSpliceForward<T>(T*, const int*, const T*, const T*, int, int, int, \
                                            int, int, cudaStream_t);                           \
  template Status EmbeddingSpliceBackward<T>(T*, const T*, const int*, int, int, cudaStream_t);
BM_SPLICE_INSTANTIATE(float)
BM_SPLICE_INSTANTIATE(bf16)
BM_SPLICE_INSTANTIATE(fp16)
#undef BM_SPLICE_INSTANTIATE

template Status EmbeddingForward<float>(float*, const int*, const float*, const float*, int, int,
                                        int, int, int, cudaStream_t);
template Status EmbeddingForward<bf16>(bf16*, const int*, const bf16*, const bf16*, int, int, int,
                                       int, int, cudaStream_t);
template Status EmbeddingForward<fp16>(fp16*, const int*, const fp16*, const fp16*, int, int, int,
                                       int, int, cudaStream_t);
template Status EmbeddingBackward<float>(float*, float*, const float*, const int*, const int*,
                                         const int*, int, int, int, int, cudaStream_t);
template Status EmbeddingBackward<bf16>(float*, float*, const bf16*, const int*, const int*,
                                        const int*, int, int, int, int, cudaStream_t);
template Status EmbeddingBackward<fp16>(float*, float*, const fp16*, const int*, const int*,
                                        const int*, int, int, int, int, cudaStream_t);
template Status EmbeddingBackwardRows<float>(bf16*, int*, const float*, const int*, const int*,
                                             const int*, int, int, cudaStream_t);
template Status EmbeddingBackwardRows<bf16>(bf16*, int*, const bf16*, const int*, const int*,
                                            const int*, int, int, cudaStream_t);
template Status EmbeddingBackwardRows<fp16>(bf16*, int*, const fp16*, const int*, const int*,
                                            const int*, int, int, cudaStream_t);

EmbeddingBuckets BuildEmbeddingBuckets(const int* tokens, int n, int vocab_begin, int vocab_rows,
                                       const unsigned char* skip) {
  EmbeddingBuckets b;
  auto local = [&](int i) {
    if (skip && skip[i]) return -1;
    const int v = tokens[i] - vocab_begin;
    return v >= 0 && v < vocab_rows ? v : -1;
  };
  std::vector<int> count(static_cast<size_t>(vocab_rows) + 1, 0);
  for (int i = 0; i < n; ++i)
    if (local(i) >= 0) ++count[local(i) + 1];
  for (int v = 0; v < vocab_rows; ++v) count[v + 1] += count[v];  // count[v] = start of row v
  b.positions.resize(count[vocab_rows]);
  std::vector<int> cursor(count.begin(), count.end() - 1);
  for (int i = 0; i < n; ++i)
    if (local(i) >= 0) b.positions[cursor[local(i)]++] = i;
  b.offsets.push_back(0);
  for (int v = 0; v < vocab_rows; ++v) {
    if (count[v + 1] > count[v]) {
      b.tokens.push_back(v);
      b.offsets.push_back(count[v + 1]);
    }
  }
  return b;
}

// ---- CPU twins

void EmbeddingForwardCpu(float* out, const int* tokens, const float* wte, const float* wpe, int n,
                         int seq, int channels, int vocab_begin, int vocab_rows) {
  for (int row = 0; row < n; ++row) {
    const int local = tokens[row] - vocab_begin;
    const bool here = local >= 0 && local < vocab_rows;
    for (int c = 0; c < channels; ++c) {
      float v = here ? wte[static_cast<size_t>(local) * channels + c] : 0.0f;
      if (wpe) v += wpe[static_cast<size_t>(row % seq) * channels + c];
      out[static_cast<size_t>(row) * channels + c] = v;
    }
  }
}

void EmbeddingBackwardCpu(float* dwte, float* dwpe, const float* dout, const int* tokens, int n,
                          int seq, int channels, const unsigned char* skip) {
  for (int row = 0; row < n; ++row) {
    const bool spliced = skip && skip[row];
    for (int c = 0; c < channels; ++c) {
      float g = dout[static_cast<size_t>(row) * channels + c];
      if (!spliced) dwte[static_cast<size_t>(tokens[row]) * channels + c] += g;
      if (dwpe) dwpe[static_cast<size_t>(row % seq) * channels + c] += g;
    }
  }
}

void EmbeddingSpliceForwardCpu(float* out, const int* positions, const float* rows,
                               const float* wpe, int count, int first_row, int out_rows, int seq,
                               int channels) {
  for (int i = 0; i < count; ++i) {
    const int row = positions[i] - first_row;
    if (row < 0 || row >= out_rows) continue;
    for (int c = 0; c < channels; ++c) {
      float v = rows[static_cast<size_t>(i) * channels + c];
      if (wpe) v += wpe[static_cast<size_t>(positions[i] % seq) * channels + c];
      out[static_cast<size_t>(row) * channels + c] = v;
    }
  }
}

void EmbeddingSpliceBackwardCpu(float* drows, const float* dout, const int* positions, int count,
                                int channels) {
  for (int i = 0; i < count; ++i)
    std::copy_n(dout + static_cast<size_t>(positions[i]) * channels, channels,
                drows + static_cast<size_t>(i) * channels);
}

void EmbeddingBackwardRowsCpu(float* rows, const float* dout, const EmbeddingBuckets& b,
                              int channels) {
  for (size_t k = 0; k < b.tokens.size(); ++k)
    for (int c = 0; c < channels; ++c) {
      float acc = 0.0f;
      for (int i = b.offsets[k]; i < b.offsets[k + 1]; ++i)
        acc += dout[static_cast<size_t>(b.positions[i]) * channels + c];
      rows[k * channels + c] = dist::Bf16ToFloat(dist::FloatToBf16(0.0f + acc));
    }
}

void EmbeddingRowsAddCpu(float* out, size_t first, size_t count, const int* tokens,
                         const float* rows, int num_rows, int channels) {
  for (int i = 0; i < num_rows; ++i) {
    if (tokens[i] < 0) continue;
    for (int c = 0; c < channels; ++c) {
      const size_t e = static_cast<size_t>(tokens[i]) * channels + c;
      if (e < first || e >= first + count) continue;
      float& o = out[e - first];
      o = dist::Bf16ToFloat(dist::FloatToBf16(o + rows[static_cast<size_t>(i) * channels + c]));
    }
  }
}

}  // namespace bm::train::cuda
