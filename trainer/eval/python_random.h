// CPython's `random` module stream (MT19937 seeded by init_by_array, getrandbits,
// choice), so that MMMU's random fallbacks can be reproduced draw for draw.
//
// MMMU's answer extraction (mmmu/utils/eval_utils.py, parse_multi_choice_response)
// answers random.choice(all_choices) when a response names no option; its LLaVA run
// (mmmu/run_llava.py) seeds Python's generator with random.seed(42) and parses the
// responses in dataset order. PythonRandom(42) consumed in the same order gives the
// same letters: seed(int) is init_by_array over the integer's 32-bit words,
// getrandbits(k <= 32) is the top k bits of one 32-bit output, and choice(seq) is
// seq[_randbelow(len(seq))], _randbelow drawing getrandbits(n.bit_length()) until the
// value is below n (CPython 3.2 onwards; checked against CPython 3.11 in
// tests/trainer/mmmu_test.cc).
#pragma once

#include <array>
#include <cstdint>

namespace bm::train::eval {

class PythonRandom {
 public:
  // random.seed(seed) for a non-negative seed below 2^32.
  explicit PythonRandom(uint32_t seed);

  uint32_t Next32();               // genrand_uint32
  uint32_t GetRandBits(int k);     // random.getrandbits(k), 1 <= k <= 32
  uint32_t RandBelow(uint32_t n);  // random._randbelow(n), n >= 1: the index choice() takes
                                   // (0 without a draw for n == 0, where Python raises)

 private:
  std::array<uint32_t, 624> mt_{};
  int index_ = 624;
};

}  // namespace bm::train::eval
