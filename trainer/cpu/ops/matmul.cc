#include "trainer/cpu/ops/matmul.h"

#include <cblas.h>

#include "trainer/cpu/ops/blas.h"

namespace bm::train::cpu {
void Gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

void Gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
          int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

template <typename Float>
void MatmulForward(Float* out, const Float* inp, const Float* weight, const Float* bias, int64_t N,
                   int64_t C, int64_t OC) {
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < OC; ++o) out[n * OC + o] = bias[o];
  }
  // out[N,OC] (+)= inp[N,C] · weight[OC,C]^T
  Gemm(false, true, N, OC, C, Float(1), inp, C, weight, C, bias ? Float(1) : Float(0), out, OC);
}

template <typename Float>
void MatmulBackward(Float* dinp, Float* dweight, Float* dbias, const Float* dout, const Float* inp,
                    const Float* weight, int64_t N, int64_t C, int64_t OC) {
  // dinp[N,C] += dout[N,OC] · weight[OC,C]
  if (dinp) Gemm(false, false, N, C, OC, Float(1), dout, OC, weight, C, Float(1), dinp, C);
  // dweight[OC,C] += dout[N,OC]^T · inp[N,C]
  if (dweight) Gemm(true, false, OC, C, N, Float(1), dout, OC, inp, C, Float(1), dweight, C);
  if (dbias) {
#pragma omp parallel for schedule(static)
    for (int64_t o = 0; o < OC; ++o) {
      Float sum = 0;
      for (int64_t n = 0; n < N; ++n) sum += dout[n * OC + o];
      dbias[o] += sum;
    }
  }
}

template <typename Float>
void AddBias(Float* out, const Float* bias, int64_t N, int64_t OC) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o) out[n * OC + o] += bias[o];
}

int SetBlasThreads(int threads) {
  if (threads > 0) openblas_set_num_threads(threads);
  return openblas_get_num_threads();
}

template void MatmulForward<float>(float*, const float*, const float*, const float*, int64_t,
                                   int64_t, int64_t);
template void MatmulForward<double>(double*, const double*, const double*, const double*, int64_t,
                                    int64_t, int64_t);
template void MatmulBackward<float>(float*, float*, float*, const float*, const float*,
                                    const float*, int64_t, int64_t, int64_t);
template void AddBias<float>(float*, const float*, int64_t, int64_t);
template void AddBias<double>(double*, const double*, int64_t, int64_t);
template void MatmulBackward<double>(double*, double*, double*, const double*, const double*,
                                     const double*, int64_t, int64_t, int64_t);

}  // namespace bm::train::cpu
