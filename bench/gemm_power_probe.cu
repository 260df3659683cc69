// gemm_power_probe: do the matmul tuner's picks hold under the power cap? Inside a training step
// the GPU runs at its power limit (run 68: 693 W of 700, SM clock 1,485-1,665 MHz on LLaMA 1B
// 8x2048, against 1,980 at rest), while the tuner (trainer/cuda/matmul.cc) times each candidate
// alone: one untimed launch, then the median of three, synchronizing between launches. A
// candidate that draws less power per FLOP may run at a higher clock when products follow each
// other for tens of milliseconds, as in a step. For each shape this prints, per cuBLASLt
// candidate (the heuristic's ranking, as the tuner gets it):
//   alone_ms       the tuner's measure
//   sustained_ms   the mean launch time over the last half of back-to-back launches lasting
//                  --ms milliseconds (default 200)
//   mhz            the SM clock NVML reads in the burst's second half (its energy counter does
//                  not resolve a burst: trainer/cuda/nvml_gpu.h)
// and, for the first candidate, the launch times over the burst in ten slices of its launches
// (how fast the clock comes down). Shapes are read from the tuner's log lines (stdin or a file):
//   tuning [m=16384 n=6144 k=2048 op(A)=N op(B)=T lda=2048 ldb=2048 ldd=6144 ab=bf16 d=bf16
//   epilogue=0] first ...
// (cuda_train_bench writes them to tuning.log; products with an epilogue are skipped). Operands
// are random-looking bf16: the tensor cores' power depends on the data.
//
//   gemm_power_probe [--ms 200] [FILE]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench/probe_util.h"
#include "trainer/cuda/nvml_gpu.h"

namespace {

using bm::bench::Check;
bool Ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

struct Shape {
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  bool trans_a = false, trans_b = false, d_f32 = false;
  std::string text;
};

// One tuner log line's product, or false (another epilogue, another type, not a tuning line).
bool Parse(const std::string& line, Shape* s) {
  size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return false;
  s->text = line.substr(open + 1, close - open - 1);
  char ta = 0, tb = 0, ab[8] = {}, d[8] = {};
  int epilogue = -1;
  if (std::sscanf(s->text.c_str(),
                  "m=%d n=%d k=%d op(A)=%c op(B)=%c lda=%d ldb=%d ldd=%d ab=%7s d=%7s epilogue=%d",
                  &s->m, &s->n, &s->k, &ta, &tb, &s->lda, &s->ldb, &s->ldd, ab, d, &epilogue) != 11)
    return false;
  s->trans_a = ta == 'T';
  s->trans_b = tb == 'T';
  s->d_f32 = std::strcmp(d, "f32") == 0;
  return epilogue == 0 && std::strcmp(ab, "bf16") == 0 && (s->d_f32 || !std::strcmp(d, "bf16"));
}

}  // namespace

