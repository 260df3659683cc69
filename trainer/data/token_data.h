// TokenData: one split of a tokenize step's output, seen as one stream of
// tokens — every sequence of the Megatron dataset back to back (each already
// ends with the end-of-text token) — with its optional loss mask.
//
// Files, in the tokenize step's output directory (docs/TRAINER.md):
//   SPLIT.bin/.idx        tokens (any integer dtype)
//   SPLIT_mask.bin/.idx   uint8 per token, 1 = trained on; same sizes as SPLIT
//   stats.json            {"vocab_size", "eot_id", ...}
// SPLIT is "train" or "valid".
//
// Immutable after Open; safe to read from several threads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/formats/megatron_dataset.h"
#include "base/result.h"

namespace bm::train {

class TokenData {
 public:
  // Errors: kNotFound (no SPLIT.idx), kCorrupt (a mask whose sizes differ from
  // the tokens'), and the dataset reader's errors.
  static Result<TokenData> Open(const std::string& dir, const std::string& split);

  int64_t num_tokens() const { return static_cast<int64_t>(starts_.back()); }
  int64_t num_sequences() const { return static_cast<int64_t>(starts_.size()) - 1; }
  bool has_mask() const { return mask_.has_value(); }
  // Tokens of sequence i begin at stream offset sequence_start(i).
  int64_t sequence_start(int64_t i) const { return static_cast<int64_t>(starts_[i]); }
  int64_t sequence_size(int64_t i) const { return sequence_start(i + 1) - sequence_start(i); }

  // Copies stream tokens [offset, offset + count) (and their mask when `mask`
  // is non-null: all ones without a mask file). kInvalidArgument past the end;
  // kCorrupt for a token outside the vocabulary set by LimitIds.
  Status Read(int64_t offset, int64_t count, int32_t* tokens, uint8_t* mask) const;

  // From now on Read refuses an id outside [0, vocab): the model's embedding has
  // `vocab` rows, and a dataset made elsewhere (or one whose stats.json lies) may
  // hold larger ids, which would index past it.
  void LimitIds(int64_t vocab) { vocab_ = vocab; }

 private:
  TokenData(std::string prefix, formats::IndexedDataset tokens,
            std::optional<formats::IndexedDataset> mask);
  Status CheckIds(const int32_t* tokens, int64_t count, int64_t offset) const;

  std::string prefix_;  // DIR/SPLIT, for messages
  formats::IndexedDataset tokens_;
  std::optional<formats::IndexedDataset> mask_;
  std::vector<uint64_t> starts_;  // prefix sums of sequence sizes, num_sequences + 1
  int64_t vocab_ = 0;             // 0: ids unchecked
};

// stats.json of a tokenize output directory ({} when absent); kCorrupt when it is not an object
// or its vocab_size or eot_id is not an integer.
Result<nlohmann::json> ReadDataStats(const std::string& dir);

}  // namespace bm::train
