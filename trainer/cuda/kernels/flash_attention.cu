// Tensor-core flash attention (bf16 or fp16 in, fp32 accumulation) for head_dim 64 and 128.
// Everything is templated on the element type T (bf16 or fp16): only the mma instruction's
// operand type and the float-to-pair conversion differ.
//
// mma.sync.m16n8k16 fragments, lane = 4*g + q (g = lane / 4, q = lane % 4):
//   A 16x16 (row-major):  a0 = A[g][2q..2q+1]   a1 = A[g+8][2q..]   a2 = A[g][2q+8..]  a3 =
//   A[g+8][2q+8..] B 16x8  (B[k][n]):    b0 = B[2q..2q+1][g]   b1 = B[2q+8..2q+9][g] C 16x8: c0,c1
//   = C[g][2q..2q+1]   c2,c3 = C[g+8][2q..2q+1]
// Two adjacent C tiles (16 x 16 of scores) are exactly one A fragment, so probabilities go
// from one product into the next without leaving registers.
//
// Forward: a block of 4 warps owns 64 query rows (16 per warp) and walks the key tiles of 64
// up to the diagonal (causal) or to the end (not), with the online softmax. The last tiles of
// queries and keys may be ragged (T not a multiple of 64): missing rows are zero-filled in shared
// memory, masked out of the softmax and never written. Backward: dQ in one kernel (rows = queries,
// over key tiles), dK and dV in another (rows = keys, over query tiles and over the query
// heads of the group): no atomics, deterministic.
#include <cstdint>
#include <type_traits>

#include "trainer/cuda/check.h"
#include "trainer/cuda/kernels/common.cuh"
#include "trainer/cuda/kernels/flash_attention.cuh"

namespace bm::train::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kRows = 16 * kWarps;  // query rows (forward, dQ) or key rows (dK/dV) per block
constexpr int kKeyTile = 64;        // keys per tile (forward, dQ)
constexpr float kLog2e = 1.4426950408889634f;

template <typename T>
__device__ __forceinline__ void Mma(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, bf16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<T, fp16>, "flash attention: bf16 or fp16");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats as one register of two T (lo in the low half), rounded to nearest even.
template <typename T>
__device__ __forceinline__ uint32_t Pack(float lo, float hi) {
  if constexpr (std::is_same_v<T, bf16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}
__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// Four 8x8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j.
__device__ __forceinline__ void LdMatrixX4(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p)));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p)));
}

// Copies rows [row0, row0 + rows) of a head (D columns at `col` of a row-major matrix with
// `ld` elements per row) into shared memory with stride D + 8, 16 bytes at a time through
// cp.async; rows >= seq are zero-filled. The caller waits (CpAsyncWait) and syncs.
template <int D, typename T>
__device__ __forceinline__ void LoadTile(T* dst, const T* src, size_t ld, int row0, int rows,
                                         int seq) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int i = threadIdx.x; i < rows * kChunks; i += blockDim.x) {
    int r = i / kChunks, c = (i % kChunks) * 8;
    bool in = row0 + r < seq;
    const T* g = src + (in ? (row0 + r) * ld + c : 0);
    asm volatile(
        "cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(dst + r * (D + 8) + c)),
        "l"(g), "r"(in ? 16 : 0));
  }
  asm volatile("cp.async.commit_group;\n" ::);
}
// Waits until at most N committed cp.async groups are still in flight.
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// A fragments of a 16 x D row-major tile in shared memory (stride D + 8), rows r0..r0+15.
template <int D, typename T>
__device__ __forceinline__ void LoadAFrags(uint32_t (*a)[4], const T* tile, int r0) {
  int lane = threadIdx.x % 32, j = lane / 8, row = lane % 8;
  constexpr int S = D + 8;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    LdMatrixX4(a[ks], tile + (r0 + (j % 2) * 8 + row) * S + ks * 16 + (j / 2) * 8);
  }
}

