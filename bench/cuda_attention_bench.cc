// cuda_attention_bench: our cuDNN attention alone, the same way bench/attention_peer.py times
// PyTorch's SDPA backends (issue 38, goal 2: in run 183 our forward inside training steps took
// 0.59 ms where PyTorch's cuDNN backend took 0.50 alone; this tells whether the kernels differ or
// only the conditions).
//
//   cuda_attention_bench [--batch 2] [--seq 4096] [--heads 32] [--kv-heads 32] [--head-dim 128]
//                        [--warmup 5] [--iters 20] [--survey]
//
// On random bf16 tensors laid out as the trainer lays them (q|k|v packed [B·T, (H + 2·Hkv)·D],
// causal), with CUDA events around each call, the median of --iters after --warmup, it prints one
// JSON line per way of running ours: the forward; the deterministic backward over the plan's key
// blocks (kCudnnKeyChunk) and in one call; cuDNN's non-deterministic backward (dQ accumulated).
// Each line has ms a call and TFLOP/s by the causal count attention_peer.py uses. --survey also
// times every engine configuration cuDNN offers the one-call backward
// (CudnnAttentionBackwardSurvey), one JSON line each.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/cuda/cudnn_attention.h"

namespace {

using namespace bm::train::cuda;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "cuda_attention_bench: %s\n", what.c_str());
  std::exit(1);
}
void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void Check(const bm::Status& s, const char* what) {
  if (!s.ok()) Die(fmt::format("{}: {}", what, s.message()));
}

// A device buffer of `n` bf16 values, uniform in [-1, 1) from a fixed seed (or zeros).
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    Cuda(cudaMalloc(&p, std::max<size_t>(bytes, 256)), "alloc");
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};
void FillRandomBf16(void* dst, size_t n, uint64_t seed) {
  std::vector<__nv_bfloat16> host(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : host) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    v = __float2bfloat16(static_cast<float>(x >> 40) / static_cast<float>(1 << 23) - 1.0f);
  }
  Cuda(cudaMemcpy(dst, host.data(), n * 2, cudaMemcpyHostToDevice), "upload");
}

