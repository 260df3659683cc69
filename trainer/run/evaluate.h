// Evaluation of a checkpoint on held-out data (the valid split):
//   - validation loss and perplexity over consecutive windows of mpe tokens
//     (masked-in targets only when the data has a loss mask);
//   - on instruction data (a mask), per example (one sequence: prompt with
//     mask 0, then the answer with mask 1, ending with end-of-text):
//       multiple choice: the true answer among eval_choices - 1 answers of
//         other examples (drawn from the RNG's eval stream), placed at a random
//         position; the candidate with the lowest mean token loss given the
//         prompt wins (first on ties); chance = 1 / eval_choices;
//       exact match: greedy decoding of as many tokens as the answer has, from
//         the prompt; correct when every token id equals the answer's. Only
//         answers of at most eval_max_answer tokens are decoded (each token
//         reruns the prefix: there is no KV cache), and a batch stops early
//         once every row has missed.
// Writes metrics.json into out_dir (kind "evaluate") and returns it.
// MMMU data (an mmmu_data directory) goes to trainer/run/llava_mmmu.h instead, which needs a
// LLaVA checkpoint; a LLaVA checkpoint on other data is refused.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "base/result.h"
#include "trainer/run/run_config.h"

namespace bm::train {

Result<nlohmann::json> RunEvaluation(const RunConfig& run, std::ostream* progress);

}  // namespace bm::train