// acc[NT][4] (16 x 8*NT) += A (16 x D, fragments) * Bt^T where Bt is a row-major tile of NT*8
// rows and D columns in shared memory (rows = output columns): "scores = Q K^T".
template <int D, int NT, typename T>
__device__ __forceinline__ void MmaABt(float (*acc)[4], const uint32_t (*a)[4], const T* bt) {
  int lane = threadIdx.x % 32, j = lane / 8, row = lane % 8;
  constexpr int S = D + 8;
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      uint32_t b[4];
      LdMatrixX4(b, bt + ((nt + j / 2) * 8 + row) * S + ks * 16 + (j % 2) * 8);
      Mma<T>(acc[nt], a[ks], b[0], b[1]);
      Mma<T>(acc[nt + 1], a[ks], b[2], b[3]);
    }
  }
}

// acc[D/8][4] (16 x D) += P (16 x 16*KT, given as C fragments p[2*KT][4]) * B where B is a
// row-major tile of 16*KT rows and D columns in shared memory: "out = P V".
template <int D, int KT, typename T>
__device__ __forceinline__ void MmaPB(float (*acc)[4], const float (*p)[4], const T* b) {
  int lane = threadIdx.x % 32, j = lane / 8, row = lane % 8;
  constexpr int S = D + 8;
#pragma unroll
  for (int kk = 0; kk < KT; ++kk) {
    uint32_t a[4] = {Pack<T>(p[2 * kk][0], p[2 * kk][1]), Pack<T>(p[2 * kk][2], p[2 * kk][3]),
                     Pack<T>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                     Pack<T>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
    for (int dt = 0; dt < D / 8; dt += 2) {
      uint32_t bb[4];
      LdMatrixX4Trans(bb, b + (kk * 16 + (j % 2) * 8 + row) * S + (dt + j / 2) * 8);
      Mma<T>(acc[dt], a, bb[0], bb[1]);
      Mma<T>(acc[dt + 1], a, bb[2], bb[3]);
    }
  }
}

struct Geo {
  int seq, heads, kv_heads;
  size_t ld;    // elements per qkv row
  bool causal;  // key s is seen by query t only when s <= t
  // The last key tile the query rows [q0, q0 + kRows) see.
  __device__ int LastKeyTile(int q0) const {
    int last = (seq - 1) / kKeyTile;
    return causal ? min((q0 + kRows - 1) / kKeyTile, last) : last;
  }
  __device__ bool Masked(int query, int key) const { return key >= seq || (causal && key > query); }
};

// ---- kernels
//
// Every loop over tiles is double-buffered: while tile i is multiplied, tile i + 1 is on its way
// through cp.async into the other buffer.

template <typename T, int D>
__global__ void __launch_bounds__(128)
    FlashForwardKernel(T* out, float* lse, const T* qkv, Geo geo, float scale_log2) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int S = D + 8;
  T* buf = reinterpret_cast<T*>(smem_raw);  // [2][K tile, V tile]
  auto sk = [&](int b) { return buf + b * 2 * kKeyTile * S; };
  auto sv = [&](int b) { return buf + b * 2 * kKeyTile * S + kKeyTile * S; };
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  int qtile = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y;  // longest rows first
  int b = bh / geo.heads, h = bh % geo.heads, hk = h / (geo.heads / geo.kv_heads);
  const T* base = qkv + static_cast<size_t>(b) * geo.seq * geo.ld;
  const T* kbase = base + static_cast<size_t>(geo.heads + hk) * D;
  const T* vbase = base + static_cast<size_t>(geo.heads + geo.kv_heads + hk) * D;
  int q0 = qtile * kRows;

  LoadTile<D>(sk(1), base + static_cast<size_t>(h) * D, geo.ld, q0, kRows, geo.seq);
  LoadTile<D>(sk(0), kbase, geo.ld, 0, kKeyTile, geo.seq);
  LoadTile<D>(sv(0), vbase, geo.ld, 0, kKeyTile, geo.seq);
  CpAsyncWait<2>();  // Q has landed
  __syncthreads();
  uint32_t qf[D / 16][4];
  LoadAFrags<D>(qf, sk(1), warp * 16);
  __syncthreads();  // buffer 1 is free for the next tile

  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  int last_tile = geo.LastKeyTile(q0);
  for (int kt = 0; kt <= last_tile; ++kt) {
    int k0 = kt * kKeyTile, cur = kt & 1;
    if (kt < last_tile) {
      LoadTile<D>(sk(cur ^ 1), kbase, geo.ld, k0 + kKeyTile, kKeyTile, geo.seq);
      LoadTile<D>(sv(cur ^ 1), vbase, geo.ld, k0 + kKeyTile, kKeyTile, geo.seq);
      CpAsyncWait<2>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    float s[8][4] = {};
    MmaABt<D, 8>(s, qf, sk(cur));
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = k0 + nt * 8 + 2 * q + (e & 1);
        int r = e / 2;
        float v = s[nt][e] * scale_log2;
        if (geo.Masked(row[r], col)) v = -INFINITY;
        s[nt][e] = v;
        mx[r] = fmaxf(mx[r], v);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    float alpha[2], mnew[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mnew[r] = fmaxf(m[r], mx[r]);
      float safe = mnew[r] == -INFINITY ? 0.0f : mnew[r];
      alpha[r] = exp2f(m[r] - safe);
      m[r] = mnew[r];
      mnew[r] = safe;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float p = exp2f(s[nt][e] - mnew[e / 2]);
        s[nt][e] = p;
        l[e / 2] += p;
      }
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      o[dt][0] *= alpha[0];
      o[dt][1] *= alpha[0];
      o[dt][2] *= alpha[1];
      o[dt][3] *= alpha[1];
    }
    MmaPB<D, 4>(o, s, sv(cur));
    __syncthreads();  // this buffer is refilled two tiles on
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  size_t out_ld = static_cast<size_t>(geo.heads) * D;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= geo.seq) continue;
    T* orow = out + (static_cast<size_t>(b) * geo.seq + row[r]) * out_ld + h * D;
    float inv = 1.0f / l[r];
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(orow + dt * 8 + 2 * q) =
          Pack<T>(o[dt][2 * r] * inv, o[dt][2 * r + 1] * inv);
    }
    if (q == 0) {
      lse[(static_cast<size_t>(b) * geo.heads + h) * geo.seq + row[r]] =
          (m[r] + log2f(l[r])) / kLog2e;
    }
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(128)
    FlashBackwardQKernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* delta,
                         Geo geo, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int S = D + 8;
  T* buf = reinterpret_cast<T*>(smem_raw);
  auto sk = [&](int b) { return buf + b * 2 * kKeyTile * S; };
  auto sv = [&](int b) { return buf + b * 2 * kKeyTile * S + kKeyTile * S; };
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  int qtile = gridDim.x - 1 - blockIdx.x, bh = blockIdx.y;  // longest rows first
  int b = bh / geo.heads, h = bh % geo.heads, hk = h / (geo.heads / geo.kv_heads);
  const T* base = qkv + static_cast<size_t>(b) * geo.seq * geo.ld;
  const T* kbase = base + static_cast<size_t>(geo.heads + hk) * D;
  const T* vbase = base + static_cast<size_t>(geo.heads + geo.kv_heads + hk) * D;
  size_t out_ld = static_cast<size_t>(geo.heads) * D;
  const T* dobase = dout + static_cast<size_t>(b) * geo.seq * out_ld;
  int q0 = qtile * kRows;
  float scale_log2 = scale * kLog2e;

  LoadTile<D>(sk(1), base + static_cast<size_t>(h) * D, geo.ld, q0, kRows, geo.seq);
  LoadTile<D>(sv(1), dobase + static_cast<size_t>(h) * D, out_ld, q0, kRows, geo.seq);
  LoadTile<D>(sk(0), kbase, geo.ld, 0, kKeyTile, geo.seq);
  LoadTile<D>(sv(0), vbase, geo.ld, 0, kKeyTile, geo.seq);
  CpAsyncWait<2>();
  __syncthreads();
  uint32_t qf[D / 16][4], dof[D / 16][4];
  LoadAFrags<D>(qf, sk(1), warp * 16);
  LoadAFrags<D>(dof, sv(1), warp * 16);
  __syncthreads();

  int row[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
  float lse2[2], dlt[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    size_t i = (static_cast<size_t>(b) * geo.heads + h) * geo.seq + row[r];
    lse2[r] = row[r] < geo.seq ? lse[i] * kLog2e : 0.0f;
    dlt[r] = row[r] < geo.seq ? delta[i] : 0.0f;
  }
  float dq[D / 8][4] = {};
  int last_tile = geo.LastKeyTile(q0);
  for (int kt = 0; kt <= last_tile; ++kt) {
    int k0 = kt * kKeyTile, cur = kt & 1;
    if (kt < last_tile) {
      LoadTile<D>(sk(cur ^ 1), kbase, geo.ld, k0 + kKeyTile, kKeyTile, geo.seq);
      LoadTile<D>(sv(cur ^ 1), vbase, geo.ld, k0 + kKeyTile, kKeyTile, geo.seq);
      CpAsyncWait<2>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    float s[8][4] = {}, dp[8][4] = {};
    MmaABt<D, 8>(s, qf, sk(cur));
    MmaABt<D, 8>(dp, dof, sv(cur));
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int col = k0 + nt * 8 + 2 * q + (e & 1);
        int r = e / 2;
        bool valid = !geo.Masked(row[r], col) && row[r] < geo.seq;
        float p = valid ? exp2f(s[nt][e] * scale_log2 - lse2[r]) : 0.0f;
        s[nt][e] = p * (dp[nt][e] - dlt[r]);  // dS (the scale is applied at the end)
      }
    }
    MmaPB<D, 4>(dq, s, sk(cur));
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (row[r] >= geo.seq) continue;
    T* dst = dqkv + (static_cast<size_t>(b) * geo.seq + row[r]) * geo.ld + h * D;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(dst + dt * 8 + 2 * q) =
          Pack<T>(dq[dt][2 * r] * scale, dq[dt][2 * r + 1] * scale);
    }
  }
}

