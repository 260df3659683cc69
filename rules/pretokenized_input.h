// Pretokenized inputs, converted to the tokenize rule's datasets without
// re-tokenizing: every id and every document boundary is kept.
//
//   PaddleNLP  PREFIX_ids.npy  all ids, concatenated (any integer dtype)
//              PREFIX_idx.npz  lens: int32 tokens per sentence;
//                              docs: int64 cumulative sentence counts at
//                              document boundaries, starting at 0
//              (PaddleNLP create_pretraining_data.py; read back as
//              pointers = cumsum(lens), doc_idx = docs). Each sentence becomes
//              one sequence, each document one document; no end-of-text is
//              added (PaddleNLP's --append_eos already put it there).
//   plain .npy a 1-D id array (FlagPerf's openwebtext_llama2_100M.npy). A
//              document ends after each eot_id; ids after the last one (or all
//              of them, if none) form the last document. Nothing is added.
// Errors: kCorrupt when lens do not sum to the ids or docs is not increasing
// from 0 to len(lens); kInvalidArgument for a negative id or one not below
// vocab_size (ids made by another tokenizer: the trainer sizes its embedding
// by the vocabulary stats.json records).
#pragma once

#include <string>

#include "base/result.h"
#include "rules/split_dataset_writer.h"

namespace bm::rules {

struct ConvertedStats {
  uint64_t documents = 0;
  uint64_t tokens = 0;
};

// ids_path ends with "_ids.npy"; idx_path is its "_idx.npz". vocab_size: the
// tokenizer's, which every id must be below.
Result<ConvertedStats> ConvertPaddle(const std::string& ids_path, const std::string& idx_path,
                                     size_t vocab_size, SplitDatasetWriter& writer);
Result<ConvertedStats> ConvertNpy(const std::string& path, int32_t eot_id, size_t vocab_size,
                                  SplitDatasetWriter& writer);

}  // namespace bm::rules
