#include <cmath>
#include <vector>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/attention.cuh"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/flash_attention.cuh"

namespace bm::train::cuda {
namespace {

constexpr int kMaxPerLane = 8;  // head_dim <= 256

struct Geometry {
  int batch, seq, heads, kv_heads, head_dim;
  bool causal;
  // Keys query t sees: [0, KeyEnd(t)); queries key s is seen by: [QueryBegin(s), seq).
  __host__ __device__ int KeyEnd(int t) const { return causal ? t + 1 : seq; }
  __host__ __device__ int QueryBegin(int s) const { return causal ? s : 0; }
  __host__ __device__ size_t QkvStride() const {
    return static_cast<size_t>(heads + 2 * kv_heads) * head_dim;
  }
  __host__ __device__ size_t QOffset(int row, int h) const {
    return row * QkvStride() + static_cast<size_t>(h) * head_dim;
  }
  __host__ __device__ size_t KOffset(int row, int hk) const {
    return row * QkvStride() + static_cast<size_t>(heads + hk) * head_dim;
  }
  __host__ __device__ size_t VOffset(int row, int hk) const {
    return row * QkvStride() + static_cast<size_t>(heads + kv_heads + hk) * head_dim;
  }
  __host__ __device__ size_t OOffset(int row, int h) const {
    return static_cast<size_t>(row) * heads * head_dim + static_cast<size_t>(h) * head_dim;
  }
  __host__ __device__ size_t LseIndex(int b, int h, int t) const {
    return (static_cast<size_t>(b) * heads + h) * seq + t;
  }
};

// ---- kernels (reference: one warp per row; lane holds dims lane, lane+32, ...)

template <typename T>
__device__ float WarpDot(const T* a, const T* b, int d) {
  float acc = 0.0f;
  for (int i = threadIdx.x % 32; i < d; i += 32) acc += ToF(a[i]) * ToF(b[i]);
  return WarpSum(acc);
}

template <typename T>
__global__ void RefForwardKernel(T* out, float* lse, const T* qkv, Geometry g, float scale) {
  int warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (warp >= g.batch * g.heads * g.seq) return;
  int t = warp % g.seq, h = (warp / g.seq) % g.heads, b = warp / (g.seq * g.heads);
  int hk = h / (g.heads / g.kv_heads);
  int row = b * g.seq + t;
  const T* q = qkv + g.QOffset(row, h);
  float m = -INFINITY, l = 0.0f, acc[kMaxPerLane] = {};
  for (int s = 0; s < g.KeyEnd(t); ++s) {
    int krow = b * g.seq + s;
    float score = WarpDot(q, qkv + g.KOffset(krow, hk), g.head_dim) * scale;
    float m_new = fmaxf(m, score);
    float alpha = expf(m - m_new), p = expf(score - m_new);
    l = l * alpha + p;
    const T* v = qkv + g.VOffset(krow, hk);
#pragma unroll
    for (int j = 0; j < kMaxPerLane; ++j) {
      int i = lane + 32 * j;
      if (i < g.head_dim) acc[j] = acc[j] * alpha + p * ToF(v[i]);
    }
    m = m_new;
  }
  T* o = out + g.OOffset(row, h);
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    int i = lane + 32 * j;
    if (i < g.head_dim) o[i] = FromF<T>(acc[j] / l);
  }
  if (lane == 0) lse[g.LseIndex(b, h, t)] = m + logf(l);
}

// delta[b,h,t] = sum_d dout * out (one warp per row).
template <typename T>
__global__ void DeltaKernel(float* delta, const T* dout, const T* out, Geometry g) {
  int warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (warp >= g.batch * g.heads * g.seq) return;
  int t = warp % g.seq, h = (warp / g.seq) % g.heads, b = warp / (g.seq * g.heads);
  size_t off = g.OOffset(b * g.seq + t, h);
  float d = WarpDot(dout + off, out + off, g.head_dim);
  if (threadIdx.x % 32 == 0) delta[g.LseIndex(b, h, t)] = d;
}

template <typename T>
__global__ void RefBackwardQKernel(T* dqkv, const T* dout, const T* qkv, const float* lse,
                                   const float* delta, Geometry g, float scale) {
  int warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (warp >= g.batch * g.heads * g.seq) return;
  int t = warp % g.seq, h = (warp / g.seq) % g.heads, b = warp / (g.seq * g.heads);
  int hk = h / (g.heads / g.kv_heads);
  int row = b * g.seq + t;
  const T* q = qkv + g.QOffset(row, h);
  const T* go = dout + g.OOffset(row, h);
  float row_lse = lse[g.LseIndex(b, h, t)], row_delta = delta[g.LseIndex(b, h, t)];
  float acc[kMaxPerLane] = {};
  for (int s = 0; s < g.KeyEnd(t); ++s) {
    int krow = b * g.seq + s;
    const T* k = qkv + g.KOffset(krow, hk);
    float p = expf(WarpDot(q, k, g.head_dim) * scale - row_lse);
    float dp = WarpDot(go, qkv + g.VOffset(krow, hk), g.head_dim);
    float ds = p * (dp - row_delta);
#pragma unroll
    for (int j = 0; j < kMaxPerLane; ++j) {
      int i = lane + 32 * j;
      if (i < g.head_dim) acc[j] += ds * ToF(k[i]);
    }
  }
  T* dq = dqkv + g.QOffset(row, h);
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    int i = lane + 32 * j;
    if (i < g.head_dim) dq[i] = FromF<T>(acc[j] * scale);
  }
}

