#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/residual.cuh"

namespace bm::train::cuda {
namespace {

// ---- kernels

template <typename T>
__global__ void ResidualAddKernel(T* out, const T* a, const T* b, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = FromF<T>(ToF(a[i]) + ToF(b[i]));
}

__global__ void AccumulateF32Kernel(float* __restrict__ dst, const float* __restrict__ src,
                                    size_t n, bool four) {
  ForEachElement(
      n, four,
      [&](size_t i) {
        Four<float> d = Load4(dst + i);
        const Four<float> s = Load4(src + i);
        for (int k = 0; k < 4; ++k) d.v[k] += s.v[k];
        Store4(dst + i, d);
      },
      [&](size_t i) { dst[i] += src[i]; });
}

template <typename T>
__global__ void CastF32Kernel(T* __restrict__ out, const float* __restrict__ in, size_t n,
                              bool four) {
  ForEachElement(
      n, four,
      [&](size_t i) {
        const Four<float> x = Load4(in + i);
        Four<T> y;
        for (int k = 0; k < 4; ++k) y.v[k] = FromF<T>(x.v[k]);
        Store4(out + i, y);
      },
      [&](size_t i) { out[i] = FromF<T>(in[i]); });
}

template <typename T>
__global__ void WidenF32Kernel(float* __restrict__ out, const T* __restrict__ in, size_t n,
                               bool accumulate, bool four) {
  ForEachElement(
      n, four,
      [&](size_t i) {
        const Four<T> x = Load4(in + i);
        Four<float> y = accumulate ? Load4(out + i) : Four<float>{};
        for (int k = 0; k < 4; ++k) y.v[k] = accumulate ? y.v[k] + ToF(x.v[k]) : ToF(x.v[k]);
        Store4(out + i, y);
      },
      [&](size_t i) { out[i] = accumulate ? out[i] + ToF(in[i]) : ToF(in[i]); });
}

// WidenF32Kernel's values, and each block's sum of their squares into partials[blockIdx.x]:
// a fixed grid striding over the elements, so the partials' count and order are fixed
// (deterministic), and the gradient norm needs no second read of the widened gradients.
template <typename T>
__global__ void WidenF32SquaresKernel(float* __restrict__ out, const T* __restrict__ in, size_t n,
                                      bool accumulate, bool four, float* __restrict__ partials) {
  __shared__ float shared[32];
  const size_t stride = gridDim.x * static_cast<size_t>(blockDim.x);
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  float acc = 0.0f;
  const size_t groups = four ? n / 4 : 0;
  for (size_t g = t; g < groups; g += stride) {
    const Four<T> x = Load4(in + 4 * g);
    Four<float> y = accumulate ? Load4(out + 4 * g) : Four<float>{};
    for (int k = 0; k < 4; ++k) {
      y.v[k] = accumulate ? y.v[k] + ToF(x.v[k]) : ToF(x.v[k]);
      acc += y.v[k] * y.v[k];
    }
    if (out) Store4(out + 4 * g, y);
  }
  for (size_t i = 4 * groups + t; i < n; i += stride) {
    const float y = accumulate ? out[i] + ToF(in[i]) : ToF(in[i]);
    if (out) out[i] = y;
    acc += y * y;
  }
  const float total = BlockSum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

constexpr int kBiasRowsPerChunk = 256;

template <typename T>
__global__ void AddBiasKernel(T* y, const T* bias, int rows, int cols) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<size_t>(rows) * cols) y[i] = FromF<T>(ToF(y[i]) + ToF(bias[i % cols]));
}

// grid (ceil(cols/32), chunks), block (32, 8): partial[chunk][c] = sum of the chunk's rows.
template <typename T>
__global__ void BiasGradPartialKernel(float* partial, const T* dy, int rows, int cols) {
  __shared__ float s[8][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  int begin = blockIdx.y * kBiasRowsPerChunk, end = min(rows, begin + kBiasRowsPerChunk);
  float acc = 0.0f;
  if (c < cols) {
    for (int r = begin + threadIdx.y; r < end; r += 8)
      acc += ToF(dy[static_cast<size_t>(r) * cols + c]);
  }
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float t = 0.0f;
    for (int k = 0; k < 8; ++k) t += s[k][threadIdx.x];
    partial[static_cast<size_t>(blockIdx.y) * cols + c] = t;
  }
}

// The same with 16-byte loads (cols a multiple of V = 16 / sizeof(T), dy aligned): thread x owns
// the V columns from (blockIdx.x * 32 + x) V; each column's sum in the scalar kernel's order.
template <typename T>
__global__ void BiasGradPartialVecKernel(float* partial, const T* dy, int rows, int cols) {
  constexpr int V = Pack16<T>::kN;
  __shared__ float s[8][32 * V + 1];
  int c0 = (blockIdx.x * 32 + threadIdx.x) * V;
  int begin = blockIdx.y * kBiasRowsPerChunk, end = min(rows, begin + kBiasRowsPerChunk);
  float acc[V] = {};
  if (c0 < cols) {
    for (int r = begin + threadIdx.y; r < end; r += 8) {
      Pack16<T> p = Load16(dy + static_cast<size_t>(r) * cols + c0);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += ToF(p.v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) s[threadIdx.y][threadIdx.x * V + k] = acc[k];
  __syncthreads();
  for (int i = threadIdx.y * 32 + threadIdx.x; i < 32 * V; i += 256) {
    int c = blockIdx.x * 32 * V + i;
    if (c >= cols) continue;
    float t = 0.0f;
    for (int k = 0; k < 8; ++k) t += s[k][i];
    partial[static_cast<size_t>(blockIdx.y) * cols + c] = t;
  }
}

__global__ void BiasGradFinishKernel(float* db, const float* partial, int chunks, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float t = 0.0f;
  for (int k = 0; k < chunks; ++k) t += partial[static_cast<size_t>(k) * cols + c];
  db[c] += t;
}

// One thread per V consecutive columns of one row (V = 1, or a Pack16 when aligned).
template <typename T, int V>
__global__ void AddRowsKernel(T* dst, int ld_dst, const T* src, int ld_src, int batch, int seq,
                              int row0, int cols) {
  int groups = cols / V, rows = seq - row0;
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<size_t>(batch) * rows * groups) return;
  int g = static_cast<int>(i % groups);
  size_t r = i / groups;
  size_t t = static_cast<size_t>(r / rows) * seq + row0 + r % rows;  // row in [batch * seq]
  T* d = dst + t * ld_dst + static_cast<size_t>(g) * V;
  const T* s = src + t * ld_src + static_cast<size_t>(g) * V;
  if constexpr (V == 1) {
    *d = FromF<T>(ToF(*d) + ToF(*s));
  } else {
    Pack16<T> a = Load16(d), b = Load16(s);
#pragma unroll
    for (int k = 0; k < V; ++k) a.v[k] = FromF<T>(ToF(a.v[k]) + ToF(b.v[k]));
    Store16(d, a);
  }
}

}  // namespace

// ---- launchers

template <typename T>
Status AddRows(T* dst, int ld_dst, const T* src, int ld_src, int batch, int seq, int row0, int cols,
               cudaStream_t stream) {
  size_t n = static_cast<size_t>(batch) * (seq - row0) * cols;
  if (n == 0) return Status::Ok();
  constexpr int V = Pack16<T>::kN;
  if (Vectorizable<T>(cols, dst, src) && ld_dst % V == 0 && ld_src % V == 0) {
    AddRowsKernel<T, V>
        <<<CeilDiv(n / V, 256), 256, 0, stream>>>(dst, ld_dst, src, ld_src, batch, seq, row0, cols);
  } else {
    AddRowsKernel<T, 1>
        <<<CeilDiv(n, 256), 256, 0, stream>>>(dst, ld_dst, src, ld_src, batch, seq, row0, cols);
  }
  BM_LAUNCH_CHECK("AddRowsKernel", "batch={} seq={} row0={} cols={}", batch, seq, row0, cols);
  return Status::Ok();
}

template <typename T>
Status AddBias(T* y, const T* bias, int rows, int cols, cudaStream_t stream) {
  size_t n = static_cast<size_t>(rows) * cols;
  if (n == 0) return Status::Ok();
  AddBiasKernel<T><<<CeilDiv(n, 256), 256, 0, stream>>>(y, bias, rows, cols);
  BM_LAUNCH_CHECK("AddBiasKernel", "rows={} cols={}", rows, cols);
  return Status::Ok();
}

size_t BiasGradScratchFloats(int rows, int cols) {
  return static_cast<size_t>((rows + kBiasRowsPerChunk - 1) / kBiasRowsPerChunk) * cols;
}

template <typename T>
Status BiasGrad(float* db, float* scratch, const T* dy, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return Status::Ok();
  int chunks = (rows + kBiasRowsPerChunk - 1) / kBiasRowsPerChunk;
  if (Vectorizable<T>(cols, dy)) {
    BiasGradPartialVecKernel<T>
        <<<dim3(CeilDiv(cols, 32 * Pack16<T>::kN), chunks), dim3(32, 8), 0, stream>>>(scratch, dy,
                                                                                      rows, cols);
  } else {
    BiasGradPartialKernel<T>
        <<<dim3(CeilDiv(cols, 32), chunks), dim3(32, 8), 0, stream>>>(scratch, dy, rows, cols);
  }
  BM_LAUNCH_CHECK("BiasGradPartialKernel", "rows={} cols={}", rows, cols);
  BiasGradFinishKernel<<<CeilDiv(cols, 256), 256, 0, stream>>>(db, scratch, chunks, cols);
  BM_LAUNCH_CHECK("BiasGradFinishKernel", "rows={} cols={}", rows, cols);
  return Status::Ok();
}

template <typename T>
Status ResidualAdd(T* out, const T* a, const T* b, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  ResidualAddKernel<T><<<CeilDiv(n, 256), 256, 0, stream>>>(out, a, b, n);
  BM_LAUNCH_CHECK("ResidualAddKernel", "n={}", n);
  return Status::Ok();
}

Status AccumulateF32(float* dst, const float* src, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool four = FourAligned({dst, src});
  AccumulateF32Kernel<<<ElementwiseBlocks(n, four), 256, 0, stream>>>(dst, src, n, four);
  BM_LAUNCH_CHECK("AccumulateF32Kernel", "n={}", n);
  return Status::Ok();
}

template <typename T>
Status CastF32(T* out, const float* in, size_t n, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool four = FourAligned({out, in});
  CastF32Kernel<T><<<ElementwiseBlocks(n, four), 256, 0, stream>>>(out, in, n, four);
  BM_LAUNCH_CHECK("CastF32Kernel", "n={}", n);
  return Status::Ok();
}

template <typename T>
Status WidenF32(float* out, const T* in, size_t n, bool accumulate, cudaStream_t stream) {
  if (n == 0) return Status::Ok();
  const bool four = FourAligned({out, in});
  WidenF32Kernel<T><<<ElementwiseBlocks(n, four), 256, 0, stream>>>(out, in, n, accumulate, four);
  BM_LAUNCH_CHECK("WidenF32Kernel", "n={}", n);
  return Status::Ok();
}

template <typename T>
Status WidenF32Squares(float* out, const T* in, size_t n, bool accumulate, float* partials,
                       cudaStream_t stream) {
  const bool four = FourAligned({out, in});
  WidenF32SquaresKernel<T>
      <<<kUnitSquareBlocks, 256, 0, stream>>>(out, in, n, accumulate, four, partials);
  BM_LAUNCH_CHECK("WidenF32SquaresKernel", "n={}", n);
  return Status::Ok();
}

template Status ResidualAdd<float>(float*, const float*, const float*, size_t, cudaStream_t);
template Status ResidualAdd<bf16>(bf16*, const bf16*, const bf16*, size_t, cudaStream_t);
template Status ResidualAdd<fp16>(fp16*, const fp16*, const fp16*, size_t, cudaStream_t);
template Status CastF32<float>(float*, const float*, size_t, cudaStream_t);
template Status CastF32<bf16>(bf16*, const float*, size_t, cudaStream_t);
template Status CastF32<fp16>(fp16*, const float*, size_t, cudaStream_t);
template Status WidenF32<bf16>(float*, const bf16*, size_t, bool, cudaStream_t);
template Status WidenF32<fp16>(float*, const fp16*, size_t, bool, cudaStream_t);
template Status WidenF32Squares<bf16>(float*, const bf16*, size_t, bool, float*, cudaStream_t);
template Status WidenF32Squares<fp16>(float*, const fp16*, size_t, bool, float*, cudaStream_t);
template Status AddBias<float>(float*, const float*, int, int, cudaStream_t);
template Status AddBias<bf16>(bf16*, const bf16*, int, int, cudaStream_t);
template Status AddBias<fp16>(fp16*, const fp16*, int, int, cudaStream_t);
template Status BiasGrad<float>(float*, float*, const float*, int, int, cudaStream_t);
template Status BiasGrad<bf16>(float*, float*, const bf16*, int, int, cudaStream_t);
template Status BiasGrad<fp16>(float*, float*, const fp16*, int, int, cudaStream_t);
template Status AddRows<float>(float*, int, const float*, int, int, int, int, int, cudaStream_t);
template Status AddRows<bf16>(bf16*, int, const bf16*, int, int, int, int, int, cudaStream_t);
template Status AddRows<fp16>(fp16*, int, const fp16*, int, int, int, int, int, cudaStream_t);

// ---- CPU twin

void ResidualAddCpu(float* out, const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void BiasGradCpu(float* db, const float* dy, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) db[c] += dy[static_cast<size_t>(r) * cols + c];
  }
}

void AddRowsCpu(float* dst, int ld_dst, const float* src, int ld_src, int batch, int seq, int row0,
                int cols) {
  for (int b = 0; b < batch; ++b) {
    for (int t = row0; t < seq; ++t) {
      size_t r = static_cast<size_t>(b) * seq + t;
      for (int c = 0; c < cols; ++c) dst[r * ld_dst + c] += src[r * ld_src + c];
    }
  }
}

}  // namespace bm::train::cuda
