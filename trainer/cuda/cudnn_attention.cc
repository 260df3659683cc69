// cuDNN fused attention through the backend graph API. The graphs are the ones cuDNN's
// flash-attention engines recognise (the pattern cudnn-frontend's SDPA nodes emit):
//
//   forward:  S = Q·Kᵀ, S *= scale, causal select (row >= col, else lowest float; not when the
//             shape is not causal),
//             M = max_row(S), E = exp(S - M), Z = sum_row(E), lse = M + log Z,
//             P = E / Z (16-bit), O = P·V
//   backward: sum_dO_O = sum_row(dO * O), S as above, E = exp(S - lse), dV = Eᵀ·dO,
//             dP = dO·Vᵀ, dS = E * (dP - sum_dO_O) * scale, dK = dSᵀ·Q, dQ = dS·K
//
// With GQA the dK/dV products are per query head and a head reduction sums each group. No
// fp32 dQ accumulator tensor is given, which selects the deterministic backward engines (they
// keep dP in the workspace); the backward is therefore run over blocks of keys (header). The
// accumulated variant (CudnnAttentionAccumulatedBackward: the survey's, and the model's with
// RunSpec::deterministic_attention off) gives one (dQ = dS·K into it, then to dQ), which
// selects the non-deterministic engines.
#include "trainer/cuda/cudnn_attention.h"

#include <fmt/format.h>

#include <algorithm>

#include "trainer/cuda/check.h"
#include "trainer/cuda/cudnn_graph.h"
#include "trainer/cuda/kernels/bit_checksum.cuh"
#include "trainer/cuda/kernels/residual.cuh"

#if BENCHMAKE_HAVE_CUDNN
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <tuple>
#include <vector>
#endif