template <typename T>
__global__ void RefBackwardKVKernel(T* dqkv, const T* dout, const T* qkv, const float* lse,
                                    const float* delta, Geometry g, float scale) {
  int warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (warp >= g.batch * g.kv_heads * g.seq) return;
  int s = warp % g.seq, hk = (warp / g.seq) % g.kv_heads, b = warp / (g.seq * g.kv_heads);
  int group = g.heads / g.kv_heads;
  int krow = b * g.seq + s;
  const T* k = qkv + g.KOffset(krow, hk);
  const T* v = qkv + g.VOffset(krow, hk);
  float dk[kMaxPerLane] = {}, dv[kMaxPerLane] = {};
  for (int h = hk * group; h < (hk + 1) * group; ++h) {
    for (int t = g.QueryBegin(s); t < g.seq; ++t) {
      int row = b * g.seq + t;
      const T* q = qkv + g.QOffset(row, h);
      const T* go = dout + g.OOffset(row, h);
      float p = expf(WarpDot(q, k, g.head_dim) * scale - lse[g.LseIndex(b, h, t)]);
      float dp = WarpDot(go, v, g.head_dim);
      float ds = p * (dp - delta[g.LseIndex(b, h, t)]);
#pragma unroll
      for (int j = 0; j < kMaxPerLane; ++j) {
        int i = lane + 32 * j;
        if (i < g.head_dim) {
          dv[j] += p * ToF(go[i]);
          dk[j] += ds * ToF(q[i]);
        }
      }
    }
  }
  T* gk = dqkv + g.KOffset(krow, hk);
  T* gv = dqkv + g.VOffset(krow, hk);
#pragma unroll
  for (int j = 0; j < kMaxPerLane; ++j) {
    int i = lane + 32 * j;
    if (i < g.head_dim) {
      gk[i] = FromF<T>(dk[j] * scale);
      gv[i] = FromF<T>(dv[j]);
    }
  }
}

Status CheckGeometry(const Geometry& g) {
  if (g.kv_heads <= 0 || g.heads % g.kv_heads != 0 || g.head_dim <= 0 ||
      g.head_dim > 32 * kMaxPerLane) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "attention: unsupported geometry H={} Hkv={} D={} (Hkv must divide H, D <= {})",
                  g.heads, g.kv_heads, g.head_dim, 32 * kMaxPerLane);
  }
  return Status::Ok();
}

// The tensor-core kernels take the 16-bit types.
template <typename T>
constexpr bool kSixteenBit = std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;

