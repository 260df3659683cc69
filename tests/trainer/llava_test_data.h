// Writes small llava_data outputs (docs/DATA.md's layout: tokens with one
// placeholder per <image>, label bits, per-sample image indices, images.u8 and
// the two JSON files) into a directory, for the trainer's LLaVA tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/formats/megatron_dataset.h"

namespace bm::train::testing {

struct LlavaSampleSpec {
  std::vector<int32_t> tokens;
  std::vector<int32_t> labels;
  std::vector<int32_t> images;
};

inline void WriteSequences(const std::string& prefix, formats::DType dtype,
                           const std::vector<std::vector<int32_t>>& seqs) {
  auto w = formats::IndexedDatasetWriter::Create(prefix, dtype);
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (const auto& s : seqs) {
    ASSERT_TRUE(w->AddSequence(s).ok());
    w->EndDocument();
  }
  ASSERT_TRUE(w->Finish().ok());
}

// pixels: count * size * size * 3 bytes (HWC per image).
inline void WriteLlavaData(const std::string& dir, const std::string& split,
                           const std::vector<LlavaSampleSpec>& samples, int64_t vocab,
                           int64_t image_tokens, int64_t size, const std::vector<uint8_t>& pixels,
                           std::array<float, 3> mean = {0.5f, 0.5f, 0.5f},
                           std::array<float, 3> std = {0.25f, 0.5f, 0.25f}) {
  std::filesystem::create_directories(dir);
  std::vector<std::vector<int32_t>> tokens, labels, images;
  for (const LlavaSampleSpec& s : samples) {
    tokens.push_back(s.tokens);
    labels.push_back(s.labels);
    images.push_back(s.images);
  }
  WriteSequences(dir + "/" + split, formats::DType::kInt32, tokens);
  WriteSequences(dir + "/" + split + "_mask", formats::DType::kUInt8, labels);
  WriteSequences(dir + "/" + split + "_images", formats::DType::kInt32, images);
  std::ofstream(dir + "/images.u8", std::ios::binary)
      .write(reinterpret_cast<const char*>(pixels.data()),
             static_cast<std::streamsize>(pixels.size()));
  const int64_t count = static_cast<int64_t>(pixels.size()) / (size * size * 3);
  std::ofstream(dir + "/images.json") << nlohmann::json{{"size", size},
                                                        {"mean", mean},
                                                        {"std", std},
                                                        {"count", count},
                                                        {"sources", nlohmann::json::array()}}
                                             .dump();
  std::ofstream(dir + "/stats.json") << nlohmann::json{{"vocab_size", vocab},
                                                       {"image_token_id", vocab},
                                                       {"image_tokens", image_tokens},
                                                       {"template", "plain"},
                                                       {"samples", samples.size()}}
                                            .dump();
}

}  // namespace bm::train::testing
