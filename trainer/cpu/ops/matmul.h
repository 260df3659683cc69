// Linear layer through BLAS (cblas_sgemm / cblas_dgemm).
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// out[N,OC] = inp[N,C] @ weight[OC,C]^T + bias[OC]       (bias nullable)
template <typename Float>
void MatmulForward(Float* out, const Float* inp, const Float* weight, const Float* bias, int64_t N,
                   int64_t C, int64_t OC);

// dinp[N,C]     += dout[N,OC] @ weight[OC,C]             (dinp nullable)
// dweight[OC,C] += dout[N,OC]^T @ inp[N,C]              (dweight nullable: frozen weights)
// dbias[OC]     += Σ_n dout[n,:]                         (dbias nullable)
template <typename Float>
void MatmulBackward(Float* dinp, Float* dweight, Float* dbias, const Float* dout, const Float* inp,
                    const Float* weight, int64_t N, int64_t C, int64_t OC);

// out[n, o] += bias[o]: a row-parallel layer's bias, added once after the
// all-reduce of its partial products (tensor parallelism).
template <typename Float>
void AddBias(Float* out, const Float* bias, int64_t N, int64_t OC);

// Sets the BLAS library's thread count (0: leave as is). Returns the count in use.
int SetBlasThreads(int threads);

}  // namespace bm::train::cpu
