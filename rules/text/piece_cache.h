// PieceCache: the ids of pieces that needed BPE merges, remembered per thread.
// In real text the same rare words recur, and a merge costs tens of rank
// lookups. One cache per thread, tied to one tokenizer (by an owner id that is
// never reused, so a cache never serves ids of another tokenizer), bounded in
// size (about 1 MiB per thread). It changes speed, never ids.
//
// Thread safety: ThreadPieceCache() returns the calling thread's own cache.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rules/text/rank_map.h"

namespace bm::text {

class PieceCache {
 public:
  // Pieces longer than this are encoded without the cache.
  static constexpr size_t kMaxPieceBytes = 64;

  // Appends the ids of piece to out: from the cache, or from encode(piece,
  // out), whose output is then remembered.
  template <typename EncodeFn>
  void Encode(std::string_view piece, std::vector<int32_t>* out, EncodeFn&& encode) {
    if (piece.size() > kMaxPieceBytes) {
      encode(piece, out);
      return;
    }
    auto hit = entries_.find(piece);
    if (hit != entries_.end()) {
      const auto first = tokens_.begin() + hit->second.first;
      out->insert(out->end(), first, first + hit->second.second);
      return;
    }
    const size_t before = out->size();
    encode(piece, out);
    if (entries_.size() >= kMaxEntries) Clear();
    const auto offset = static_cast<uint32_t>(tokens_.size());
    tokens_.insert(tokens_.end(), out->begin() + before, out->end());
    entries_.emplace(std::string(piece),
                     std::make_pair(offset, static_cast<uint32_t>(out->size() - before)));
  }

 private:
  friend PieceCache& ThreadPieceCache(uint64_t owner);
  static constexpr size_t kMaxEntries = 1 << 16;

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return RankMap::Hash(s.data(), s.size()); }
  };

  void Clear() {
    entries_.clear();
    tokens_.clear();
  }

  uint64_t owner_ = 0;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>>
      entries_;  // piece → (offset, count) in tokens_
  std::vector<int32_t> tokens_;
};

// A fresh owner id for a tokenizer's caches (never 0, never reused).
uint64_t NewPieceCacheOwner();

// The calling thread's cache, emptied first when it last served another owner.
PieceCache& ThreadPieceCache(uint64_t owner);

}  // namespace bm::text
