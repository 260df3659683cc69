// MMMU's answer extraction, as mmmu/utils/eval_utils.py of github.com/MMMU-Benchmark/MMMU
// (read at commit bb0b95a945998d91dfef37e969e07d49d1139438) does it; each function
// names the Python function it follows. Differences, all outside ASCII: Python's
// str.lower/strip/split and re's \d, \b are Unicode-aware; here lower-casing, white
// space (Python's ASCII set: space, \t \n \v \f \r and \x1c-\x1f) and digits are ASCII,
// and lengths are counted in UTF-8 code points as Python counts characters.
// tests/trainer/mmmu_test.cc compares every function's results with MMMU's own on 50
// responses (tests/data/mmmu/golden.json).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/eval/python_random.h"

namespace bm::train::eval {

// One element of parse_open_response's list: a float (rounded to 2 decimals) or a
// lower-cased string.
struct OpenPred {
  bool is_number = false;
  double number = 0;
  std::string text;
  bool operator==(const OpenPred& o) const {
    return is_number == o.is_number && (is_number ? number == o.number : text == o.text);
  }
};

// parse_multi_choice_response(response, all_choices, index2ans): the letter ("A", ...)
// of options[i] is 'A' + i. When no option is named, MMMU's random.choice(all_choices):
// rng draws, so the caller must call this in MMMU's order with one generator seeded 42.
// No options: "" (MMMU's random.choice([]) raises; ReadMmmuQuestions refuses such questions).
std::string ParseMultiChoice(std::string_view response, const std::vector<std::string>& options,
                             PythonRandom& rng);

// parse_open_response(response): the candidate answers (a set: no duplicates, no order).
std::vector<OpenPred> ParseOpen(std::string_view response);

// extract_numbers(string): the three regular expressions' matches, in that order.
std::vector<std::string> ExtractNumbers(std::string_view text);

// check_is_number + float(): Python's float() of the string with ',' removed, if it parses.
std::optional<double> PythonFloat(std::string_view text);

// normalize_str(string): [round(float, 2)] for a number, else the lower-cased string,
// as [" s", "s "] when it has one character.
std::vector<OpenPred> NormalizeStr(std::string_view text);

}  // namespace bm::train::eval