namespace bm::train::cuda {

// The backward's key blocks: [k0, k0 + keys) for k0 = 0, chunk, 2 chunk, ... At most
// key_chunk keys and at most half the sequence (a multiple of 64, at least 64), so that no
// call holds the whole T x T; key_chunk 0 asks for one call (kCudnnKeyChunkAuto: the default).
int CudnnKeysPerCall(const AttentionShape& s) {
  if (s.key_chunk == 0) return s.seq;
  int half = std::max(64, s.seq / 2 / 64 * 64);
  return std::min({s.key_chunk < 0 ? kCudnnKeyChunk : s.key_chunk, half, s.seq});
}

#if !BENCHMAKE_HAVE_CUDNN

bool CudnnAttentionBuilt() { return false; }
std::string CudnnLibraryVersion() { return ""; }
bool CudnnAttentionUsable(const AttentionShape&) { return false; }

namespace {
Status NotBuilt() {
  return Status(ErrorCode::kUnsupported,
                "cuDNN attention: this build has no cuDNN (BENCHMAKE_HAVE_CUDNN is off); use "
                "attention = \"flash\"");
}
}  // namespace

Result<size_t> CudnnAttentionWorkspaceBytes(const AttentionShape&) { return NotBuilt(); }
Status CudnnAttentionForward(void*, float*, const void*, const AttentionShape&, void*, size_t,
                             cudaStream_t) {
  return NotBuilt();
}
Status CudnnAttentionBackward(void*, const void*, const void*, const void*, const float*,
                              const AttentionShape&, void*, size_t, cudaStream_t) {
  return NotBuilt();
}
Result<size_t> CudnnAttentionAccumulatedWorkspaceBytes(const AttentionShape&) { return NotBuilt(); }
Status CudnnAttentionAccumulatedBackward(void*, const void*, const void*, const void*, const float*,
                                         const AttentionShape&, void*, size_t, cudaStream_t) {
  return NotBuilt();
}
Status CudnnAttentionBackwardSurvey(const AttentionShape&, void*, const void*, const void*,
                                    const void*, const float*, int, cudaStream_t,
                                    const std::function<void(const CudnnBackwardCandidate&)>&) {
  return NotBuilt();
}

#else

bool CudnnAttentionBuilt() { return true; }
std::string CudnnLibraryVersion() {  // cuDNN 9: major * 10000 + minor * 100 + patch
  const size_t v = cudnnGetVersion();
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

namespace {

std::string Describe(const AttentionShape& s) {
  return fmt::format("B={} T={} H={} Hkv={} D={} {}{}", s.batch, s.seq, s.heads, s.kv_heads,
                     s.head_dim, s.fp16 ? "fp16" : "bf16", s.causal ? "" : " non-causal");
}

// The 16-bit tensors' type (scores and statistics stay fp32).
cudnnDataType_t IoType(const AttentionShape& s) {
  return s.fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

// Unique ids of the tensors the variant pack names; virtual tensors count up from kVirtual.
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kLowest,
  kDo,
  kDq,
  kDk,
  kDv,
  kOne,
  kDqAccum,
  kVirtual = 100
};

// Layout of the packed qkv and of out/lse as cuDNN [B, H, rows, D] tensors: a graph covers
// `tq` query rows and `tk` keys of sequences `t` long (strides are the whole sequence's).
struct Layout {
  int64_t b, t, h, hk, d, w, tq, tk;
  Layout(const AttentionShape& s, int64_t rows, int64_t keys)
      : b(s.batch),
        t(s.seq),
        h(s.heads),
        hk(s.kv_heads),
        d(s.head_dim),
        w((s.heads + 2 * s.kv_heads) * static_cast<int64_t>(s.head_dim)),
        tq(rows),
        tk(keys) {}
  Dims QkvStrides() const { return {t * w, d, w, 1}; }   // [B, heads, T, D] in qkv
  Dims QkvTStrides() const { return {t * w, d, 1, w}; }  // [B, heads, D, T] in qkv
  Dims OutStrides() const { return {t * h * d, d, h * d, 1}; }
  Dims RowStrides() const { return {h * t, t, 1, 1}; }    // lse [B, H, T, 1]
  Dims PackedRows() const { return {h * tq, tq, 1, 1}; }  // virtual [B, H, tq, 1]
  Dims Scores() const { return {b, h, tq, tk}; }
  Dims ScoreStrides() const { return {h * tq * tk, tq * tk, tk, 1}; }
  Dims ScoresT() const { return {b, h, tk, tq}; }  // a transposed view of the scores
  Dims ScoreTStrides() const { return {h * tq * tk, tq * tk, 1, tk}; }
};

// S = scale * Q·Kᵀ with the causal mask applied when `causal` (the start of both graphs).
Status MaskedScores(CudnnGraph& g, const Layout& L, cudnnBackendDescriptor_t q,
                    cudnnBackendDescriptor_t kt, cudnnBackendDescriptor_t scale,
                    cudnnBackendDescriptor_t lowest, bool causal, cudnnBackendDescriptor_t* s_out) {
  cudnnBackendDescriptor_t s, s1, ri, ci, mask, s2;
  BM_TRY(g.Tensor(&s, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Matmul(q, kt, s));
  BM_TRY(g.Tensor(&s1, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_MUL, s, scale, nullptr, s1));
  if (!causal) {
    *s_out = s1;
    return Status::Ok();
  }
  BM_TRY(g.Tensor(&ri, CUDNN_DATA_INT32, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, s1, nullptr, nullptr, ri, CUDNN_DATA_INT32, 2));
  BM_TRY(g.Tensor(&ci, CUDNN_DATA_INT32, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_GEN_INDEX, s1, nullptr, nullptr, ci, CUDNN_DATA_INT32, 3));
  BM_TRY(g.Tensor(&mask, CUDNN_DATA_BOOLEAN, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_CMP_GE, ri, ci, nullptr, mask, CUDNN_DATA_BOOLEAN));
  BM_TRY(g.Tensor(&s2, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_BINARY_SELECT, s1, lowest, mask, s2));
  *s_out = s2;
  return Status::Ok();
}

Status BuildForward(CudnnGraph& g, const AttentionShape& shape) {
  const cudnnDataType_t io = IoType(shape);
  Layout L(shape, shape.seq, shape.seq);
  cudnnBackendDescriptor_t q, kt, v, o, stats, scale, lowest = nullptr, s, mx, sub, e, z, lg, p;
  BM_TRY(g.Tensor(&q, io, {L.b, L.h, L.tq, L.d}, L.QkvStrides(), kQ));
  BM_TRY(g.Tensor(&kt, io, {L.b, L.hk, L.d, L.tk}, L.QkvTStrides(), kK));
  BM_TRY(g.Tensor(&v, io, {L.b, L.hk, L.tk, L.d}, L.QkvStrides(), kV));
  BM_TRY(g.Tensor(&o, io, {L.b, L.h, L.tq, L.d}, L.OutStrides(), kO));
  BM_TRY(g.Tensor(&stats, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.RowStrides(), kStats));
  BM_TRY(g.Scalar(&scale, kScale));
  if (shape.causal) BM_TRY(g.Scalar(&lowest, kLowest));
  BM_TRY(MaskedScores(g, L, q, kt, scale, lowest, shape.causal, &s));
  BM_TRY(g.Tensor(&mx, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.PackedRows()));
  BM_TRY(g.Reduction(CUDNN_REDUCE_TENSOR_MAX, s, mx));
  BM_TRY(g.Tensor(&sub, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_SUB, s, mx, nullptr, sub));
  BM_TRY(g.Tensor(&e, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, nullptr, e));
  BM_TRY(g.Tensor(&z, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.PackedRows()));
  BM_TRY(g.Reduction(CUDNN_REDUCE_TENSOR_ADD, e, z));
  BM_TRY(g.Tensor(&lg, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.PackedRows()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_LOG, z, nullptr, nullptr, lg));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_ADD, mx, lg, nullptr, stats));
  BM_TRY(g.Tensor(&p, io, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_DIV, e, z, nullptr, p));
  BM_TRY(g.Matmul(p, v, o));
  return g.Finalize(false);
}

// dX for the kv heads: the product per query head, then (GQA) summed over each group.
Status KvGradient(CudnnGraph& g, const Layout& L, cudnnDataType_t io, cudnnBackendDescriptor_t a,
                  cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t dx) {
  if (L.h == L.hk) return g.Matmul(a, b, dx);
  cudnnBackendDescriptor_t full;
  BM_TRY(g.Tensor(&full, io, {L.b, L.h, L.tk, L.d}, {L.h * L.tk * L.d, L.tk * L.d, L.d, 1}));
  BM_TRY(g.Matmul(a, b, full));
  return g.Reduction(CUDNN_REDUCE_TENSOR_ADD, full, dx);
}

// The first query that sees key k0: k0 itself (causal), else 0.
int QueryStart(const AttentionShape& s, int k0) { return s.causal ? k0 : 0; }

// The backward for the keys [k0, k0 + keys) and the queries [QueryStart(k0), T). dQ goes into qkv's
// layout (the first block, which has every query) or, partial, into a [B, T, H·D] buffer. With
// `accumulate_dq` (all the keys in one call) the dQ product goes into a non-virtual fp32
// [B, H, T, D] accumulator, F16x16-reordered, and from it to dQ: the graph that selects cuDNN's
// non-deterministic engines (cudnn-frontend's SDPA backward when determinism is not asked for).
Status BuildBackward(CudnnGraph& g, const AttentionShape& shape, int k0, int keys,
                     bool accumulate_dq = false) {
  const cudnnDataType_t io = IoType(shape);
  Layout L(shape, shape.seq - QueryStart(shape, k0), keys);
  cudnnBackendDescriptor_t q, kt, vt, o, stats, scale, lowest = nullptr, one, dout, dq, dk, dv;
  BM_TRY(g.Tensor(&q, io, {L.b, L.h, L.tq, L.d}, L.QkvStrides(), kQ));
  BM_TRY(g.Tensor(&kt, io, {L.b, L.hk, L.d, L.tk}, L.QkvTStrides(), kK));
  BM_TRY(g.Tensor(&vt, io, {L.b, L.hk, L.d, L.tk}, L.QkvTStrides(), kV));
  BM_TRY(g.Tensor(&o, io, {L.b, L.h, L.tq, L.d}, L.OutStrides(), kO));
  BM_TRY(g.Tensor(&stats, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.RowStrides(), kStats));
  BM_TRY(g.Scalar(&scale, kScale));
  if (shape.causal) BM_TRY(g.Scalar(&lowest, kLowest));
  BM_TRY(g.Scalar(&one, kOne));
  BM_TRY(g.Tensor(&dout, io, {L.b, L.h, L.tq, L.d}, L.OutStrides(), kDo));
  BM_TRY(g.Tensor(&dq, io, {L.b, L.h, L.tq, L.d}, k0 == 0 ? L.QkvStrides() : L.OutStrides(), kDq));
  BM_TRY(g.Tensor(&dk, io, {L.b, L.hk, L.tk, L.d}, L.QkvStrides(), kDk));
  BM_TRY(g.Tensor(&dv, io, {L.b, L.hk, L.tk, L.d}, L.QkvStrides(), kDv));
  // sum_dO_O = rowsum(dO * O)
  cudnnBackendDescriptor_t doo, rs, rs1;
  BM_TRY(g.Tensor(&doo, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, L.d}, L.OutStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_MUL, dout, o, nullptr, doo));
  BM_TRY(g.Tensor(&rs, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.PackedRows()));
  BM_TRY(g.Reduction(CUDNN_REDUCE_TENSOR_ADD, doo, rs));
  BM_TRY(g.Tensor(&rs1, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, 1}, L.PackedRows()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_MUL, rs, one, nullptr, rs1));
  // E = exp(S - lse); dV = Eᵀ·dO
  cudnnBackendDescriptor_t s, sub, e, et;
  BM_TRY(MaskedScores(g, L, q, kt, scale, lowest, shape.causal, &s));
  BM_TRY(g.Tensor(&sub, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_SUB, s, stats, nullptr, sub));
  BM_TRY(g.Tensor(&e, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, nullptr, e));
  BM_TRY(g.Tensor(&et, io, L.ScoresT(), L.ScoreTStrides()));
  BM_TRY(g.Reshape(e, et));
  BM_TRY(KvGradient(g, L, io, et, dout, dv));
  // dS = E * (dO·Vᵀ - sum_dO_O) * scale
  cudnnBackendDescriptor_t dp, dp1, dp2, ds0, ds, dst;
  BM_TRY(g.Tensor(&dp, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Matmul(dout, vt, dp));
  BM_TRY(g.Tensor(&dp1, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_MUL, dp, one, nullptr, dp1));
  BM_TRY(g.Tensor(&dp2, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_SUB, dp1, rs1, nullptr, dp2));
  BM_TRY(g.Tensor(&ds0, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_MUL, dp2, e, nullptr, ds0));
  BM_TRY(g.Tensor(&ds, CUDNN_DATA_FLOAT, L.Scores(), L.ScoreStrides()));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_MUL, ds0, scale, nullptr, ds));
  // dK = dSᵀ·Q; dQ = dS·K
  BM_TRY(g.Tensor(&dst, io, L.ScoresT(), L.ScoreTStrides()));
  BM_TRY(g.Reshape(ds, dst));
  BM_TRY(KvGradient(g, L, io, dst, q, dk));
  cudnnBackendDescriptor_t k;
  BM_TRY(g.Tensor(&k, io, {L.b, L.hk, L.tk, L.d}, L.QkvStrides()));
  BM_TRY(g.Reshape(kt, k));
  if (!accumulate_dq) {
    BM_TRY(g.Matmul(ds, k, dq));
    return g.Finalize(true);
  }
  cudnnBackendDescriptor_t acc;
  BM_TRY(g.Tensor(&acc, CUDNN_DATA_FLOAT, {L.b, L.h, L.tq, L.d},
                  {L.h * L.tq * L.d, L.tq * L.d, L.d, 1}, kDqAccum, false,
                  CUDNN_TENSOR_REORDERING_F16x16));
  BM_TRY(g.Matmul(ds, k, acc));
  BM_TRY(g.Pointwise(CUDNN_POINTWISE_IDENTITY, acc, nullptr, nullptr, dq));
  return g.Finalize(false);
}

