// MMMU on a LLaVA checkpoint: the model half of LLaVA-1.5's MMMU evaluation (docs/TRAINER.md
// "MMMU"), run by `evaluate` when its data is an mmmu_data directory.
//
// The directory (rules/llava/mmmu_data.h writes it) holds, besides LlavaData's files for the
// split "mmmu" (one sample per question, in questions.jsonl's order: the whole vicuna_v1
// prompt tokenized, image_1 as its one placeholder, images.u8 + images.json), the questions
// themselves (questions.jsonl, MMMU's JSONL lines) and the decode table (decode.json,
// trainer/eval/decode_table.h). For each question, in MMMU's order (trainer/eval/mmmu_run.h),
// the LLaVA model decodes greedily from the prompt with image_1's rows spliced in
// (trainer/run/llava_decoder.h), at most max_new_tokens tokens or
// up to the tokenizer's end-of-sequence id; the new tokens are detokenized with the table and
// judged as MMMU does.
//
// Writes into out_dir: predictions.json (run_llava.py's output file), responses.json (each
// question's raw response, its token ids and why decoding stopped) and metrics.json (kind
// evaluate; eval = MmmuEvalFields plus "decoding": {"max_new_tokens", "greedy", "stopped":
// {"eos", "max_new_tokens", "context"}}), each written atomically.
//
// One rank: on the cpu in fp32, or on one GPU (device "cuda", fp32 or bf16: every part of the
// model frozen, no KV cache — CudaLlavaTrainer::GenerateGreedy). Errors name the directory's
// file, or the question's id.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "base/result.h"
#include "trainer/run/run_config.h"

namespace bm::train {

// Whether dir is an mmmu_data directory (its stats.json says "task": "mmmu").
bool IsMmmuData(const std::string& dir);

Result<nlohmann::json> RunLlavaMmmu(const RunConfig& run, std::ostream* progress);

}  // namespace bm::train
