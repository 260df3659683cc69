// DecodeTable: generated token ids back to text without a tokenizer library (the trainer
// depends on base/ only), as Hugging Face's slow LlamaTokenizer decodes LLaVA's output
// (`tokenizer.batch_decode(ids, skip_special_tokens=True)`, which is SentencePiece's
// DecodeIds over the ids that are not special).
//
// The table is written by the mmmu_data rule (rules/llava/mmmu_data.h) from the target's
// SentencePiece model, one entry per id. The file, decode.json:
//   {"format": "benchmake-decode-table", "version": 1, "tokenizer": "sentencepiece",
//    "vocab_size": N, "eos_id": E, "strip_leading_space": true|false,
//    "pieces": [entry, ...]}                    N entries, entry i for id i:
//   entry := null            a control or unknown piece (<s>, </s>, <unk>): skipped, as
//                            skip_special_tokens skips them
//          | 0..255          a byte-fallback piece <0xNN>: that byte
//          | "text"          any other piece, its U+2581 "▁" written as " "
// Decode concatenates the entries of the ids (ids outside [0, N): skipped, as llava-hf's
// added tokens past the SentencePiece vocabulary are special), drops one leading " " when the
// first entry is text that starts with it and strip_leading_space is set (SentencePiece
// removes the dummy prefix's "▁"; the model's add_dummy_prefix), and replaces each byte that
// does not begin or continue a valid UTF-8 sequence by U+FFFD, one per byte, as
// SentencePiece does with stray byte pieces. Refuses a newer version, naming it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "base/result.h"

namespace bm::train::eval {

inline constexpr const char* kDecodeTableFile = "decode.json";
inline constexpr const char* kDecodeTableFormat = "benchmake-decode-table";
inline constexpr int kDecodeTableVersion = 1;

class DecodeTable {
 public:
  // Errors (kCorrupt, kNotFound): name `path` (or `origin`) and the entry.
  static Result<DecodeTable> Read(const std::string& path);
  static Result<DecodeTable> FromJson(const nlohmann::json& j, const std::string& origin);

  int64_t size() const { return static_cast<int64_t>(pieces_.size()); }
  int32_t eos_id() const { return eos_id_; }
  std::string Decode(std::span<const int32_t> ids) const;

 private:
  struct Piece {
    enum Kind : uint8_t { kSkip, kByte, kText } kind = kSkip;
    std::string bytes;
  };
  std::vector<Piece> pieces_;
  int32_t eos_id_ = -1;
  bool strip_leading_space_ = true;
};

// Bytes with every byte that is not part of a valid UTF-8 sequence replaced by U+FFFD.
std::string ReplaceInvalidUtf8(std::string_view bytes);

}  // namespace bm::train::eval
