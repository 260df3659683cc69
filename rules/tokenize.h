// The `tokenize` rule: text (or pretokenized ids) → Megatron indexed datasets
// split into train and valid, plus stats.json. docs/DATA.md is the user's
// page; this header is the contract.
//
// Parameters (see TokenizeRule::params() for defaults and docs): input (a list
// of files or targets; a target's directory contributes every file in it,
// recursively, in name order; a compressed file or tar — .gz .zst .xz .tar —
// contributes its members in archive order, base/archive.h ForEachMember),
// format, tokenizer, vocab (a file, or a directory holding one file),
// text_field, document_start, the prompt templates, max_tokens,
// valid_fraction, seed, threads.
//
// Output under out_dir: the layout of split_dataset_writer.h and stats.json:
//   {documents, tokens, bytes, bytes_per_token, vocab_size, eot_id, [bos_id,]
//    tokenizer, dtype, formats, masks, train: {documents, tokens}, valid: {...},
//    split: {rule, seed, valid_fraction, train_documents, valid_documents}}
// bos_id is there only for tokenizers that start documents with BOS
// (Tokenizer::adds_bos: SentencePiece models, some tokenizer.json files).
// stats.json holds only what the inputs and key parameters determine, so the
// step's output bytes are the same for any thread count or machine; the
// step's metrics add time_s and threads.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "engine/rule.h"
#include "rules/documents.h"
#include "rules/split_dataset_writer.h"

namespace bm::rules {

struct TokenizeOptions {
  std::vector<std::string> inputs;  // files or directories (absolute or relative to the cwd)
  std::string format = "auto";      // "auto" or a FormatName
  std::string tokenizer = "auto";   // a kind of text::OpenTokenizer (rules/text/tokenizer.h)
  std::string vocab;                // its file (unused for "bytes")
  ReadOptions read;
  SplitRule split;
  int threads = 1;
  // Stop after the document that brings the total to this many tokens (text
  // inputs, in input order; 0: all). FlagPerf's "first 100M tokens".
  uint64_t max_tokens = 0;
};

// Tokenizes into out_dir (which must exist). Returns the stats.json object.
// On failure nothing is left in out_dir.
Result<nlohmann::json> TokenizeToDirectory(const TokenizeOptions& options,
                                           const std::string& out_dir, std::ostream* log);

std::unique_ptr<engine::Rule> MakeTokenizeRule();

}  // namespace bm::rules