// The process's handles and plans, per GPU (a handle and its plans belong to the device that
// was current when they were made; built on first use, per shape, direction and key block).
struct Cache {
  std::mutex mu;
  std::map<int, cudnnHandle_t> handles;
  std::map<std::tuple<int, int, int, int, int, int, bool, int, int, bool, bool>,
           std::unique_ptr<CudnnGraph> >
      plans;
};
Cache& TheCache() {
  static Cache* c = new Cache();  // never destroyed: cuDNN may be torn down first at exit
  return *c;
}

// The forward (keys < 0) or the backward for the keys [k0, k0 + keys) (BuildBackward's
// accumulate_dq).
Result<const CudnnGraph*> PlanFor(const AttentionShape& s, int k0, int keys,
                                  bool accumulate_dq = false) {
  if (s.head_dim % 8 != 0 || s.head_dim > 128 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0)
    return Errorf(ErrorCode::kUnsupported, "cuDNN attention does not support {}", Describe(s));
  int device = 0;
  BM_CUDA_CHECK(cudaGetDevice(&device), "the current GPU");
  Cache& c = TheCache();
  std::lock_guard<std::mutex> lock(c.mu);
  cudnnHandle_t& handle = c.handles[device];
  if (handle == nullptr) BM_CUDNN_CHECK(cudnnCreate(&handle), "cuDNN handle on GPU {}", device);
  auto key = std::make_tuple(device, s.batch, s.seq, s.heads, s.kv_heads, s.head_dim, s.fp16, k0,
                             keys, accumulate_dq, s.causal);
  auto it = c.plans.find(key);
  if (it != c.plans.end()) return static_cast<const CudnnGraph*>(it->second.get());
  bool backward = keys >= 0;
  auto g = std::make_unique<CudnnGraph>(
      handle,
      backward ? fmt::format("cuDNN SDPA backward {} keys [{}, {}){}", Describe(s), k0, k0 + keys,
                             accumulate_dq ? " dQ accumulated" : "")
               : fmt::format("cuDNN SDPA forward {}", Describe(s)),
      kVirtual);
  BM_TRY(backward ? BuildBackward(*g, s, k0, keys, accumulate_dq) : BuildForward(*g, s));
  const CudnnGraph* out = g.get();
  c.plans.emplace(key, std::move(g));
  return out;
}