// Rows = keys. Query tiles of QT rows; the heads of the group in turn.
template <typename T, int D, int QT>
__global__ void __launch_bounds__(128)
    FlashBackwardKVKernel(T* dqkv, const T* dout, const T* qkv, const float* lse,
                          const float* delta, Geo geo, float scale) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int S = D + 8;
  T* sk = reinterpret_cast<T*>(smem_raw);
  T* sv = sk + kRows * S;
  T* qbuf = sv + kRows * S;                                   // [2][Q tile, dO tile]
  float* fbuf = reinterpret_cast<float*>(qbuf + 4 * QT * S);  // [2][lse, delta]
  auto sq = [&](int b) { return qbuf + b * 2 * QT * S; };
  auto sdo = [&](int b) { return qbuf + b * 2 * QT * S + QT * S; };
  auto slse = [&](int b) { return fbuf + b * 2 * QT; };
  auto sdelta = [&](int b) { return fbuf + b * 2 * QT + QT; };
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  int ktile = blockIdx.x, bh = blockIdx.y;
  int b = bh / geo.kv_heads, hk = bh % geo.kv_heads;
  int group = geo.heads / geo.kv_heads;
  const T* base = qkv + static_cast<size_t>(b) * geo.seq * geo.ld;
  size_t out_ld = static_cast<size_t>(geo.heads) * D;
  const T* dobase = dout + static_cast<size_t>(b) * geo.seq * out_ld;
  int k0 = ktile * kRows;
  float scale_log2 = scale * kLog2e;
  int q_first = geo.causal ? k0 : 0;              // the first query that sees these keys
  int tiles = (geo.seq - q_first + QT - 1) / QT;  // query tiles from there on
  int total = group * tiles;
  auto stage = [&](int it, int bf) {
    int h = hk * group + it / tiles, t0 = q_first + (it % tiles) * QT;
    LoadTile<D>(sq(bf), base + static_cast<size_t>(h) * D, geo.ld, t0, QT, geo.seq);
    LoadTile<D>(sdo(bf), dobase + static_cast<size_t>(h) * D, out_ld, t0, QT, geo.seq);
    for (int i = threadIdx.x; i < QT; i += blockDim.x) {
      size_t idx = (static_cast<size_t>(b) * geo.heads + h) * geo.seq + t0 + i;
      bool in = t0 + i < geo.seq;
      slse(bf)[i] = in ? lse[idx] * kLog2e : 0.0f;
      sdelta(bf)[i] = in ? delta[idx] : 0.0f;
    }
  };

  LoadTile<D>(sk, base + static_cast<size_t>(geo.heads + hk) * D, geo.ld, k0, kRows, geo.seq);
  LoadTile<D>(sv, base + static_cast<size_t>(geo.heads + geo.kv_heads + hk) * D, geo.ld, k0, kRows,
              geo.seq);
  stage(0, 0);
  int key[2] = {k0 + warp * 16 + g, k0 + warp * 16 + g + 8};
  float dk[D / 8][4] = {}, dv[D / 8][4] = {};
  for (int it = 0; it < total; ++it) {
    int cur = it & 1;
    int t0 = q_first + (it % tiles) * QT;
    if (it + 1 < total) {
      stage(it + 1, cur ^ 1);
      CpAsyncWait<2>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();
    const float* lse_t = slse(cur);
    const float* delta_t = sdelta(cur);
    uint32_t kf[D / 16][4];
    LoadAFrags<D>(kf, sk, warp * 16);
    float s[QT / 8][4] = {};
    MmaABt<D, QT / 8>(s, kf, sq(cur));  // S^T = K Q^T
    uint32_t vf[D / 16][4];
    LoadAFrags<D>(vf, sv, warp * 16);
    float dp[QT / 8][4] = {};
    MmaABt<D, QT / 8>(dp, vf, sdo(cur));  // dP^T = V dO^T
#pragma unroll
    for (int nt = 0; nt < QT / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int ci = nt * 8 + 2 * q + (e & 1);
        int t = t0 + ci;
        int r = e / 2;
        bool valid = t < geo.seq && !geo.Masked(t, key[r]);
        float p = valid ? exp2f(s[nt][e] * scale_log2 - lse_t[ci]) : 0.0f;
        s[nt][e] = p;                               // P^T
        dp[nt][e] = p * (dp[nt][e] - delta_t[ci]);  // dS^T
      }
    }
    MmaPB<D, QT / 16>(dv, s, sdo(cur));  // dV += P^T dO
    MmaPB<D, QT / 16>(dk, dp, sq(cur));  // dK += dS^T Q
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (key[r] >= geo.seq) continue;
    T* row = dqkv + (static_cast<size_t>(b) * geo.seq + key[r]) * geo.ld;
    T* gk = row + static_cast<size_t>(geo.heads + hk) * D;
    T* gv = row + static_cast<size_t>(geo.heads + geo.kv_heads + hk) * D;
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt) {
      *reinterpret_cast<uint32_t*>(gk + dt * 8 + 2 * q) =
          Pack<T>(dk[dt][2 * r] * scale, dk[dt][2 * r + 1] * scale);
      *reinterpret_cast<uint32_t*>(gv + dt * 8 + 2 * q) = Pack<T>(dv[dt][2 * r], dv[dt][2 * r + 1]);
    }
  }
}

