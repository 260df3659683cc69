// Scaled-dot-product attention, causal or not (AttentionShape::causal), through cuDNN's fused
// flash-attention engines, built
// with the cuDNN backend (graph) API: the same layouts as kernels/attention.cuh (packed qkv,
// out [B*T, H*D], lse [B, H, T] natural-log log-sum-exp of the scaled scores), bf16 or fp16,
// grouped-query attention through kv_heads, scale 1/sqrt(D), head_dim a multiple of 8, <= 128.
//
// CudnnAttentionBackward's graph is the deterministic one (no fp32 dQ accumulator with atomics;
// engines that carry cuDNN's NONDETERMINISTIC numerical note are refused), so two runs give the
// same bits (CudnnAttentionAccumulatedBackward, below, is the one that is not). On Hopper cuDNN's
// deterministic backward keeps dP (the scores' gradient) for all the keys of its call in its
// workspace, bf16. So that nothing T x T exists, the backward runs over blocks of keys: at most
// `key_chunk` of them and at most half the sequence (rounded down to a multiple of 64). The call
// for keys [k0, k1) takes the queries [k0, T) (top-left causal within the block), writes dK and dV
// of its keys whole and a partial dQ for the rows k0.. that is added, in block order, to the others
// (deterministic). Without the causal mask (the vision tower's) a block's call takes every query
// [0, T) and its partial dQ covers every row. Workspace: B·H·T·block·2 bytes for dP plus one
// partial dQ (B·T·H·D·2), linear in T. fp16 runs the same graphs with fp16 tensors (every
// intermediate stays fp32).
//
// Execution plans are built once per shape and key block (first call) and cached for the
// process; the caller passes the workspace (from the arena), sized by
// CudnnAttentionWorkspaceBytes.
//
// Without cuDNN in the build (BENCHMAKE_HAVE_CUDNN unset) every entry point returns
// kUnsupported with a message saying so; CudnnAttentionBuilt() tells beforehand.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"

namespace bm::train::cuda {

// Keys per backward call (see above); RunSpec::attention_chunk. kCudnnKeyChunkAuto (the
// RunSpec's default) lets the memory plan choose: one call when its scratch fits in what the
// plan holds anyway, else kCudnnKeyChunk (cuda_model_plan.cc); a shape carrying it before the
// plan chose (the usability checks) means kCudnnKeyChunk.
constexpr int kCudnnKeyChunk = 1024;
constexpr int kCudnnKeyChunkAuto = -1;

struct AttentionShape {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int key_chunk = kCudnnKeyChunk;  // cuDNN backward: at most this many keys per call; 0: one
  bool fp16 = false;               // the tensors are __half rather than __nv_bfloat16
  bool causal = true;              // query t sees keys 0..t (false: every key of its sequence)
};

bool CudnnAttentionBuilt();
// The cuDNN library loaded, e.g. "9.19.0" (empty when not built with cuDNN).
std::string CudnnLibraryVersion();

// The keys of each backward call for this shape (the sequence when one call).
int CudnnKeysPerCall(const AttentionShape& shape);

// Built in, a shape cuDNN's engines take (head_dim a multiple of 8 up to 128, heads a multiple
// of kv_heads) and both plans build on this GPU: what attention = "auto" checks before it
// picks cuDNN over our kernels.
bool CudnnAttentionUsable(const AttentionShape& shape);

// Largest workspace of the forward and backward plans for this shape, the backward's partial
// dQ included (builds and caches the plans; fails with the cuDNN status when no engine
// supports a graph).
Result<size_t> CudnnAttentionWorkspaceBytes(const AttentionShape& shape);

// 16-bit tensors passed as void* (__nv_bfloat16, or __half with shape.fp16).
Status CudnnAttentionForward(void* out, float* lse, const void* qkv, const AttentionShape& shape,
                             void* workspace, size_t workspace_bytes, cudaStream_t stream);
Status CudnnAttentionBackward(void* dqkv, const void* dout, const void* out, const void* qkv,
                              const float* lse, const AttentionShape& shape, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream);

// The backward with dQ accumulated in fp32 (BuildBackward's accumulate_dq): all the keys in one
// call, no dP workspace, cuDNN's non-deterministic engines allowed — what cudnn-frontend builds
// when determinism is not asked for, and in kind what PyTorch's flash backward does by default
// (dQ added with atomics). Its bits need not repeat. The workspace holds the [B, H, T, D] fp32
// accumulator (zeroed on the stream before each call), then cuDNN's; its bytes cover the
// forward's workspace too, as CudnnAttentionWorkspaceBytes's do. For measuring what the
// deterministic backward costs (issue 16's survey, docs/PERFORMANCE.md; in the model only with
// RunSpec::deterministic_attention off, cuda_train_bench --nondeterministic-attention).
Result<size_t> CudnnAttentionAccumulatedWorkspaceBytes(const AttentionShape& shape);
Status CudnnAttentionAccumulatedBackward(void* dqkv, const void* dout, const void* out,
                                         const void* qkv, const float* lse,
                                         const AttentionShape& shape, void* workspace,
                                         size_t workspace_bytes, cudaStream_t stream);

// What issue 16's survey measured (docs/PERFORMANCE.md): the engine configurations cuDNN
// offers for the backward graph of the first key block of `shape` (all the queries, the first
// CudnnKeysPerCall keys): the plan CudnnAttentionBackward runs first, then every configuration
// heuristics A, B and the fallback propose, as proposed and with each knob's every value (at
// most 48 a knob; the others as proposed), each configuration once. Each is
// timed on the caller's tensors (one warm-up call, then the mean of `repeats`) and
// fingerprinted (dq, dk, dv of dqkv, whose bits after the warm-up and after the last call must
// agree), and passed to `report` as soon as it is measured. For finding an engine faster than
// the heuristic's; the trainer does not call it.
struct CudnnBackwardCandidate {
  std::string config;               // "engine 3 knob 40=128"
  bool heuristic = false;           // the plan CudnnAttentionBackward runs
  bool note_deterministic = false;  // no NONDETERMINISTIC numerical note
  size_t workspace_bytes = 0;
  double ms = 0;
  uint64_t checksum = 0;    // BitChecksum of dqkv after the last call
  bool repeatable = false;  // ... equal to the one after the warm-up
  std::string error;        // the plan did not build or run (no timing then)
};
Status CudnnAttentionBackwardSurvey(
    const AttentionShape& shape, void* dqkv, const void* dout, const void* out, const void* qkv,
    const float* lse, int repeats, cudaStream_t stream,
    const std::function<void(const CudnnBackwardCandidate&)>& report);

}  // namespace bm::train::cuda