// Bytes of the partial dQ ([B, T, H·D], 16-bit) when there is more than one key block: the start
// of the workspace, rounded up to 256; cuDNN's workspace follows.
size_t PartialDqBytes(const AttentionShape& s) {
  if (CudnnKeysPerCall(s) >= s.seq) return 0;
  return static_cast<size_t>(s.batch) * s.seq * s.heads * s.head_dim * 2;
}
size_t Round256(size_t n) { return (n + 255) / 256 * 256; }

// The backward's by-value scalars (their addresses go into the variant pack).
struct BackwardScalars {
  float scale, lowest = std::numeric_limits<float>::lowest(), one = 1.0f;
  explicit BackwardScalars(const AttentionShape& s)
      : scale(1.0f / std::sqrt(static_cast<float>(s.head_dim))) {}
};
constexpr std::array<int64_t, 12> kBackwardUids = {kQ,      kK,   kV,  kO,  kStats, kScale,
                                                   kLowest, kOne, kDo, kDq, kDk,    kDv};

// The variant pack's pointers of the backward for the keys from k0 (rows k0.. of K, V, dK, dV;
// rows q0 = QueryStart(k0).. of Q, out, dout and lse); dq: where this block's dQ goes (dqkv
// itself for the first block).
std::vector<void*> BackwardPointers(const AttentionShape& s, int k0, BackwardScalars& sc, void* dq,
                                    void* dqkv, const void* dout, const void* out, const void* qkv,
                                    const float* lse) {
  const int q0 = QueryStart(s, k0);
  const size_t hd = static_cast<size_t>(s.head_dim) * 2, k_off = s.heads * hd,
               v_off = (s.heads + s.kv_heads) * hd;
  const size_t width = (s.heads + 2 * s.kv_heads) * hd;        // bytes of a qkv row
  const size_t row = static_cast<size_t>(k0) * width;          // keys' rows in qkv
  const size_t qrow = static_cast<size_t>(q0) * width;         // queries' rows in qkv
  const size_t orow = static_cast<size_t>(q0) * s.heads * hd;  // out, dout
  auto* base = static_cast<char*>(const_cast<void*>(qkv)) + row;
  auto* qbase = static_cast<char*>(const_cast<void*>(qkv)) + qrow;
  auto* dbase = static_cast<char*>(dqkv) + row;
  return {qbase,
          base + k_off,
          base + v_off,
          static_cast<char*>(const_cast<void*>(out)) + orow,
          const_cast<float*>(lse) + q0,
          &sc.scale,
          &sc.lowest,
          &sc.one,
          static_cast<char*>(const_cast<void*>(dout)) + orow,
          dq,
          dbase + k_off,
          dbase + v_off};
}