// The median of `iters` event-timed calls after `warmup` untimed ones.
double MedianMs(const std::function<bm::Status()>& call, int warmup, int iters,
                cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) Check(call(), "warm-up call");
  cudaEvent_t a, b;
  Cuda(cudaEventCreate(&a), "event");
  Cuda(cudaEventCreate(&b), "event");
  std::vector<float> ms;
  for (int i = 0; i < iters; ++i) {
    Cuda(cudaEventRecord(a, stream), "event");
    Check(call(), "timed call");
    Cuda(cudaEventRecord(b, stream), "event");
    Cuda(cudaEventSynchronize(b), "event");
    float t = 0;
    Cuda(cudaEventElapsedTime(&t, a, b), "event");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int batch = 2, seq = 4096, heads = 32, kv_heads = 32, head_dim = 128, warmup = 5, iters = 20;
  bool survey = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> int {
      if (i + 1 >= argc) Die(a + " needs a value");
      return std::atoi(argv[++i]);
    };
    if (a == "--batch")
      batch = next();
    else if (a == "--seq")
      seq = next();
    else if (a == "--heads")
      heads = next();
    else if (a == "--kv-heads")
      kv_heads = next();
    else if (a == "--head-dim")
      head_dim = next();
    else if (a == "--warmup")
      warmup = next();
    else if (a == "--iters")
      iters = next();
    else if (a == "--survey")
      survey = true;
    else
      Die("unknown argument " + a);
  }
  if (batch <= 0 || seq <= 0 || heads <= 0 || kv_heads <= 0 || head_dim <= 0 || iters <= 0)
    Die("batch, seq, heads, kv-heads, head-dim and iters must be positive");
  if (!CudnnAttentionBuilt()) Die("this build has no cuDNN");
  cudaStream_t stream;
  Cuda(cudaStreamCreate(&stream), "stream");
  const size_t rows = static_cast<size_t>(batch) * seq;
  const size_t qkv_n = rows * (heads + 2 * kv_heads) * head_dim, out_n = rows * heads * head_dim;
  DeviceBuffer qkv(qkv_n * 2), dqkv(qkv_n * 2), out(out_n * 2), dout(out_n * 2),
      lse(static_cast<size_t>(batch) * heads * seq * 4);
  FillRandomBf16(qkv.p, qkv_n, 1);
  FillRandomBf16(dout.p, out_n, 2);
  // One causal product's flops (B·H·T²·D multiply-adds, halved by the mask, 2 flops each).
  const double product = 2.0 * batch * heads * static_cast<double>(seq) * seq * head_dim / 2;
  auto report = [&](const std::string& what, int keys, double ms, int products) {
    nlohmann::json j = {{"kind", "benchmake-cuda-attention"},
                        {"what", what},
                        {"batch", batch},
                        {"seq", seq},
                        {"heads", heads},
                        {"kv_heads", kv_heads},
                        {"head_dim", head_dim},
                        {"keys_per_call", keys},
                        {"cudnn", CudnnLibraryVersion()},
                        {"ms", ms},
                        {"tflops", products * product / ms / 1e9}};
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  };
  auto shape_with = [&](int key_chunk) {
    return AttentionShape{batch, seq, heads, kv_heads, head_dim, key_chunk, false, true};
  };
  // The forward, then each deterministic backward: the plan's blocks, one call.
  for (int chunk : {kCudnnKeyChunk, 0}) {
    AttentionShape s = shape_with(chunk);
    auto ws_bytes = CudnnAttentionWorkspaceBytes(s);
    if (!ws_bytes.ok()) Die(fmt::format("workspace: {}", ws_bytes.status().message()));
    DeviceBuffer ws(*ws_bytes);
    auto forward = [&]() {
      return CudnnAttentionForward(out.p, static_cast<float*>(lse.p), qkv.p, s, ws.p, *ws_bytes,
                                   stream);
    };
    if (chunk == kCudnnKeyChunk)
      report("forward", seq, MedianMs(forward, warmup, iters, stream), 2);
    Check(forward(), "forward");
    auto backward = [&]() {
      return CudnnAttentionBackward(dqkv.p, dout.p, out.p, qkv.p, static_cast<const float*>(lse.p),
                                    s, ws.p, *ws_bytes, stream);
    };
    report("backward deterministic", CudnnKeysPerCall(s), MedianMs(backward, warmup, iters, stream),
           5);
  }
  AttentionShape one = shape_with(0);
  auto acc_bytes = CudnnAttentionAccumulatedWorkspaceBytes(one);
  if (!acc_bytes.ok()) Die(fmt::format("workspace: {}", acc_bytes.status().message()));
  {
    DeviceBuffer ws(*acc_bytes);
    auto backward = [&]() {
      return CudnnAttentionAccumulatedBackward(dqkv.p, dout.p, out.p, qkv.p,
                                               static_cast<const float*>(lse.p), one, ws.p,
                                               *acc_bytes, stream);
    };
    report("backward non-deterministic", seq, MedianMs(backward, warmup, iters, stream), 5);
  }
  if (survey) {
    Check(CudnnAttentionBackwardSurvey(
              one, dqkv.p, dout.p, out.p, qkv.p, static_cast<const float*>(lse.p), iters, stream,
              [&](const CudnnBackwardCandidate& c) {
                nlohmann::json j = {{"kind", "benchmake-cuda-attention-survey"},
                                    {"config", c.config},
                                    {"heuristic", c.heuristic},
                                    {"deterministic_note", c.note_deterministic},
                                    {"workspace_bytes", c.workspace_bytes},
                                    {"repeatable", c.repeatable},
                                    {"checksum", c.checksum}};
                if (c.error.empty()) {
                  j["ms"] = c.ms;
                  j["tflops"] = 5 * product / c.ms / 1e9;
                } else {
                  j["error"] = c.error;
                }
                std::printf("%s\n", j.dump().c_str());
                std::fflush(stdout);
              }),
          "survey");
  }
  Cuda(cudaStreamSynchronize(stream), "sync");
  cudaStreamDestroy(stream);
  return 0;
}
