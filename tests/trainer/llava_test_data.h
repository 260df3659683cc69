// Writes small llava_data outputs (docs/DATA.md's layout: tokens with one
// placeholder per <image>, label bits, per-sample image indices, images.u8 and
// the two JSON files) into a directory, for the trainer's LLaVA tests.
//
// The Megatron .bin/.idx files are spelled out byte by byte here, from
// Megatron-LM's indexed_dataset.py (magic "MMIDIDX\0\0", u64 version 1, u8
// dtype code, u64 sequence count, u64 doc_index count, i32 sizes, i64 byte
// pointers, i64 doc_index; little-endian), not through the project's writer,
// so a reader test does not check our reader against our own writer.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace bm::train::testing {

struct LlavaSampleSpec {
  std::vector<int32_t> tokens;
  std::vector<int32_t> labels;
  std::vector<int32_t> images;
};

// Appends `bytes` little-endian bytes of v.
inline void PutLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// PREFIX.bin and PREFIX.idx with one document per sequence; element_bytes 4 (int32, code 4)
// or 1 (uint8, code 1).
inline void WriteMegatronBytes(const std::string& prefix, int element_bytes,
                               const std::vector<std::vector<int32_t>>& seqs) {
  std::string bin, idx("MMIDIDX\0\0", 9);
  PutLE(&idx, 1, 8);                           // version
  PutLE(&idx, element_bytes == 4 ? 4 : 1, 1);  // dtype: int32 = 4, uint8 = 1
  PutLE(&idx, seqs.size(), 8);                 // sequences
  PutLE(&idx, seqs.size() + 1, 8);             // doc_index entries
  for (const auto& s : seqs) PutLE(&idx, s.size(), 4);
  uint64_t pointer = 0;
  for (const auto& s : seqs) {
    PutLE(&idx, pointer, 8);
    pointer += s.size() * element_bytes;
    for (int32_t v : s) PutLE(&bin, static_cast<uint32_t>(v), element_bytes);
  }
  for (size_t d = 0; d <= seqs.size(); ++d) PutLE(&idx, d, 8);
  std::ofstream(prefix + ".bin", std::ios::binary).write(bin.data(), bin.size());
  std::ofstream(prefix + ".idx", std::ios::binary).write(idx.data(), idx.size());
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
  WriteMegatronBytes(dir + "/" + split, 4, tokens);
  WriteMegatronBytes(dir + "/" + split + "_mask", 1, labels);
  WriteMegatronBytes(dir + "/" + split + "_images", 4, images);
  std::ofstream(dir + "/images.u8", std::ios::binary)
      .write(reinterpret_cast<const char*>(pixels.data()),
             static_cast<std::streamsize>(pixels.size()));
  const int64_t count = static_cast<int64_t>(pixels.size()) / (size * size * 3);
  std::ofstream(dir + "/images.json") << nlohmann::json{
      {"size", size},
      {"mean", mean},
      {"std", std},
      {"count", count},
      {"sources", nlohmann::json::array()}}.dump();
  std::ofstream(dir + "/stats.json") << nlohmann::json{
      {"vocab_size", vocab},
      {"image_token_id", vocab},
      {"image_tokens", image_tokens},
      {"template", "plain"},
      {"samples", samples.size()}}.dump();
}

}  // namespace bm::train::testing
