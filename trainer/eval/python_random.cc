#include "trainer/eval/python_random.h"

#include <bit>

namespace bm::train::eval {
namespace {
constexpr int kN = 624, kM = 397;
}

PythonRandom::PythonRandom(uint32_t seed) {
  // init_genrand(19650218), then init_by_array({seed}) as CPython's _randommodule.c.
  mt_[0] = 19650218u;
  for (int i = 1; i < kN; ++i)
    mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  const uint32_t key[1] = {seed};
  const int key_length = 1;
  int i = 1, j = 0;
  for (int k = kN; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;
  index_ = kN;
}

uint32_t PythonRandom::Next32() {
  if (index_ >= kN) {
    for (int k = 0; k < kN; ++k) {
      const uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % kN] & 0x7fffffffu);
      mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint32_t PythonRandom::GetRandBits(int k) {
  if (k <= 0) return 0;  // getrandbits(0) is 0 and draws nothing
  return Next32() >> (32 - k);
}

uint32_t PythonRandom::RandBelow(uint32_t n) {
  if (n == 0) return 0;  // Python raises (choice of an empty sequence); no draw here
  const int k = std::bit_width(n);
  uint32_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

}  // namespace bm::train::eval