int main(int argc, char** argv) {
  double burst_ms = 200;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--ms" && i + 1 < argc) {
      burst_ms = std::atof(argv[++i]);
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "usage: gemm_power_probe [--ms 200] [TUNING_LOG]\n");
      return 2;
    } else {
      file = argv[i];
    }
  }
  std::ifstream in_file;
  if (!file.empty()) {
    in_file.open(file);
    if (!in_file) {
      std::fprintf(stderr, "gemm_power_probe: cannot read %s\n", file.c_str());
      return 1;
    }
  }
  std::istream& in = file.empty() ? std::cin : in_file;
  std::vector<Shape> shapes;
  for (std::string line; std::getline(in, line);) {
    Shape s;
    if (Parse(line, &s)) shapes.push_back(s);
  }
  if (shapes.empty()) {
    std::fprintf(stderr, "gemm_power_probe: no bf16 product without epilogue in the input\n");
    return 1;
  }
  size_t max_a = 0, max_b = 0, max_d = 0;
  for (const Shape& s : shapes) {
    max_a = std::max(max_a, static_cast<size_t>(s.trans_a ? s.k : s.m) * s.lda);
    max_b = std::max(max_b, static_cast<size_t>(s.trans_b ? s.n : s.k) * s.ldb);
    max_d = std::max(max_d, static_cast<size_t>(s.m) * s.ldd * (s.d_f32 ? 4 : 2));
  }
  __nv_bfloat16* a = bm::bench::DeviceRandomBf16(max_a, "A");
  __nv_bfloat16* b = bm::bench::DeviceRandomBf16(max_b, "B");
  void* d;
  Check(cudaMalloc(&d, max_d), "D");
  const size_t ws_bytes = (32u << 20) - 256;  // the trainer's (Matmul::kDefaultWorkspaceBytes)
  void* ws;
  Check(cudaMalloc(&ws, ws_bytes), "workspace");
  cublasLtHandle_t lt;
  if (!Ok(cublasLtCreate(&lt))) return 1;
  cudaStream_t st;
  Check(cudaStreamCreate(&st), "stream");
  bm::train::cuda::NvmlGpu nvml;
  int cuda_device = 0;
  Check(cudaGetDevice(&cuda_device), "device");
  if (!nvml.Open(cuda_device)) std::fprintf(stderr, "gemm_power_probe: no NVML, clocks not read\n");
  std::vector<cudaEvent_t> ev(4096);
  for (auto& e : ev) Check(cudaEventCreate(&e), "event");

  for (const Shape& s : shapes) {
    // As Matmul::GetPlan: row-major D = op(A) op(B) is column-major Dᵀ = op(B)ᵀ op(A)ᵀ.
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a));
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b));
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.trans_b ? s.k : s.n, s.trans_b ? s.n : s.k,
                               s.ldb);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.trans_a ? s.m : s.k, s.trans_a ? s.k : s.m,
                               s.lda);
    cublasLtMatrixLayoutCreate(&lc, s.d_f32 ? CUDA_R_32F : CUDA_R_16BF, s.n, s.m, s.ldd);
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                         sizeof(ws_bytes));
    std::vector<cublasLtMatmulHeuristicResult_t> results(8);
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 8, results.data(), &found);
    const float one = 1.0f, zero = 0.0f;
    const double tflop = 2.0 * s.m * s.n * s.k / 1e12;
    std::printf("{\"shape\":\"%s\",\"candidates\":[", s.text.c_str());
    for (int c = 0; c < found; ++c) {
      const cublasLtMatmulAlgo_t& algo = results[c].algo;
      auto launch = [&] {
        return Ok(cublasLtMatmul(lt, desc, &one, b, la, a, lb, &zero, d, lc, d, lc, &algo, ws,
                                 ws_bytes, st));
      };
      // Alone, as the tuner times it, after 300 ms of rest (each candidate starts cool).
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      bool ok = launch();
      float alone[3] = {};
      for (float& t : alone) {
        Check(cudaEventRecord(ev[0], st), "event");
        ok = ok && launch();
        Check(cudaEventRecord(ev[1], st), "event");
        Check(cudaEventSynchronize(ev[1]), "sync");
        Check(cudaEventElapsedTime(&t, ev[0], ev[1]), "elapsed");
      }
      std::sort(alone, alone + 3);
      // Sustained: back to back for about burst_ms, an event after each launch.
      int launches = std::clamp(static_cast<int>(burst_ms / std::max(alone[1], 0.01f)), 20,
                                static_cast<int>(ev.size()) - 1);
      Check(cudaEventRecord(ev[0], st), "event");
      for (int i = 1; i <= launches && ok; ++i) {
        ok = launch();
        Check(cudaEventRecord(ev[i], st), "event");
      }
      Check(cudaEventSynchronize(ev[launches / 2]), "sync");  // NVML reads in the second half
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(burst_ms / 4)));
      const double mhz = nvml.SmMhz();
      Check(cudaEventSynchronize(ev[launches]), "sync");
      if (!ok) {
        std::printf("%s{\"index\":%d,\"failed\":true}", c ? "," : "", c);
        continue;
      }
      float half = 0;
      Check(cudaEventElapsedTime(&half, ev[launches / 2], ev[launches]), "elapsed");
      const double sustained = half / (launches - launches / 2);
      std::printf(
          "%s{\"index\":%d,\"alone_ms\":%.4f,\"sustained_ms\":%.4f,\"sustained_tflops\":%.0f,"
          "\"launches\":%d,\"mhz\":%.0f",
          c ? "," : "", c, alone[1], sustained, tflop / sustained * 1e3, launches, mhz);
      if (c == 0) {  // the clock coming down: mean launch time in ten slices of the burst
        std::printf(",\"slices_ms\":[");
        for (int p = 0; p < 10; ++p) {
          int from = launches * p / 10, to = launches * (p + 1) / 10;
          float t = 0;
          Check(cudaEventElapsedTime(&t, ev[from], ev[to]), "elapsed");
          std::printf("%s%.4f", p ? "," : "", t / std::max(to - from, 1));
        }
        std::printf("]");
      }
      std::printf("}");
    }
    std::printf("]}\n");
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(desc);
  }
  return 0;
}
