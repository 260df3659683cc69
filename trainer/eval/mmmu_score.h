// MMMU's scoring (mmmu/utils/eval_utils.py: eval_multi_choice, eval_open,
// calculate_ins_level_acc) and its subjects and categories (mmmu/utils/data_utils.py:
// CAT_SHORT2LONG, DOMAIN_CAT2SUB_CAT), at MMMU commit bb0b95a945998d91dfef37e969e07d49d1139438.
// MmmuAccuracy gives metrics.json's "mmmu" object: accuracy over all questions, by
// subject and by category (MMMU's six disciplines), each with its question count;
// category and overall accuracies are per question (calculate_ins_level_acc), not the
// mean of the subjects'. Values are unrounded (MMMU's printout rounds to 3 places).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/eval/mmmu_answer.h"

namespace bm::train::eval {

// The 30 subjects in CAT_SHORT2LONG's order: the order run_llava.py evaluates them in.
const std::vector<std::string>& MmmuSubjects();

// The category of a subject ("Art" -> "Art and Design"), or "" when it is not MMMU's.
std::string_view MmmuCategory(std::string_view subject);

// "_".join(id.split("_")[1:-1]): validation_Art_Theory_3 -> Art_Theory.
std::string MmmuSubjectOfId(std::string_view id);

// eval_multi_choice: the prediction equals the answer (or one of the answers).
bool EvalMultiChoice(const std::vector<std::string>& gold, std::string_view pred);

// eval_open: a string prediction contains a normalized string answer, or a number
// prediction equals a normalized number answer (NaN equals nothing).
bool EvalOpen(const std::vector<std::string>& gold, const std::vector<OpenPred>& pred);

struct Judged {
  std::string subject;
  bool correct = false;
};

// {"accuracy", "questions", "correct", "by_subject": {S: {...}}, "by_category": {C: {...}}}
// holding only the subjects and categories that have questions.
nlohmann::json MmmuAccuracy(const std::vector<Judged>& judged);

// The MMMU commit this code follows, as metrics.json names it.
inline constexpr const char* kMmmuCommit = "bb0b95a945998d91dfef37e969e07d49d1139438";

// The fields an MMMU evaluation sets in metrics.json's "eval" object (trainer/run/
// evaluate.h's shape, docs/METRICS.md): {"task": "mmmu", "accuracy": overall,
// "examples": questions, "mmmu": accuracy + {"reference": "MMMU-Benchmark/MMMU@<commit>",
// "seed": seed}}, so that the report's eval column reads eval.accuracy as for every task.
nlohmann::json MmmuEvalFields(const nlohmann::json& accuracy, uint32_t seed);

}  // namespace bm::train::eval
