// The mmmu_data rule's work: MMMU's questions (the JSONL + images that
// examples/tools/mmmu_to_jsonl.py writes, trainer/eval/mmmu_question.h) → the directory that
// `evaluate` of a LLaVA checkpoint reads (trainer/run/llava_mmmu.h). The prompt is built,
// tokenized and its image preprocessed here, with the libraries the trainer does not link.
//
// Per question, in file order: LlavaMmmuPrompt (MMMU's prompt for llava1.5.yaml inside
// LLaVA's vicuna_v1 template, "<image>\n" first in the user's turn) tokenized as MMMU's
// call_llava_engine_df does (tokenizer_image_token: llava_template.h's TokenizeWithImages,
// BOS first, the one "<image>" as the placeholder image_token_id = the vocabulary size), and
// image_1 (MMMU's LLaVA run feeds image_1 only) preprocessed as MMMU's run does it:
// CLIPImageProcessor.preprocess of the image, no expand2square (pad_to_square false;
// llava_images' default pads, as LLaVA's training does).
//
// Output under out_dir:
//   mmmu.bin/.idx, mmmu_mask.*, mmmu_images.*   LlavaData's split "mmmu"
//                             (trainer/data/llava_data.h): the prompt ids, all-zero masks,
//                             image_1's index into images.u8
//   images.u8, images.json    the image set (image_set.h), each distinct image_1 once
//   questions.jsonl           the input's question lines, verbatim, blank lines dropped
//   decode.json               the tokenizer's decode table (trainer/eval/decode_table.h)
//   stats.json                {"task": "mmmu", "questions", "multiple_choice", "open",
//                             "vocab_size", "image_token_id", "image_tokens", "image_size",
//                             "pad_to_square", "bos_id", "eot_id", "tokenizer", "template",
//                             "legacy", "prompt_tokens": {"max", "total"} (placeholders
//                             counted as image_tokens), "images", "dtype"}
// On failure nothing is left in out_dir. Errors name the JSONL file and line (a malformed
// question, a prompt without exactly one placeholder) or the image file and its question.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "engine/rule.h"
#include "rules/vision/clip_image.h"

namespace bm::rules::llava {

struct MmmuDataOptions {
  std::string questions;  // the JSONL file; image paths are relative to its folder
  std::string vocab;      // the SentencePiece model
  bool legacy = false;    // the tokenizer's legacy (llava_template.h)
  vision::ClipImageOptions clip;
  int image_tokens = 576;
  int threads = 1;
};

Result<nlohmann::json> MmmuDataToDirectory(const MmmuDataOptions& options,
                                           const std::string& out_dir, std::ostream* log);

std::unique_ptr<engine::Rule> MakeMmmuDataRule();

}  // namespace bm::rules::llava
