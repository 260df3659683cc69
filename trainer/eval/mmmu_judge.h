// One MMMU evaluation's answers, judged as MMMU's LLaVA run and main_eval_only.py do:
// a multiple-choice response parsed to a letter (ParseMultiChoice, with one Python-
// compatible generator seeded 42 for the run's random fallbacks) then eval_multi_choice;
// an open response parsed to its candidates (ParseOpen) then eval_open.
//
// The random fallbacks are MMMU's only when the responses are judged in MMMU's order:
// MmmuOrder gives it (the subjects in CAT_SHORT2LONG's order, each subject's questions
// in file order, which examples/tools/mmmu_to_jsonl.py keeps from the parquet files).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "trainer/eval/mmmu_answer.h"
#include "trainer/eval/mmmu_question.h"
#include "trainer/eval/mmmu_score.h"

namespace bm::train::eval {

struct MmmuJudgement {
  nlohmann::json pred;  // the letter, or {"numbers": [...], "strings": [...]} sorted
  bool correct = false;
};

class MmmuJudge {
 public:
  explicit MmmuJudge(uint32_t seed = 42) : rng_(seed) {}
  MmmuJudgement Judge(const MmmuQuestion& q, std::string_view response);

 private:
  PythonRandom rng_;
};

// Indices of questions in MMMU's evaluation order (stable within a subject).
std::vector<size_t> MmmuOrder(const std::vector<MmmuQuestion>& questions);

}  // namespace bm::train::eval
