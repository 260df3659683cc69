// cudnn_attention_survey: is there a cuDNN attention backward faster than the one the trainer
// runs? Times, on random bf16 tensors of one shape, the trainer's backward (all its key blocks,
// as CudnnAttentionBackward runs it, and the same as one call), the backward with dQ
// accumulated in fp32 by cuDNN's non-deterministic engines (what determinism costs; each of
// these three with whether its bits repeat over the timed calls and its largest difference
// from the trainer's dq, dk, dv), and then every engine
// configuration cuDNN offers for the first key block's graph (CudnnAttentionBackwardSurvey),
// one JSON line each: its time, TFLOP/s, workspace, whether it carries cuDNN's
// NONDETERMINISTIC note, whether its bits repeat, and whether they equal the trainer's choice.
//
//   cudnn_attention_survey --batch 8 --seq 2048 --heads 32 [--kv-heads 32] [--head-dim 64]
//                          [--key-chunk 1024] [--repeats 10] [--whole-only 1]
// (--whole-only 1: the three whole backwards only, no engine survey)
//
// Causal attention backward FLOPs: 5 products of 2·D per (query, key) pair the mask keeps.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "trainer/cuda/cudnn_attention.h"

namespace {

using bm::train::cuda::AttentionShape;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "cudnn_attention_survey: %s\n", what.c_str());
  std::exit(1);
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// A device buffer of n bf16 values, N(0, 1) by a fixed hash (the same every run).
void* RandomBf16(size_t n, uint64_t seed) {
  std::vector<__nv_bfloat16> host(n);
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    z ^= z << 13, z ^= z >> 7, z ^= z << 17;
    double u1 = ((z >> 11) + 1) * (1.0 / 9007199254740993.0);
    z ^= z << 13, z ^= z >> 7, z ^= z << 17;
    double u2 = (z >> 11) * (1.0 / 9007199254740992.0);
    host[i] = __float2bfloat16(
        static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2)));
  }
  void* d = nullptr;
  Check(cudaMalloc(&d, n * 2), "cudaMalloc");
  Check(cudaMemcpy(d, host.data(), n * 2, cudaMemcpyHostToDevice), "upload");
  return d;
}

// The n bf16 values at d, on the host as floats.
std::vector<float> Download(const void* d, size_t n) {
  std::vector<__nv_bfloat16> host(n);
  Check(cudaMemcpy(host.data(), d, n * 2, cudaMemcpyDeviceToHost), "download");
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = __bfloat162float(host[i]);
  return f;
}

// (query, key) pairs of the causal mask with queries [0, T) and keys [0, keys).
double Pairs(int seq, int keys) {
  return static_cast<double>(keys) * (keys + 1) / 2 + static_cast<double>(seq - keys) * keys;
}

}  // namespace

