// Residual adds and the small elementwise helpers around them.
//
// ResidualAdd: out[i] = a[i] + b[i] (out may alias a or b).
// AccumulateF32: dst[i] += src[i] (fp32 gradients computed into a scratch first, e.g. a norm's
//   weight gradients under sequence parallelism or a reduced ZeRO slice).
// CastF32: out[i] = (T) in[i] (bf16 / fp16 working copies of the fp32 master weights).
// WidenF32: out[i] = (float) in[i], or out[i] += (float) in[i] with `accumulate` (gradients
//   reduced in 16 bits back into fp32).
// WidenF32Squares: the same, and the sum of the squares of the out[i] it writes in
//   kUnitSquareBlocks partial sums (fixed order: deterministic), whose sum is their share of
//   the gradient norm (kernels/adamw.cuh: CudaDataParallel sums them instead of reading the
//   gradients again). With a null `out` (and no `accumulate`) the squares alone: the same
//   partial sums, in the same order, of sums kept in 16 bits.
// AddBias: y[r, c] += bias[c] (when a matmul's bias epilogue is not available).
// BiasGrad: db[c] += sum over rows of dy[r, c], deterministic (two fixed-order stages through
//   `scratch`, BiasGradScratchFloats(rows, cols) floats).
// AddRows: dst[b, t, c] += src[b, t, c] for the rows t in [row0, seq) of each of `batch`
//   sequences and columns c < cols; dst's rows are ld_dst elements apart, src's ld_src (a
//   partial gradient added into a wider packed tensor, e.g. dQ into dqkv).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "base/result.h"
#include "trainer/cuda/kernels/adamw.cuh"  // kUnitSquareBlocks

namespace bm::train::cuda {

// ---- launchers (T = float, __nv_bfloat16 or __half)
template <typename T>
Status ResidualAdd(T* out, const T* a, const T* b, size_t n, cudaStream_t stream);
Status AccumulateF32(float* dst, const float* src, size_t n, cudaStream_t stream);
template <typename T>
Status CastF32(T* out, const float* in, size_t n, cudaStream_t stream);
template <typename T>
Status WidenF32(float* out, const T* in, size_t n, bool accumulate, cudaStream_t stream);
template <typename T>
Status WidenF32Squares(float* out, const T* in, size_t n, bool accumulate, float* partials,
                       cudaStream_t stream);
template <typename T>
Status AddBias(T* y, const T* bias, int rows, int cols, cudaStream_t stream);
size_t BiasGradScratchFloats(int rows, int cols);
template <typename T>
Status BiasGrad(float* db, float* scratch, const T* dy, int rows, int cols, cudaStream_t stream);
template <typename T>
Status AddRows(T* dst, int ld_dst, const T* src, int ld_src, int batch, int seq, int row0, int cols,
               cudaStream_t stream);

// ---- CPU twin (fp32)
void ResidualAddCpu(float* out, const float* a, const float* b, size_t n);
void BiasGradCpu(float* db, const float* dy, int rows, int cols);
void AddRowsCpu(float* dst, int ld_dst, const float* src, int ld_src, int batch, int seq, int row0,
                int cols);

}  // namespace bm::train::cuda
