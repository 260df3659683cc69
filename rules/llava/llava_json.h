// LLaVA's training JSON: LCS-558K's blip_laion_cc_sbu_558k.json (pretraining)
// and llava_v1_5_mix665k.json (finetuning) are one JSON list of samples
//   {"id": "...", "image": "relative/path.jpg", "conversations":
//     [{"from": "human", "value": "<image>\n..."}, {"from": "gpt", "value": "..."}, ...]}
// where "image" is absent for text-only samples (mix665k's ShareGPT part) and
// "id" is a string or a number. Other fields are ignored. "conversations" must
// hold at least one turn (LLaVA's preprocess reads its first).
//
// Errors (kInvalidArgument, bad JSON included: exit 2; kNotFound/kIo for the file)
// name the file and, for a JSON syntax error, its line and column
// ("mix.json:3:31: not valid JSON: ..."), for a bad sample its index in the list,
// its id and the field:
// "mix.json: sample 12 (id \"abc\"): conversations[3].value is not a string".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "rules/llava/llava_template.h"

namespace bm::rules::llava {

struct Sample {
  std::string id;
  std::optional<std::string> image;  // relative to the image folder
  std::vector<Turn> conversations;
};

Result<std::vector<Sample>> ParseLlavaJson(std::string_view contents, const std::string& origin);
Result<std::vector<Sample>> ReadLlavaJson(const std::string& path);

// "FILE: sample I (id \"ID\")": how errors name a sample.
std::string SampleWhere(const std::string& file, size_t index, const std::string& id);

// An image path that stays inside the image folder: relative, no "..", not
// empty. Errors (kInvalidArgument) say why.
Status CheckImagePath(const std::string& path);

}  // namespace bm::rules::llava