// Runs a graph of `s`: without the causal mask the graph has no kLowest scalar, and the variant
// pack leaves it out.
Status Execute(const CudnnGraph& g, const AttentionShape& s, std::span<const int64_t> uids,
               std::vector<void*> ptrs, void* workspace, size_t workspace_bytes,
               cudaStream_t stream) {
  if (s.causal) return g.Execute(uids, std::move(ptrs), workspace, workspace_bytes, stream);
  std::vector<int64_t> kept_uids;
  std::vector<void*> kept_ptrs;
  for (size_t i = 0; i < uids.size(); ++i) {
    if (uids[i] == kLowest) continue;
    kept_uids.push_back(uids[i]);
    kept_ptrs.push_back(ptrs[i]);
  }
  return g.Execute(kept_uids, std::move(kept_ptrs), workspace, workspace_bytes, stream);
}

}  // namespace

bool CudnnAttentionUsable(const AttentionShape& shape) {
  return CudnnAttentionWorkspaceBytes(shape).ok();
}

Result<size_t> CudnnAttentionWorkspaceBytes(const AttentionShape& shape) {
  BM_ASSIGN_OR_RETURN(const CudnnGraph* f, PlanFor(shape, 0, -1));
  size_t cudnn = f->workspace();
  int chunk = CudnnKeysPerCall(shape);
  for (int k0 = 0; k0 < shape.seq; k0 += chunk) {
    BM_ASSIGN_OR_RETURN(const CudnnGraph* b, PlanFor(shape, k0, std::min(chunk, shape.seq - k0)));
    cudnn = std::max(cudnn, b->workspace());
  }
  return Round256(PartialDqBytes(shape)) + cudnn;
}

