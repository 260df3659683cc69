// LlavaData: one split of a `llava_data` step's output (docs/DATA.md), read a
// sample at a time: LLaVA trains on whole samples, not on stream windows.
//
// Files, in the step's output directory:
//   SPLIT.bin/.idx          token ids per sample; each <image> is ONE placeholder id
//                           (stats.json's image_token_id, = the text vocabulary size)
//   SPLIT_mask.bin/.idx     uint8 per token: 1 = a label (trained on), 0 = IGNORE_INDEX
//   SPLIT_images.bin/.idx   per sample: the indices into images.u8 of its images, in the order
//                           of its placeholders
//   images.u8 + images.json [count, size, size, 3] uint8 (CLIP-resized, not normalised);
//                           {"size", "mean", "std", "count", ...}
//   stats.json              {"vocab_size", "image_token_id", "image_tokens", ...}
// SPLIT is "train" or "valid".
//
// Immutable after Open; Sample and Pixels are safe from several threads.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/formats/megatron_dataset.h"
#include "base/result.h"

namespace bm::train {

struct LlavaSample {
  std::vector<int32_t> tokens;  // placeholders included
  std::vector<uint8_t> labels;  // 1 = the token is a label
  std::vector<int32_t> images;  // indices into images.u8, one per placeholder
};

class LlavaData {
 public:
  // Errors name the file: kNotFound (a missing file), kCorrupt (sizes that disagree: mask vs
  // tokens, a sample's image count vs its placeholders, images.u8 vs images.json, an image
  // index past the count), kInvalidArgument (stats.json without image_token_id).
  static Result<LlavaData> Open(const std::string& dir, const std::string& split);

  int64_t num_samples() const { return static_cast<int64_t>(tokens_.num_sequences()); }
  int64_t vocab_size() const { return vocab_size_; }  // text vocabulary
  int64_t image_token_id() const { return image_token_id_; }
  int64_t image_tokens() const { return image_tokens_; }  // positions per image (576)
  int64_t image_size() const { return image_size_; }      // S
  int64_t num_images() const { return num_images_; }
  const std::array<float, 3>& mean() const { return mean_; }
  const std::array<float, 3>& std() const { return std_; }
  const std::string& dir() const { return dir_; }

  // Sample i (0 <= i < num_samples()). kCorrupt when its image count differs from its
  // placeholders or an index lies outside images.u8.
  Result<LlavaSample> Sample(int64_t i) const;
  // Image k's pixel values, CHW float [3, S, S]: (x / 255 - mean) / std (CLIPImageProcessor's
  // rescale and normalise).
  Status Pixels(int64_t image, float* chw) const;

 private:
  LlavaData(formats::IndexedDataset tokens, formats::IndexedDataset labels,
            formats::IndexedDataset images)
      : tokens_(std::move(tokens)), labels_(std::move(labels)), images_(std::move(images)) {}

  formats::IndexedDataset tokens_, labels_, images_;
  std::string dir_, split_, pixels_path_;
  int64_t vocab_size_ = 0, image_token_id_ = 0, image_tokens_ = 0, image_size_ = 0, num_images_ = 0;
  std::array<float, 3> mean_{}, std_{};
};

}  // namespace bm::train
