// Vocabulary: the token byte strings of a byte-level BPE and their ranks,
// loaded from a tiktoken rank file.
//
// A tiktoken rank file (what tiktoken's load_tiktoken_bpe reads) is text:
//   file := line*          line := base64(token bytes) SP rank LF
// Ranks are the token ids and the merge priorities (lower merges first).
// Ranks need not be sorted or dense; each rank and each token appears once.
// Special tokens (<|endoftext|>) are not in the file; encodings add them.
//
// Immutable after loading; safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rules/text/rank_map.h"

namespace bm::text {

struct Vocabulary {
  std::vector<std::string> tokens;  // by rank; "" where a rank is unused
  RankMap ranks;                    // token bytes → rank

  // One more than the largest rank.
  size_t size() const { return tokens.size(); }
};

// Parses rank file contents. `origin` names the file in errors.
// Errors: kCorrupt with the line number (bad base64, missing rank, a rank or
// token repeated, a single byte missing: every byte must be a token so that
// any input encodes).
Result<Vocabulary> ParseTiktokenRanks(std::string_view contents, std::string_view origin);

// Reads and parses a rank file. Errors: kNotFound, kIo, and ParseTiktokenRanks's.
Result<Vocabulary> LoadTiktokenRanks(const std::string& path);

// The 256 single bytes, rank = byte value (the `bytes` encoding's vocabulary).
Vocabulary ByteVocabulary();

// Base64 (RFC 4648, with padding) decoding; nullopt-like failure as an error.
Result<std::string> DecodeBase64(std::string_view text);

}  // namespace bm::text
