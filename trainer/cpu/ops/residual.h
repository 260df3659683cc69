// Residual connection: the sum of two streams.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// out[N] = a[N] + b[N]
template <typename Float>
void ResidualForward(Float* out, const Float* a, const Float* b, int64_t N);

// da[N] += dout; db[N] += dout
template <typename Float>
void ResidualBackward(Float* da, Float* db, const Float* dout, int64_t N);

}  // namespace bm::train::cpu
