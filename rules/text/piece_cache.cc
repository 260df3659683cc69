#include "rules/text/piece_cache.h"

#include <atomic>

namespace bm::text {

uint64_t NewPieceCacheOwner() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

PieceCache& ThreadPieceCache(uint64_t owner) {
  thread_local PieceCache cache;
  if (cache.owner_ != owner) {
    cache.Clear();
    cache.owner_ = owner;
  }
  return cache;
}

}  // namespace bm::text