Status RefuseCudnn(AttentionImpl impl) {
  if (impl != AttentionImpl::kCudnn) return Status::Ok();
  return Status(ErrorCode::kInternal,
                "AttentionImpl::kCudnn goes through cudnn_attention.h, not these launchers");
}

}  // namespace

size_t AttentionScratchFloats(int batch, int seq, int heads) {
  return static_cast<size_t>(batch) * heads * seq;
}

// ---- launchers

template <typename T>
Status AttentionForward(T* out, float* lse, const T* qkv, int batch, int seq, int heads,
                        int kv_heads, int head_dim, AttentionImpl impl, cudaStream_t stream,
                        bool causal) {
  Geometry g{batch, seq, heads, kv_heads, head_dim, causal};
  BM_TRY(CheckGeometry(g));
  BM_TRY(RefuseCudnn(impl));
  if constexpr (kSixteenBit<T>) {
    if (impl == AttentionImpl::kAuto && FlashAttentionSupports(head_dim)) {
      return FlashAttentionForward(out, lse, qkv, batch, seq, heads, kv_heads, head_dim, stream,
                                   causal);
    }
  }
  size_t rows = static_cast<size_t>(batch) * heads * seq;
  if (rows == 0) return Status::Ok();
  RefForwardKernel<T>
      <<<CeilDiv(rows, 8), 256, 0, stream>>>(out, lse, qkv, g, 1.0f / std::sqrt(float(head_dim)));
  BM_LAUNCH_CHECK("RefForwardKernel", "B={} T={} H={} Hkv={} D={} causal={}", batch, seq, heads,
                  kv_heads, head_dim, causal);
  return Status::Ok();
}

template <typename T>
Status AttentionBackward(T* dqkv, float* scratch, const T* dout, const T* out, const T* qkv,
                         const float* lse, int batch, int seq, int heads, int kv_heads,
                         int head_dim, AttentionImpl impl, cudaStream_t stream, bool causal) {
  Geometry g{batch, seq, heads, kv_heads, head_dim, causal};
  BM_TRY(CheckGeometry(g));
  BM_TRY(RefuseCudnn(impl));
  size_t rows = static_cast<size_t>(batch) * heads * seq;
  if (rows == 0) return Status::Ok();
  float* delta = scratch;
  DeltaKernel<T><<<CeilDiv(rows, 8), 256, 0, stream>>>(delta, dout, out, g);
  BM_LAUNCH_CHECK("DeltaKernel", "B={} T={} H={} D={}", batch, seq, heads, head_dim);
  if constexpr (kSixteenBit<T>) {
    if (impl == AttentionImpl::kAuto && FlashAttentionSupports(head_dim)) {
      return FlashAttentionBackward(dqkv, dout, qkv, lse, delta, batch, seq, heads, kv_heads,
                                    head_dim, stream, causal);
    }
  }
  float scale = 1.0f / std::sqrt(float(head_dim));
  RefBackwardQKernel<T>
      <<<CeilDiv(rows, 8), 256, 0, stream>>>(dqkv, dout, qkv, lse, delta, g, scale);
  BM_LAUNCH_CHECK("RefBackwardQKernel", "B={} T={} H={} Hkv={} D={} causal={}", batch, seq, heads,
                  kv_heads, head_dim, causal);
  size_t kv_rows = static_cast<size_t>(batch) * kv_heads * seq;
  RefBackwardKVKernel<T>
      <<<CeilDiv(kv_rows, 8), 256, 0, stream>>>(dqkv, dout, qkv, lse, delta, g, scale);
  BM_LAUNCH_CHECK("RefBackwardKVKernel", "B={} T={} H={} Hkv={} D={}", batch, seq, heads, kv_heads,
                  head_dim);
  return Status::Ok();
}

template Status AttentionForward<float>(float*, float*, const float*, int, int, int, int, int,
                                        AttentionImpl, cudaStream_t, bool);
template Status AttentionForward<bf16>(bf16*, float*, const bf16*, int, int, int, int, int,
                                       AttentionImpl, cudaStream_t, bool);
template Status AttentionForward<fp16>(fp16*, float*, const fp16*, int, int, int, int, int,
                                       AttentionImpl, cudaStream_t, bool);
