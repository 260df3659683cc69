// Byte-pair encoding of one piece, in two flavours that share one merge loop:
//
//  - tiktoken's (BytePairEncode): repeatedly merge the adjacent pair whose
//    concatenation has the lowest rank (the leftmost one on a tie) until no
//    adjacent pair is a token; a token's rank is its id.
//  - Hugging Face's BPE model (PairMerges::Encode): repeatedly merge the
//    adjacent pair (a, b) that is a merge rule of the lowest rank (leftmost on
//    a tie) into the token a+b, until no adjacent pair is a merge rule. Only
//    listed pairs merge: a+b being a token is not enough. Token ids and merge
//    ranks are independent.
// In both, a part's token is a function of its bytes, so the loop keeps only
// part boundaries and asks a ranker for the rank of two neighbouring parts.
//
// Preconditions: every single byte of the piece is a token (tiktoken_ranks.h
// and hf_tokenizer_json.h check this when loading), piece is not empty.
// Thread safety: pure functions over read-only tables.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "rules/text/rank_map.h"

namespace bm::text {

// Appends the tokens of piece to out. Pieces up to kLinearMaxBytes use the
// linear-scan merge (fastest for the short pieces of real text); longer ones
// use BytePairEncodeHeap, so a megabyte of one repeated character stays
// O(n log n).
void BytePairEncode(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out);

inline constexpr size_t kLinearMaxBytes = 128;

// The two strategies, exposed so tests check they agree.
void BytePairEncodeLinear(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out);
void BytePairEncodeHeap(std::string_view piece, const RankMap& ranks, std::vector<int32_t>* out);

// Hugging Face's merge rules: (left id, right id) → rank. Built once, then
// read-only.
class PairMerges {
 public:
  // Adds the rule of rank `rank`. Returns false when the pair has a rule already.
  bool Add(int32_t left, int32_t right, uint32_t rank);
  // The rank of the rule merging left and right, or RankMap::kNotFound.
  uint32_t Rank(int32_t left, int32_t right) const;
  size_t size() const { return rules_.size(); }

  // Appends the tokens of piece to out; `tokens` maps token bytes to ids
  // (every single byte must be there). Linear merge up to kLinearMaxBytes,
  // heap above, as BytePairEncode.
  void Encode(std::string_view piece, const RankMap& tokens, std::vector<int32_t>* out) const;

 private:
  RankMap rules_;  // key: the two ids' 8 bytes
};

}  // namespace bm::text
