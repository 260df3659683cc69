// Helpers that write small tokenize outputs (Megatron datasets + stats.json)
// into a temporary directory for the trainer's tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/formats/megatron_dataset.h"
#include "trainer/rng.h"

namespace bm::train::testing {

// The trainer tests' vocabulary (PatternDocs, WriteStats): 64 tokens, 63 the end of text.
constexpr int32_t kVocab = 64, kEot = 63;

inline std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("bm_trainer_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void WriteSplit(const std::string& dir, const std::string& split,
                       const std::vector<std::vector<int32_t>>& docs,
                       const std::vector<std::vector<int32_t>>& masks = {}) {
  std::filesystem::create_directories(dir);
  auto w = formats::IndexedDatasetWriter::Create(dir + "/" + split, formats::DType::kUInt16);
  ASSERT_TRUE(w.ok()) << w.status().message();
  for (const auto& d : docs) {
    ASSERT_TRUE(w->AddSequence(d).ok()) << w->AddSequence(d).message();
    w->EndDocument();
  }
  ASSERT_TRUE(w->Finish().ok());
  if (masks.empty()) return;
  auto m =
      formats::IndexedDatasetWriter::Create(dir + "/" + split + "_mask", formats::DType::kUInt8);
  ASSERT_TRUE(m.ok());
  for (const auto& d : masks) {
    ASSERT_TRUE(m->AddSequence(d).ok());
    m->EndDocument();
  }
  ASSERT_TRUE(m->Finish().ok());
}

inline void WriteStats(const std::string& dir, int64_t vocab, int32_t eot) {
  std::ofstream(dir + "/stats.json")
      << nlohmann::json{{"vocab_size", vocab}, {"eot_id", eot}}.dump();
}

// A corpus with structure: documents of a repeating pattern with noise, ending in eot.
inline std::vector<std::vector<int32_t>> PatternDocs(int64_t docs, int64_t len, int32_t vocab,
                                                     int32_t eot, uint64_t seed) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t d = 0; d < docs; ++d) {
    std::vector<int32_t> doc;
    int32_t x = static_cast<int32_t>(UniformIntAt(seed, 5, d, vocab - 1));
    for (int64_t i = 0; i < len; ++i) {
      doc.push_back(x);
      x = (x * 7 + 3) % (vocab - 1);  // deterministic successor: learnable
    }
    doc.push_back(eot);
    out.push_back(doc);
  }
  return out;
}

// The run config the training-loop tests share: 12 steps of a tiny `preset` (max_seq 32 unless
// `overrides` says otherwise) on LBS 4 x MPE 16 windows of data_dir; callers add the device.
inline nlohmann::json TinyPretrainConfig(const std::string& data_dir, const std::string& out_dir,
                                         const std::string& preset,
                                         nlohmann::json overrides = {{"max_seq", 32}}) {
  return {
      {"mode", "pretrain"}, {"data", data_dir},
      {"out_dir", out_dir}, {"model", {{"preset", preset}, {"overrides", std::move(overrides)}}},
      {"lbs", 4},           {"mpe", 16},
      {"gas", 1},           {"steps", 12},
      {"warmup_steps", 2},  {"lr", 3e-3},
      {"min_lr", 3e-4},     {"seed", 5}};
}

// The step records of out_dir/log.jsonl (its header line skipped).
inline std::vector<nlohmann::json> ReadLog(const std::string& out_dir) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(out_dir + "/log.jsonl");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace bm::train::testing
