// The llava_data rule's work: LLaVA's JSON (+ its images) → the multimodal
// dataset benchmake-train reads. docs/DATA.md is the user's page.
//
// Output under out_dir (all int32 / uint8 Megatron indexed datasets, one
// sequence per sample, samples in input order, split by SplitRule):
//   train.bin/.idx, valid.bin/.idx      int32 token ids; each "<image>" is ONE
//                                       placeholder id, image_token_id = the text
//                                       vocabulary size (outside the vocabulary)
//   train_mask.bin/.idx, valid_mask.*   uint8 per token: 1 = label, 0 = masked
//                                       (LLaVA's IGNORE_INDEX: BOS, the placeholder,
//                                       human turns, the template; llava_template.h)
//   train_images.bin/.idx, valid_images.*  int32 per sample: its images' indices
//                                       into images.u8, in order (0 or 1 in LLaVA-1.5)
//   images.u8, images.json              the image set (image_set.h): hard links to
//                                       the `images` directory's files when given
//                                       (a llava_images step), else written here
//                                       (empty, count 0, when no sample has an image)
//   stats.json                          {vocab_size, image_token_id, image_tokens,
//                                       template, legacy, model_max_length, samples,
//                                       samples_with_image, images, tokens, labels,
//                                       mismatched, bos_id, eot_id, tokenizer, dtype,
//                                       train {samples, tokens}, valid {...}, split {...}}
// On failure nothing is left in out_dir. Errors name the JSON file and sample
// index, or the image file.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "engine/rule.h"
#include "rules/llava/llava_template.h"
#include "rules/split_dataset_writer.h"
#include "rules/vision/clip_image.h"

namespace bm::rules::llava {

struct LlavaDataOptions {
  std::vector<std::string> inputs;  // LLaVA JSON files (a directory: its *.json, sorted)
  std::string vocab;                // the SentencePiece model
  TemplateOptions tmpl;             // image_token_id is set from the vocabulary
  std::string images_dir;           // an image set (llava_images' output), or ""
  std::string image_folder;         // else: the images, preprocessed here ("" = none)
  vision::ClipImageOptions clip;    // for image_folder
  int image_tokens = 576;           // the vision tower's patches per image (stats only)
  SplitRule split;
  int threads = 1;
};

Result<nlohmann::json> LlavaDataToDirectory(const LlavaDataOptions& options,
                                            const std::string& out_dir, std::ostream* log);

// The JSON files of inputs: files as given, directories' *.json files sorted.
Result<std::vector<std::string>> ResolveJsonInputs(const std::vector<std::string>& inputs);

std::unique_ptr<engine::Rule> MakeLlavaDataRule();
std::unique_ptr<engine::Rule> MakeLlavaImagesRule();

}  // namespace bm::rules::llava
