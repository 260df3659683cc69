// One MMMU evaluation over a model's responses: the questions in MMMU's order, each
// asked with LLaVA-1.5's prompt (mmmu_prompt.h) through the caller's `respond`, judged as
// MMMU does (mmmu_judge.h), and summed up for metrics.json (mmmu_score.h).
//
// `predictions` is run_llava.py's output file, {id: letter for multiple choice, the raw
// response for open questions}, the form MMMU's own mmmu/main_eval_only.py reads
// (`--output_path`, with its answer_dict_val.json), so a run can be re-scored by MMMU's
// tool for a cross-check; `responses` keeps every raw response by id.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "trainer/eval/mmmu_question.h"

namespace bm::train::eval {

struct MmmuRun {
  nlohmann::json eval;         // MmmuEvalFields
  nlohmann::json predictions;  // {id: pred}, run_llava.py's output
  nlohmann::json responses;    // {id: raw response}
};

// respond(question, prompt) -> the model's decoded answer; its failure stops the run,
// named with the question's id.
using MmmuRespond =
    std::function<Result<std::string>(const MmmuQuestion& q, const std::string& prompt)>;

Result<MmmuRun> RunMmmu(const std::vector<MmmuQuestion>& questions, const MmmuRespond& respond,
                        uint32_t seed = 42);

}  // namespace bm::train::eval
