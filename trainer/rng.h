// The one deterministic random number source of the trainer, shared by every
// backend: counter-based, so any value can be computed from (seed, stream,
// index) alone — in any order, on any thread, on the host or on a device —
// and a resumed run draws exactly what an uninterrupted one would.
//
//   Mix(seed, stream, index)      64 random bits (splitmix64 finalizer over a
//                                 Weyl sequence of the three words)
//   UniformAt(...)                float-free uniform in [0, 1) as a double
//   NormalAt(...)                 standard normal (Box–Muller on two mixes)
//
// Streams used by the trainer (keep stable: they define the bits of a run):
//   kStreamInit + tensor index    parameter initialization
//   kStreamData                   window sampling (index = step * 2^32 + row)
//   kStreamEval                   evaluation choices (distractors)
#pragma once

#include <cmath>
#include <cstdint>

namespace bm::train {

inline constexpr uint64_t kStreamData = 1;
inline constexpr uint64_t kStreamEval = 2;
inline constexpr uint64_t kStreamInit = 1000;  // + tensor index in the layout

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline uint64_t Mix(uint64_t seed, uint64_t stream, uint64_t index) {
  return SplitMix64(SplitMix64(SplitMix64(seed) ^ stream) ^ index);
}

// Uniform in [0, 1) with 53 random bits.
inline double UniformAt(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<double>(Mix(seed, stream, index) >> 11) * 0x1.0p-53;
}

// Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 for n < 2^32).
inline uint64_t UniformIntAt(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Mix(seed, stream, index)) * n) >>
                               64);
}

// Standard normal from two independent mixes (Box–Muller, cosine branch), in
// double precision so every backend computes the same value before rounding.
inline double NormalAt(uint64_t seed, uint64_t stream, uint64_t index) {
  double u1 = UniformAt(seed, stream, 2 * index);
  double u2 = UniformAt(seed, stream, 2 * index + 1);
  u1 = 1.0 - u1;  // (0, 1]: log is finite
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace bm::train
