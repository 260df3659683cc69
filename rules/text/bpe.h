// Byte-pair encoding of one piece, with tiktoken's merge order: repeatedly
// merge the adjacent pair whose concatenation has the lowest rank (the
// leftmost one on a tie) until no adjacent pair is a token.
//
// Preconditions: every single byte of the piece has a rank (tiktoken_ranks.h
// checks this when loading), piece is not empty.
// Thread safety: pure functions over a read-only RankMap.
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

}  // namespace bm::text