constexpr size_t kElem = 2;  // bytes of bf16 and fp16

template <int D>
size_t ForwardSmem() {  // two buffers of (K, V) tiles
  return 4 * kKeyTile * (D + 8) * kElem;
}
template <int D, int QT>
size_t KVSmem() {  // K, V, and two buffers of (Q, dO, lse, delta)
  return (2 * kRows + 4 * QT) * (D + 8) * kElem + 4 * QT * sizeof(float);
}

template <typename T, int D>
Status Forward(T* out, float* lse, const T* qkv, int batch, int seq, int heads, int kv_heads,
               cudaStream_t stream, bool causal) {
  Geo geo{seq, heads, kv_heads, static_cast<size_t>(heads + 2 * kv_heads) * D, causal};
  size_t smem = ForwardSmem<D>();
  BM_CUDA_CHECK(cudaFuncSetAttribute(FlashForwardKernel<T, D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
                "flash forward smem {} D={}", smem, D);
  dim3 grid(CeilDiv(seq, kRows), batch * heads);
  float scale_log2 = kLog2e / sqrtf(static_cast<float>(D));
  FlashForwardKernel<T, D><<<grid, 128, smem, stream>>>(out, lse, qkv, geo, scale_log2);
  BM_LAUNCH_CHECK("FlashForwardKernel", "B={} T={} H={} Hkv={} D={}", batch, seq, heads, kv_heads,
                  D);
  return Status::Ok();
}

template <typename T, int D, int QT>
Status Backward(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* delta,
                int batch, int seq, int heads, int kv_heads, cudaStream_t stream, bool causal) {
  Geo geo{seq, heads, kv_heads, static_cast<size_t>(heads + 2 * kv_heads) * D, causal};
  float scale = 1.0f / sqrtf(static_cast<float>(D));
  size_t smem_q = ForwardSmem<D>();
  BM_CUDA_CHECK(cudaFuncSetAttribute(FlashBackwardQKernel<T, D>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_q)),
                "flash dQ smem {} D={}", smem_q, D);
  FlashBackwardQKernel<T, D><<<dim3(CeilDiv(seq, kRows), batch * heads), 128, smem_q, stream>>>(
      dqkv, dout, qkv, lse, delta, geo, scale);
  BM_LAUNCH_CHECK("FlashBackwardQKernel", "B={} T={} H={} Hkv={} D={}", batch, seq, heads, kv_heads,
                  D);
  size_t smem_kv = KVSmem<D, QT>();
  BM_CUDA_CHECK(cudaFuncSetAttribute(FlashBackwardKVKernel<T, D, QT>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_kv)),
                "flash dK/dV smem {} D={}", smem_kv, D);
  FlashBackwardKVKernel<T, D, QT>
      <<<dim3(CeilDiv(seq, kRows), batch * kv_heads), 128, smem_kv, stream>>>(dqkv, dout, qkv, lse,
                                                                              delta, geo, scale);
  BM_LAUNCH_CHECK("FlashBackwardKVKernel", "B={} T={} H={} Hkv={} D={}", batch, seq, heads,
                  kv_heads, D);
  return Status::Ok();
}

}  // namespace