int main(int argc, char** argv) {
  AttentionShape s;
  s.head_dim = 64;
  int repeats = 10;
  bool whole_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) Die("missing value after " + a);
    int v = std::atoi(argv[++i]);
    if (a == "--batch")
      s.batch = v;
    else if (a == "--seq")
      s.seq = v;
    else if (a == "--heads")
      s.heads = v;
    else if (a == "--kv-heads")
      s.kv_heads = v;
    else if (a == "--head-dim")
      s.head_dim = v;
    else if (a == "--key-chunk")
      s.key_chunk = v;
    else if (a == "--repeats")
      repeats = v;
    else if (a == "--whole-only")
      whole_only = v != 0;
    else
      Die("unknown option " + a);
  }
  if (s.kv_heads == 0) s.kv_heads = s.heads;
  if (s.batch <= 0 || s.seq <= 0 || s.heads <= 0) Die("--batch, --seq and --heads are needed");
  const std::string shape =
      fmt::format("B{} T{} H{} Hkv{} D{}", s.batch, s.seq, s.heads, s.kv_heads, s.head_dim);
  const size_t rows = static_cast<size_t>(s.batch) * s.seq;
  const size_t width = static_cast<size_t>(s.heads + 2 * s.kv_heads) * s.head_dim;
  const size_t out_n = rows * s.heads * s.head_dim;
  void* qkv = RandomBf16(rows * width, 1);
  void* dout = RandomBf16(out_n, 2);
  void *out = nullptr, *dqkv = nullptr, *ws = nullptr;
  float* lse = nullptr;
  Check(cudaMalloc(&out, out_n * 2), "cudaMalloc");
  Check(cudaMalloc(&dqkv, rows * width * 2), "cudaMalloc");
  Check(cudaMalloc(reinterpret_cast<void**>(&lse), rows * s.heads * sizeof(float)), "cudaMalloc");
  AttentionShape one_call = s;
  one_call.key_chunk = 0;
  size_t ws_bytes = 0;
  for (const AttentionShape* sh : {&s, &one_call}) {
    auto w = bm::train::cuda::CudnnAttentionWorkspaceBytes(*sh);
    if (!w.ok()) Die(w.status().message());
    ws_bytes = std::max(ws_bytes, *w);
  }
  auto acc_ws = bm::train::cuda::CudnnAttentionAccumulatedWorkspaceBytes(s);
  if (acc_ws.ok()) ws_bytes = std::max(ws_bytes, *acc_ws);
  Check(cudaMalloc(&ws, ws_bytes), "cudaMalloc workspace");
  cudaStream_t stream = nullptr;
  Check(cudaStreamCreate(&stream), "stream");
  auto fwd = bm::train::cuda::CudnnAttentionForward(out, lse, qkv, s, ws, ws_bytes, stream);
  if (!fwd.ok()) Die(fwd.message());

  // The trainer's whole backward (every key block), the same as one call, and the one call with
  // dQ accumulated (non-deterministic): time, whether the bits after the warm-up call are those
  // after the last timed one, and the largest difference from the trainer's result.
  const double whole_flops = 10.0 * Pairs(s.seq, s.seq) * s.head_dim * s.batch * s.heads;
  const size_t grads = rows * width;
  std::vector<float> trainer;  // the first variant's dq, dk, dv
  const std::pair<const char*, std::function<bm::Status()> > variants[] = {
      {"whole backward, the trainer's key blocks",
       [&] {
         return bm::train::cuda::CudnnAttentionBackward(dqkv, dout, out, qkv, lse, s, ws, ws_bytes,
                                                        stream);
       }},
      {"whole backward, one call",
       [&] {
         return bm::train::cuda::CudnnAttentionBackward(dqkv, dout, out, qkv, lse, one_call, ws,
                                                        ws_bytes, stream);
       }},
      {"whole backward, one call, dQ accumulated (non-deterministic engines)",
       [&] {
         return bm::train::cuda::CudnnAttentionAccumulatedBackward(dqkv, dout, out, qkv, lse, s, ws,
                                                                   ws_bytes, stream);
       }},
  };
  for (const auto& [what, call] : variants) {
    nlohmann::json j = {{"shape", shape}, {"what", what}};
    bm::Status first_call = call();
    if (!first_call.ok()) {  // the accumulated graph may have no engine on this GPU
      j["error"] = first_call.message();
      std::printf("%s\n", j.dump().c_str());
      continue;
    }
    Check(cudaStreamSynchronize(stream), "sync");
    std::vector<float> warm = Download(dqkv, grads);
    cudaEvent_t t0, t1;
    Check(cudaEventCreate(&t0), "event");
    Check(cudaEventCreate(&t1), "event");
    Check(cudaEventRecord(t0, stream), "event");
    for (int i = 0; i < repeats; ++i) {
      auto st = call();
      if (!st.ok()) Die(st.message());
    }
    Check(cudaEventRecord(t1, stream), "event");
    Check(cudaEventSynchronize(t1), "sync");
    float ms = 0;
    Check(cudaEventElapsedTime(&ms, t0, t1), "event");
    ms /= repeats;
    std::vector<float> last = Download(dqkv, grads);
    if (trainer.empty()) trainer = warm;
    double diff = 0, scale = 0;
    for (size_t i = 0; i < grads; ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(last[i] - trainer[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(trainer[i])));
    }
    j["ms"] = ms;
    j["tflops"] = whole_flops / ms / 1e9;
    j["repeatable"] = std::memcmp(warm.data(), last.data(), grads * sizeof(float)) == 0;
    j["max_abs_diff_vs_trainer"] = diff;
    j["max_abs_trainer"] = scale;
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  }

  if (whole_only) return 0;
  // Every engine on the first key block's graph.
  const int keys = bm::train::cuda::CudnnKeysPerCall(s);
  const double block_flops = 10.0 * Pairs(s.seq, keys) * s.head_dim * s.batch * s.heads;
  uint64_t chosen = 0;  // the trainer's plan's bits, reported first
  auto st = bm::train::cuda::CudnnAttentionBackwardSurvey(
      s, dqkv, dout, out, qkv, lse, repeats, stream, [&](const auto& c) {
        if (c.heuristic) chosen = c.checksum;
        nlohmann::json j = {{"shape", shape},
                            {"what", fmt::format("first key block, keys [0, {})", keys)},
                            {"config", c.config},
                            {"heuristic", c.heuristic},
                            {"deterministic_note", c.note_deterministic}};
        if (!c.error.empty()) {
          j["error"] = c.error;
        } else {
          j["ms"] = c.ms;
          j["tflops"] = block_flops / c.ms / 1e9;
          j["workspace_MiB"] = c.workspace_bytes / 1048576.0;
          j["repeatable"] = c.repeatable;
          j["same_bits_as_trainer"] = c.checksum == chosen;
        }
        std::printf("%s\n", j.dump().c_str());
        std::fflush(stdout);
      });
  if (!st.ok()) Die(st.message());
  return 0;
}
