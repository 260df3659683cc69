// SplitDatasetWriter: the tokenize rule's output directory — a train and a
// valid Megatron indexed dataset (and their uint8 loss masks), filled
// document by document, with each document sent to one side by a seeded rule.
//
// Layout written under `dir` (the contract with benchmake-train's loader):
//   train.bin/.idx, valid.bin/.idx          token ids, one sequence per
//                                           document (Paddle input: one per
//                                           sentence), dtype from the vocabulary
//   train_mask.bin/.idx, valid_mask.bin/.idx  with_masks only: uint8, the same
//                                           sizes; 1 = trained on, 0 = prompt
//
// The split rule (SplitRule::kDescription): document i (0-based, in input
// order) goes to valid iff Mix(seed + i·φ) / 2^64 < valid_fraction, where Mix
// is SplitMix64's finalizer and φ = 0x9E3779B97F4A7C15. It depends on the
// document's position only, so any thread count gives the same split.
//
// Not thread-safe: one writer, fed in document order. Nothing is visible
// under `dir` until Finish() succeeds (each dataset is written atomically;
// a failure removes what Finish() had already published).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/formats/megatron_dataset.h"
#include "base/result.h"

namespace bm::rules {

struct SplitRule {
  uint64_t seed = 1234;
  double valid_fraction = 0.0;

  static constexpr std::string_view kDescription =
      "document i (0-based, input order) is in valid iff splitmix64_mix(seed + i * "
      "0x9E3779B97F4A7C15) / 2^64 < valid_fraction";
  bool IsValid(uint64_t document_index) const;
};

class SplitDatasetWriter {
 public:
  static Result<SplitDatasetWriter> Create(const std::string& dir, formats::DType dtype,
                                           bool with_masks, SplitRule split);

  // Starts the next document; its side is decided here.
  void BeginDocument();
  // Adds one sequence to the current document. mask: same length, values 0
  // or 1; empty means all 1 (pretraining text). Ignored without masks.
  Status AddSequence(std::span<const int32_t> ids, std::span<const uint8_t> mask = {});
  void EndDocument();
  Status Finish();

  struct Side {
    uint64_t documents = 0;
    uint64_t sequences = 0;
    uint64_t tokens = 0;
  };
  const Side& train() const { return train_; }
  const Side& valid() const { return valid_; }
  bool with_masks() const { return with_masks_; }

 private:
  SplitDatasetWriter() = default;

  std::string dir_;
  SplitRule split_;
  bool with_masks_ = false;
  bool current_valid_ = false;
  uint64_t next_index_ = 0;
  std::optional<formats::IndexedDatasetWriter> ids_[2];  // [0] train, [1] valid
  std::optional<formats::IndexedDatasetWriter> masks_[2];
  Side train_, valid_;
  std::vector<int32_t> mask_buffer_;
};

}  // namespace bm::rules