Status CudnnAttentionForward(void* out, float* lse, const void* qkv, const AttentionShape& s,
                             void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (s.batch == 0 || s.seq == 0) return Status::Ok();
  BM_ASSIGN_OR_RETURN(const CudnnGraph* g, PlanFor(s, 0, -1));
  auto* base = static_cast<char*>(const_cast<void*>(qkv));
  size_t hd = static_cast<size_t>(s.head_dim) * 2;
  float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  float lowest = std::numeric_limits<float>::lowest();
  constexpr std::array<int64_t, 7> kUids = {kQ, kK, kV, kO, kStats, kScale, kLowest};
  return Execute(
      *g, s, kUids,
      {base, base + s.heads * hd, base + (s.heads + s.kv_heads) * hd, out, lse, &scale, &lowest},
      workspace, workspace_bytes, stream);
}

Status CudnnAttentionBackward(void* dqkv, const void* dout, const void* out, const void* qkv,
                              const float* lse, const AttentionShape& s, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  if (s.batch == 0 || s.seq == 0) return Status::Ok();
  size_t skip = Round256(PartialDqBytes(s));
  if (workspace_bytes < skip)
    return Errorf(ErrorCode::kInternal, "cuDNN attention backward: workspace {} bytes < {} for {}",
                  workspace_bytes, skip, Describe(s));
  void* dq_partial = workspace;
  void* cudnn_ws = static_cast<char*>(workspace) + skip;
  auto* dbase = static_cast<char*>(dqkv);
  const size_t width = (s.heads + 2 * s.kv_heads) * static_cast<size_t>(s.head_dim);  // qkv row
  const size_t out_row = static_cast<size_t>(s.heads) * s.head_dim * 2;
  BackwardScalars scalars(s);
  int chunk = CudnnKeysPerCall(s);
  for (int k0 = 0; k0 < s.seq; k0 += chunk) {
    int keys = std::min(chunk, s.seq - k0);
    BM_ASSIGN_OR_RETURN(const CudnnGraph* g, PlanFor(s, k0, keys));
    const int q0 = QueryStart(s, k0);
    void* dq = k0 == 0 ? dqkv : static_cast<char*>(dq_partial) + static_cast<size_t>(q0) * out_row;
    BM_TRY(Execute(*g, s, kBackwardUids,
                   BackwardPointers(s, k0, scalars, dq, dqkv, dout, out, qkv, lse), cudnn_ws,
                   workspace_bytes - skip, stream));
    if (k0 == 0) continue;
    // dQ rows q0.. += this block's part, in block order.
    const int cols = s.heads * s.head_dim;
    if (s.fp16) {
      BM_TRY(AddRows<__half>(reinterpret_cast<__half*>(dbase), static_cast<int>(width),
                             static_cast<const __half*>(dq_partial), cols, s.batch, s.seq, q0, cols,
                             stream));
    } else {
      BM_TRY(AddRows<__nv_bfloat16>(
          reinterpret_cast<__nv_bfloat16*>(dbase), static_cast<int>(width),
          static_cast<const __nv_bfloat16*>(dq_partial), cols, s.batch, s.seq, q0, cols, stream));
    }
  }
  return Status::Ok();
}

namespace {

// The accumulator's bytes at the workspace's start ([B, H, T, D] fp32).
size_t DqAccumBytes(const AttentionShape& s) {
  return Round256(static_cast<size_t>(s.batch) * s.heads * s.seq * s.head_dim * 4);
}

}  // namespace