template Status AttentionBackward<float>(float*, float*, const float*, const float*, const float*,
                                         const float*, int, int, int, int, int, AttentionImpl,
                                         cudaStream_t, bool);
template Status AttentionBackward<bf16>(bf16*, float*, const bf16*, const bf16*, const bf16*,
                                        const float*, int, int, int, int, int, AttentionImpl,
                                        cudaStream_t, bool);
template Status AttentionBackward<fp16>(fp16*, float*, const fp16*, const fp16*, const fp16*,
                                        const float*, int, int, int, int, int, AttentionImpl,
                                        cudaStream_t, bool);

// ---- CPU twins: the textbook formulas, one (b, h) at a time, with a T-length score row.

void AttentionForwardCpu(float* out, float* lse, const float* qkv, int batch, int seq, int heads,
                         int kv_heads, int head_dim, bool causal) {
  Geometry g{batch, seq, heads, kv_heads, head_dim, causal};
  double scale = 1.0 / std::sqrt(double(head_dim));
  std::vector<double> p(seq);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      int hk = h / (heads / kv_heads);
      for (int t = 0; t < seq; ++t) {
        const float* q = qkv + g.QOffset(b * seq + t, h);
        double m = -INFINITY;
        for (int s = 0; s < g.KeyEnd(t); ++s) {
          const float* k = qkv + g.KOffset(b * seq + s, hk);
          double dot = 0.0;
          for (int i = 0; i < head_dim; ++i) dot += double(q[i]) * k[i];
          p[s] = dot * scale;
          m = std::fmax(m, p[s]);
        }
        double l = 0.0;
        for (int s = 0; s < g.KeyEnd(t); ++s) l += (p[s] = std::exp(p[s] - m));
        float* o = out + g.OOffset(b * seq + t, h);
        for (int i = 0; i < head_dim; ++i) {
          double acc = 0.0;
          for (int s = 0; s < g.KeyEnd(t); ++s) acc += p[s] * qkv[g.VOffset(b * seq + s, hk) + i];
          o[i] = static_cast<float>(acc / l);
        }
        lse[g.LseIndex(b, h, t)] = static_cast<float>(m + std::log(l));
      }
    }
  }
}

void AttentionBackwardCpu(float* dqkv, const float* dout, const float* out, const float* qkv,
                          const float* lse, int batch, int seq, int heads, int kv_heads,
                          int head_dim, bool causal) {
  Geometry g{batch, seq, heads, kv_heads, head_dim, causal};
  double scale = 1.0 / std::sqrt(double(head_dim));
  size_t total = static_cast<size_t>(batch) * seq * g.QkvStride();
  std::vector<double> acc(total, 0.0);
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      int hk = h / (heads / kv_heads);
      for (int t = 0; t < seq; ++t) {
        int row = b * seq + t;
        const float* q = qkv + g.QOffset(row, h);
        const float* go = dout + g.OOffset(row, h);
        const float* o = out + g.OOffset(row, h);
        double delta = 0.0;
        for (int i = 0; i < head_dim; ++i) delta += double(go[i]) * o[i];
        for (int s = 0; s < g.KeyEnd(t); ++s) {
          int krow = b * seq + s;
          const float* k = qkv + g.KOffset(krow, hk);
          const float* v = qkv + g.VOffset(krow, hk);
          double dot = 0.0, dp = 0.0;
          for (int i = 0; i < head_dim; ++i) {
            dot += double(q[i]) * k[i];
            dp += double(go[i]) * v[i];
          }
          double p = std::exp(dot * scale - lse[g.LseIndex(b, h, t)]);
          double ds = p * (dp - delta) * scale;
          for (int i = 0; i < head_dim; ++i) {
            acc[g.QOffset(row, h) + i] += ds * k[i];
            acc[g.KOffset(krow, hk) + i] += ds * q[i];
            acc[g.VOffset(krow, hk) + i] += p * go[i];
          }
        }
      }
    }
  }
  for (size_t i = 0; i < total; ++i) dqkv[i] = static_cast<float>(acc[i]);
}

}  // namespace bm::train::cuda
