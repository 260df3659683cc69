// Rotary position embedding (LLaMA), Hugging Face's "rotate_half" pairing:
// within a head, element i pairs with i + HS/2 and turns by the angle
// pos * theta^(-2i/HS), i < HS/2. Positions are 0..T-1.
#pragma once

#include <cstdint>

namespace bm::train::cpu {

// Rotates the NH query heads and KVH key heads of qkv[B,T,(NH+2*KVH)*HS] in
// place; the value heads are untouched.
template <typename Float>
void RopeForward(Float* qkv, int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS,
                 double theta);

// The transpose: turns the query and key gradients of dqkv back by -angle, in place.
template <typename Float>
void RopeBackward(Float* dqkv, int64_t B, int64_t T, int64_t NH, int64_t KVH, int64_t HS,
                  double theta);

// cos and sin of every angle: cos[t*(HS/2)+i], computed in double then rounded.
// Shared by both directions (and by the CUDA twin's tests).
template <typename Float>
void RopeTables(Float* cos, Float* sin, int64_t T, int64_t HS, double theta);

}  // namespace bm::train::cpu