Result<size_t> CudnnAttentionAccumulatedWorkspaceBytes(const AttentionShape& s) {
  BM_ASSIGN_OR_RETURN(const CudnnGraph* f, PlanFor(s, 0, -1));
  BM_ASSIGN_OR_RETURN(const CudnnGraph* g, PlanFor(s, 0, s.seq, true));
  return std::max(f->workspace(), DqAccumBytes(s) + g->workspace());
}

Status CudnnAttentionAccumulatedBackward(void* dqkv, const void* dout, const void* out,
                                         const void* qkv, const float* lse, const AttentionShape& s,
                                         void* workspace, size_t workspace_bytes,
                                         cudaStream_t stream) {
  if (s.batch == 0 || s.seq == 0) return Status::Ok();
  BM_ASSIGN_OR_RETURN(const CudnnGraph* g, PlanFor(s, 0, s.seq, true));
  const size_t acc = DqAccumBytes(s);
  if (workspace_bytes < acc + g->workspace())
    return Errorf(ErrorCode::kInternal,
                  "cuDNN attention backward (dQ accumulated): workspace {} bytes < {} for {}",
                  workspace_bytes, acc + g->workspace(), Describe(s));
  BM_CUDA_CHECK(cudaMemsetAsync(workspace, 0, acc, stream), "clear the dQ accumulator");
  BackwardScalars scalars(s);
  std::vector<void*> ptrs = BackwardPointers(s, 0, scalars, dqkv, dqkv, dout, out, qkv, lse);
  ptrs.push_back(workspace);
  std::array<int64_t, kBackwardUids.size() + 1> uids;
  std::copy(kBackwardUids.begin(), kBackwardUids.end(), uids.begin());
  uids.back() = kDqAccum;
  return Execute(*g, s, uids, std::move(ptrs), static_cast<char*>(workspace) + acc,
                 workspace_bytes - acc, stream);
}

namespace {

// One candidate's plan timed on the caller's tensors: a warm-up call, `repeats` timed calls,
// the output's bits after the warm-up and after the last.
void TimeCandidate(const CudnnGraph& g, const AttentionShape& s, int repeats, void* dqkv,
                   const void* dout, const void* out, const void* qkv, const float* lse,
                   cudaStream_t stream, CudnnBackwardCandidate* c) {
  c->workspace_bytes = g.workspace();
  void* ws = nullptr;
  unsigned long long* sum = nullptr;
  cudaEvent_t t0 = nullptr, t1 = nullptr;
  const size_t bytes =
      static_cast<size_t>(s.batch) * s.seq * (s.heads + 2 * s.kv_heads) * s.head_dim * 2;
  BackwardScalars scalars(s);
  auto run = [&]() {
    return Execute(g, s, kBackwardUids,
                   BackwardPointers(s, 0, scalars, dqkv, dqkv, dout, out, qkv, lse), ws,
                   c->workspace_bytes, stream);
  };
  auto fingerprint = [&](uint64_t* into) -> Status {
    BM_TRY(BitChecksum(sum, dqkv, bytes, stream));
    unsigned long long host = 0;
    BM_CUDA_CHECK(cudaMemcpyAsync(&host, sum, sizeof(host), cudaMemcpyDeviceToHost, stream),
                  "survey checksum");
    BM_CUDA_CHECK(cudaStreamSynchronize(stream), "survey checksum");
    *into = host;
    return Status::Ok();
  };
  Status st = [&]() -> Status {
    BM_CUDA_CHECK(cudaMalloc(&ws, std::max<size_t>(c->workspace_bytes, 256)), "{} B workspace",
                  c->workspace_bytes);
    BM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&sum), sizeof(*sum)), "survey checksum");
    BM_CUDA_CHECK(cudaEventCreate(&t0), "event");
    BM_CUDA_CHECK(cudaEventCreate(&t1), "event");
    BM_CUDA_CHECK(cudaMemsetAsync(dqkv, 0, bytes, stream), "clear dqkv");
    BM_TRY(run());
    uint64_t first = 0;
    BM_TRY(fingerprint(&first));
    BM_CUDA_CHECK(cudaEventRecord(t0, stream), "event");
    for (int i = 0; i < repeats; ++i) BM_TRY(run());
    BM_CUDA_CHECK(cudaEventRecord(t1, stream), "event");
    BM_TRY(fingerprint(&c->checksum));
    float ms = 0;
    BM_CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1), "event");
    c->ms = ms / std::max(repeats, 1);
    c->repeatable = first == c->checksum;
    return Status::Ok();
  }();
  if (!st.ok()) c->error = st.message();
  if (ws != nullptr) cudaFree(ws);
  if (sum != nullptr) cudaFree(sum);
  if (t0 != nullptr) cudaEventDestroy(t0);
  if (t1 != nullptr) cudaEventDestroy(t1);
  cudaGetLastError();  // a failed candidate must not fail the next
}

}  // namespace

