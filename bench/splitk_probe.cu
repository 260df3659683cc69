// splitk_probe: would the weight gradients' products go faster split along the tokens? A weight
// gradient dW[out, in] += dYᵀ X sums over all the batch's tokens (K = 32,768 on GPT-2 124M) into
// an output of only out x in (768 x 768 .. 3072 x 768 there): few output tiles for 132 SMs,
// which is where run 31's tuning log has them at 410-600 TFLOP/s. Split the tokens into S
// parts, run the S products as one strided batch into S fp32 partials, then add the partials
// into the gradient in a fixed order (deterministic; other bits than one product). This times
// both ways for the three rows' weight-gradient shapes, layouts as the trainer's (row-major
// dY [K, out] and X [K, in], cuBLASLt's first heuristic algorithm), one JSON line per shape.
//
//   splitk_probe [--repeats 20]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/probe_util.h"

namespace {

using bm::bench::Check;
bool Ok(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

// grad[i] += p[0][i] + p[1][i] + ... (in that order).
__global__ void AddPartials(float* grad, const float* p, size_t n, int parts) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    float s = p[i];
    for (int k = 1; k < parts; ++k) s += p[k * n + i];
    grad[i] += s;
  }
}

struct Shape {
  const char* row;
  int out, in, tokens;
};

}  // namespace

int main(int argc, char** argv) {
  int repeats = 20;
  if (argc == 3 && std::string(argv[1]) == "--repeats") repeats = std::atoi(argv[2]);
  const std::vector<Shape> shapes = {
      {"gpt2", 2304, 768, 32768},       {"gpt2", 768, 768, 32768},
      {"gpt2", 3072, 768, 32768},       {"gpt2", 768, 3072, 32768},
      {"llama-1b", 6144, 2048, 16384},  {"llama-1b", 2048, 2048, 16384},
      {"llama-1b", 11264, 2048, 16384}, {"llama-1b", 2048, 5632, 16384},
      {"7b", 12288, 4096, 8192},        {"7b", 4096, 4096, 8192},
      {"7b", 22016, 4096, 8192},        {"7b", 4096, 11008, 8192}};
  size_t max_in = 0, max_w = 0;
  for (const Shape& s : shapes) {
    max_in = std::max(max_in, static_cast<size_t>(s.tokens) * std::max(s.out, s.in));
    max_w = std::max(max_w, static_cast<size_t>(s.out) * s.in);
  }
  __nv_bfloat16* dy = bm::bench::DeviceRandomBf16(max_in, "dy");
  __nv_bfloat16* x = bm::bench::DeviceRandomBf16(max_in, "x");
  float *grad, *partials;
  Check(cudaMalloc(&grad, max_w * 4), "grad");
  Check(cudaMalloc(&partials, 4 * max_w * 4), "partials");
  Check(cudaMemset(grad, 0, max_w * 4), "grad");
  const size_t ws_bytes = 32u << 20;
  void* ws;
  Check(cudaMalloc(&ws, ws_bytes), "workspace");
  cublasLtHandle_t lt;
  if (!Ok(cublasLtCreate(&lt))) return 1;
  cudaStream_t st;
  Check(cudaStreamCreate(&st), "stream");
  cudaEvent_t e0, e1;
  Check(cudaEventCreate(&e0), "event");
  Check(cudaEventCreate(&e1), "event");

  float* bias_grad;
  Check(cudaMalloc(&bias_grad, 4 * 32768 * 4), "bias grad");
  for (const Shape& s : shapes)
    for (bool bgrad : {false, true}) {
      if (bgrad && std::string(s.row) != "gpt2") continue;  // only GPT-2 has biases
      double flops = 2.0 * s.out * s.in * s.tokens;
      std::printf("{\"row\":\"%s\",\"out\":%d,\"in\":%d,\"tokens\":%d,\"bias_grad\":%s", s.row,
                  s.out, s.in, s.tokens, bgrad ? "true" : "false");
      for (int parts : {1, 2, 3, 4}) {
        if (s.tokens % parts != 0) continue;
        const int k = s.tokens / parts;
        // Column-major: D[in, out] (= row-major dW[out, in]) = X_col[in, k] · dY_col[out, k]ᵀ.
        cublasLtMatmulDesc_t desc;
        cublasLtMatrixLayout_t la, lb, ld;
        cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        cublasOperation_t tn = CUBLAS_OP_N, tt = CUBLAS_OP_T;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &tn, sizeof(tn));
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tt, sizeof(tt));
        if (bgrad) {  // the bias gradient (the sum of dY over the tokens) fused, fp32, per part
          cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BGRADB;
          cudaDataType_t bt = CUDA_R_32F;
          int64_t bstride = s.out;
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt,
                                         sizeof(bt));
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_grad,
                                         sizeof(bias_grad));
          if (parts > 1)
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bstride,
                                           sizeof(bstride));
        }
        cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, s.in, k, s.in);
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, s.out, k, s.out);
        cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, s.in, s.out, s.in);
        if (parts > 1) {
          int32_t count = parts;
          int64_t sa = static_cast<int64_t>(k) * s.in, sb = static_cast<int64_t>(k) * s.out,
                  sd = static_cast<int64_t>(s.in) * s.out;
          cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, 4);
          cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, 4);
          cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, 4);
          cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, 8);
          cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, 8);
          cublasLtMatrixLayoutSetAttribute(ld, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sd, 8);
        }
        cublasLtMatmulPreference_t pref;
        cublasLtMatmulPreferenceCreate(&pref);
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &ws_bytes, sizeof(ws_bytes));
        cublasLtMatmulHeuristicResult_t r{};
        int got = 0;
        cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &r, &got);
        float ms = -1;
        if (got > 0) {
          const float one = 1.0f, zero = 0.0f;
          float* d = parts == 1 ? grad : partials;
          const size_t n = static_cast<size_t>(s.in) * s.out;
          auto run = [&] {
            bool ok = Ok(cublasLtMatmul(lt, desc, &one, x, la, dy, lb, parts == 1 ? &one : &zero, d,
                                        ld, d, ld, &r.algo, ws, ws_bytes, st));
            if (parts > 1) AddPartials<<<264, 512, 0, st>>>(grad, partials, n, parts);
            return ok;
          };
          bool ok = run();
          Check(cudaEventRecord(e0, st), "event");
          for (int i = 0; i < repeats && ok; ++i) ok = run();
          Check(cudaEventRecord(e1, st), "event");
          Check(cudaEventSynchronize(e1), "sync");
          if (ok) {
            Check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
            ms /= repeats;
          }
        }
        std::printf(",\"split%d_ms\":%.4f,\"split%d_tflops\":%.0f", parts, ms, parts,
                    ms > 0 ? flops / ms / 1e9 : 0.0);
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(desc);
      }
      std::printf("}\n");
      std::fflush(stdout);
    }
  return 0;
}