// ---- launchers

bool FlashAttentionSupports(int head_dim) { return head_dim == 64 || head_dim == 128; }

template <typename T>
Status FlashAttentionForward(T* out, float* lse, const T* qkv, int batch, int seq, int heads,
                             int kv_heads, int head_dim, cudaStream_t stream, bool causal) {
  if (batch * seq == 0) return Status::Ok();
  if (head_dim == 64)
    return Forward<T, 64>(out, lse, qkv, batch, seq, heads, kv_heads, stream, causal);
  if (head_dim == 128)
    return Forward<T, 128>(out, lse, qkv, batch, seq, heads, kv_heads, stream, causal);
  return Errorf(ErrorCode::kUnsupported, "flash attention: head_dim {} (64 or 128)", head_dim);
}

template <typename T>
Status FlashAttentionBackward(T* dqkv, const T* dout, const T* qkv, const float* lse,
                              const float* delta, int batch, int seq, int heads, int kv_heads,
                              int head_dim, cudaStream_t stream, bool causal) {
  if (batch * seq == 0) return Status::Ok();
  if (head_dim == 64) {
    return Backward<T, 64, 64>(dqkv, dout, qkv, lse, delta, batch, seq, heads, kv_heads, stream,
                               causal);
  }
  if (head_dim == 128) {
    return Backward<T, 128, 32>(dqkv, dout, qkv, lse, delta, batch, seq, heads, kv_heads, stream,
                                causal);
  }
  return Errorf(ErrorCode::kUnsupported, "flash attention: head_dim {} (64 or 128)", head_dim);
}

#define BM_INSTANTIATE(T)                                                                       \
  template Status FlashAttentionForward<T>(T*, float*, const T*, int, int, int, int, int,       \
                                           cudaStream_t, bool);                                 \
  template Status FlashAttentionBackward<T>(T*, const T*, const T*, const float*, const float*, \
                                            int, int, int, int, int, cudaStream_t, bool);
BM_INSTANTIATE(bf16)
BM_INSTANTIATE(fp16)
#undef BM_INSTANTIATE

}  // namespace bm::train::cuda