Status CudnnAttentionBackwardSurvey(
    const AttentionShape& s, void* dqkv, const void* dout, const void* out, const void* qkv,
    const float* lse, int repeats, cudaStream_t stream,
    const std::function<void(const CudnnBackwardCandidate&)>& report) {
  const int keys = CudnnKeysPerCall(s);
  BM_ASSIGN_OR_RETURN(const CudnnGraph* current, PlanFor(s, 0, keys));
  CudnnBackwardCandidate first;
  first.config = "heuristic's first deterministic";
  first.heuristic = first.note_deterministic = true;
  TimeCandidate(*current, s, repeats, dqkv, dout, out, qkv, lse, stream, &first);
  report(first);
  cudnnHandle_t handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(TheCache().mu);
    int device = 0;
    BM_CUDA_CHECK(cudaGetDevice(&device), "the current GPU");
    handle = TheCache().handles[device];
  }
  auto fresh = [&]() {
    return std::make_unique<CudnnGraph>(
        handle, fmt::format("survey {} keys [0, {})", Describe(s), keys), kVirtual);
  };
  // The configurations heuristics A, B and the fallback propose, as they come and then with
  // each knob's every value (at most 48 a knob; the others as proposed), each once.
  auto probe = fresh();
  BM_TRY(BuildBackward(*probe, s, 0, keys));
  using Choices = std::vector<std::pair<int64_t, int64_t> >;
  std::vector<std::tuple<std::string, int64_t, bool, Choices> > todo;  // label, engine, det
  std::set<std::pair<int64_t, Choices> > seen;
  auto add = [&](std::string label, int64_t engine, bool det, Choices c) {
    std::sort(c.begin(), c.end());
    if (seen.insert({engine, c}).second) todo.emplace_back(std::move(label), engine, det, c);
  };
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {
      {CUDNN_HEUR_MODE_A, "A"}, {CUDNN_HEUR_MODE_B, "B"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback"}};
  for (auto [mode, name] : modes) {
    auto cfgs = probe->HeuristicConfigs(mode);
    if (!cfgs.ok()) continue;
    for (size_t i = 0; i < cfgs->size(); ++i) {
      auto info = probe->Info((*cfgs)[i]);
      add(fmt::format("heuristic {} #{}", name, i), info.engine, info.deterministic, info.choices);
      for (const auto& k : info.knobs) {
        int64_t stride = std::max<int64_t>(k.stride, 1);
        for (int64_t v = k.min, n = 0; v <= k.max && n < 48; v += stride, ++n) {
          Choices c = info.choices;
          auto it = std::find_if(c.begin(), c.end(), [&](auto& p) { return p.first == k.type; });
          if (it != c.end())
            it->second = v;
          else
            c.emplace_back(k.type, v);
          add(fmt::format("heuristic {} #{} knob {}={}", name, i, k.type, v), info.engine,
              info.deterministic, c);
        }
      }
    }
  }
  for (const auto& [label, engine, det, choices] : todo) {
    CudnnBackwardCandidate c;
    c.config = fmt::format("{}: engine {} knobs", label, engine);
    for (auto [t, v] : choices) c.config += fmt::format(" {}={}", t, v);
    c.note_deterministic = det;
    auto g = fresh();
    Status built = BuildBackward(*g, s, 0, keys);  // builds the heuristic plan first
    std::string why;
    if (!built.ok()) {
      c.error = built.message();
    } else if (!g->PlanEngine(engine, choices, &why)) {
      c.error = why;
    } else {
      TimeCandidate(*g, s, repeats, dqkv, dout, out, qkv, lse, stream, &c);
    }
    report(c);
  }
  return Status::Ok();
}

#endif  // BENCHMAKE_HAVE_CUDNN

}  // namespace bm::train::cuda
