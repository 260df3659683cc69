// Row-major GEMM on float or double through CBLAS, for the ops' own use:
//   C[M,N] = alpha * op(A) op(B) + beta * C,  op(X) = X or X^T.
// Leading dimensions are in elements, as CBLAS takes them.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void Gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
          const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
          int64_t ldc);

}  // namespace bm::train::cpu
