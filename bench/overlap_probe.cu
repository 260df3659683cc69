// overlap_probe: would the optimizer hide behind the next step's forward? Issue 16's candidate
// (docs/PERFORMANCE.md): AdamW unit by unit on a second stream while the forward's matmuls run.
// cuBLASLt's Hopper kernels fill each SM's register file, so an AdamW block cannot sit beside
// a matmul CTA; the two only overlap if the GPU is split: the matmuls told to use S - k SMs
// (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET) and an AdamW-like pass held to k SMs (one 1024-thread
// block per SM, pinned there by its shared-memory request). This times, for LLaMA 1B's shapes
// (8 x 2048 tokens; the forward's four products per layer, 16 layers) and its parameter count:
//   the matmuls alone on all SMs and on S - k; the AdamW-like pass alone (all SMs, k SMs);
//   both one after the other (today) and both at once, for several k;
// and prints one JSON line per k with the time saved against one after the other.
//
// The AdamW-like pass moves AdamW's bytes with split masters (fp32 gradient, m, v read and
// m, v written; the bf16 weight and its 16-bit low half read and written: 28 B a parameter)
// and does AdamW's arithmetic; it is a probe of bandwidth under sharing, not the optimizer.
//
//   overlap_probe [--params 953223168] [--tokens 16384] [--hidden 2048] [--ffn 5632]
//                 [--layers 16] [--repeats 5]
// (the 7B-width row: --params 1881214976 --tokens 8192 --hidden 4096 --ffn 11008 --layers 8)
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/probe_util.h"

namespace {

using bm::bench::Check;
void Check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "overlap_probe: %s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

constexpr int kThreads = 1024;
constexpr int kPinSmem = 160 * 1024;  // more than half an SM's shared memory: one block an SM

// AdamW over n parameters (split masters): 28 bytes moved per parameter.
__global__ void __launch_bounds__(kThreads)
    AdamWLike(const float4* g, float4* m, float4* v, ushort4* hi, ushort4* lo, size_t n4) {
  // Launched with kPinSmem bytes of dynamic shared memory that it never touches: they keep
  // other blocks off its SM.
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float4 gg = g[i], mm = m[i], vv = v[i];
    ushort4 h = hi[i], l = lo[i];
    float* gp = &gg.x;
    float* mp = &mm.x;
    float* vp = &vv.x;
    unsigned short* hp = &h.x;
    unsigned short* lp = &l.x;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float w = __uint_as_float((static_cast<unsigned>(hp[k]) << 16) | lp[k]);
      mp[k] = 0.9f * mp[k] + 0.1f * gp[k];
      vp[k] = 0.95f * vp[k] + 0.05f * gp[k] * gp[k];
      w -= 3e-4f * (mp[k] * rsqrtf(vp[k] + 1e-16f) + 0.1f * w);
      unsigned bits = __float_as_uint(w);
      hp[k] = static_cast<unsigned short>(bits >> 16);
      lp[k] = static_cast<unsigned short>(bits & 0xffff);
    }
    m[i] = mm, v[i] = vv, hi[i] = h, lo[i] = l;
  }
}

struct Gemm {
  int m, n, k;
};

// One product's plan for a given SM target (0: all).
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

Plan MakePlan(cublasLtHandle_t lt, const Gemm& g, int sm_target, size_t workspace) {
  Plan p;
  Check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  if (sm_target > 0)
    Check(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm_target,
                                         sizeof(sm_target)),
          "SM count target");
  Check(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, g.m, g.k, g.m), "layout a");
  Check(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, g.k, g.n, g.k), "layout b");
  Check(cublasLtMatrixLayoutCreate(&p.d, CUDA_R_16BF, g.m, g.n, g.m), "layout d");
  cublasLtMatmulPreference_t pref;
  Check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  Check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace, sizeof(workspace)),
        "workspace");
  cublasLtMatmulHeuristicResult_t r{};
  int got = 0;
  Check(cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &r, &got),
        "heuristic");
  if (got == 0) {
    std::fprintf(stderr, "overlap_probe: no algorithm for %dx%dx%d\n", g.m, g.n, g.k);
    std::exit(1);
  }
  p.algo = r.algo;
  cublasLtMatmulPreferenceDestroy(pref);
  return p;
}

float Elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  Check(cudaEventElapsedTime(&ms, a, b), "elapsed");
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  size_t params = 953223168;  // LLaMA 1B (bench/torch_reference.py's), all parameters
  int tokens = 16384, repeats = 5, d = 2048, f = 5632, layers = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--params")
      params = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--tokens")
      tokens = std::atoi(argv[i + 1]);
    else if (a == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else if (a == "--hidden")
      d = std::atoi(argv[i + 1]);
    else if (a == "--ffn")
      f = std::atoi(argv[i + 1]);
    else if (a == "--layers")
      layers = std::atoi(argv[i + 1]);
  }
  int sms = 0;
  Check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  Check(cudaFuncSetAttribute(AdamWLike, cudaFuncAttributeMaxDynamicSharedMemorySize, kPinSmem),
        "pinning shared memory");
  const std::vector<Gemm> layer = {
      {tokens, 3 * d, d}, {tokens, d, d}, {tokens, 2 * f, d}, {tokens, d, f}};
  double flops = 0;
  for (const Gemm& g : layer) flops += 2.0 * g.m * g.n * g.k * layers;

  size_t n4 = params / 4;
  float4 *g, *m, *v;
  ushort4 *hi, *lo;
  Check(cudaMalloc(&g, n4 * 16), "g");
  Check(cudaMalloc(&m, n4 * 16), "m");
  Check(cudaMalloc(&v, n4 * 16), "v");
  Check(cudaMalloc(&hi, n4 * 8), "hi");
  Check(cudaMalloc(&lo, n4 * 8), "lo");
  for (void* p : {static_cast<void*>(g), static_cast<void*>(m), static_cast<void*>(v)})
    Check(cudaMemset(p, 0, n4 * 16), "clear");
  Check(cudaMemset(hi, 0x3c, n4 * 8), "clear");
  Check(cudaMemset(lo, 0, n4 * 8), "clear");
  const size_t act = static_cast<size_t>(tokens) * 2 * f, wmax = static_cast<size_t>(2 * f) * d;
  __nv_bfloat16 *A, *B, *D;
  Check(cudaMalloc(&A, act * 2), "A");
  Check(cudaMalloc(&B, wmax * 2), "B");
  Check(cudaMalloc(&D, act * 2), "D");
  Check(cudaMemset(A, 0x3c, act * 2), "A");
  Check(cudaMemset(B, 0x3c, wmax * 2), "B");
  const size_t ws_bytes = 32u << 20;
  void* ws;
  Check(cudaMalloc(&ws, ws_bytes), "workspace");
  cublasLtHandle_t lt;
  Check(cublasLtCreate(&lt), "cuBLASLt");
  cudaStream_t s1, s2;
  Check(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), "stream");
  Check(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream");
  cudaEvent_t e0, e1, e2, e3;
  for (cudaEvent_t* e : {&e0, &e1, &e2, &e3}) Check(cudaEventCreate(e), "event");
  const float one = 1.0f, zero = 0.0f;

  auto forward = [&](const std::vector<Plan>& plans, cudaStream_t s) {
    for (int l = 0; l < layers; ++l)
      for (size_t i = 0; i < layer.size(); ++i)
        Check(cublasLtMatmul(lt, plans[i].desc, &one, A, plans[i].a, B, plans[i].b, &zero, D,
                             plans[i].d, D, plans[i].d, &plans[i].algo, ws, ws_bytes, s),
              "matmul");
  };
  auto adamw = [&](int blocks, cudaStream_t s) {
    AdamWLike<<<blocks, kThreads, kPinSmem, s>>>(g, m, v, hi, lo, n4);
    Check(cudaGetLastError(), "AdamWLike");
  };
  // Median over repeats of the wall time of `work` (events on s1; s2 joined).
  auto timed = [&](auto work) {
    std::vector<float> t;
    for (int r = 0; r < repeats + 1; ++r) {
      Check(cudaEventRecord(e0, s1), "event");
      Check(cudaStreamWaitEvent(s2, e0), "wait");
      work();
      Check(cudaEventRecord(e2, s2), "event");
      Check(cudaStreamWaitEvent(s1, e2), "wait");
      Check(cudaEventRecord(e1, s1), "event");
      Check(cudaEventSynchronize(e1), "sync");
      if (r > 0) t.push_back(Elapsed(e0, e1));
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  auto plans_for = [&](int target) {
    std::vector<Plan> p;
    for (const Gemm& gm : layer) p.push_back(MakePlan(lt, gm, target, ws_bytes));
    return p;
  };

  const auto full = plans_for(0);
  const float t_gemm = timed([&] { forward(full, s1); });
  const float t_adam = timed([&] { adamw(sms, s1); });
  const float t_free = timed([&] {  // both at once, nothing split
    adamw(sms, s2);
    forward(full, s1);
  });
  std::printf(
      "{\"what\":\"all SMs\",\"sms\":%d,\"matmul_ms\":%.2f,\"matmul_tflops\":%.0f,"
      "\"adamw_ms\":%.2f,\"adamw_GBps\":%.0f,\"sequential_ms\":%.2f,\"both_at_once_ms\":%.2f}\n",
      sms, t_gemm, flops / t_gemm / 1e9, t_adam, 28.0 * params / t_adam / 1e6, t_gemm + t_adam,
      t_free);
  for (int k : {8, 16, 24, 32, 48}) {
    const auto split = plans_for(sms - k);
    const float g_k = timed([&] { forward(split, s1); });
    const float a_k = timed([&] { adamw(k, s1); });
    const float both = timed([&] {
      adamw(k, s2);
      forward(split, s1);
    });
    std::printf(
        "{\"what\":\"split\",\"adamw_sms\":%d,\"matmul_ms_on_rest\":%.2f,\"adamw_ms_on_k\":%.2f,"
        "\"adamw_GBps_on_k\":%.0f,\"both_at_once_ms\":%.2f,\"saved_vs_sequential_ms\":%.2f}\n",
        k, g_k, a_k, 28.0 * params / a_k / 1e6, both, t_gemm + t_adam - both);
  }
  return 0;
}
