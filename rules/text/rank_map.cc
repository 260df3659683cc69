#include "rules/text/rank_map.h"

#include <cstring>

namespace bm::text {
namespace {

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline uint64_t Mix(uint64_t a, uint64_t b) {
  const __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

constexpr uint64_t kSeed0 = 0xa0761d6478bd642full;
constexpr uint64_t kSeed1 = 0xe7037ed1a0b428dbull;

}  // namespace

// A wyhash-style multiply-fold hash: BPE keys are short (median 6 bytes), so
// the tail load matters more than the bulk loop.
uint64_t RankMap::Hash(const char* p, size_t n) {
  uint64_t h = kSeed0 ^ (n * kSeed1);
  while (n >= 8) {
    h = Mix(h ^ Load64(p), kSeed1);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    h = Mix(h ^ tail ^ (static_cast<uint64_t>(n) << 56), kSeed1);
  }
  return Mix(h, kSeed0);
}

void RankMap::Place(const Slot& slot, uint64_t hash) {
  size_t i = hash & mask_;
  while (slots_[i].length != 0) i = (i + 1) & mask_;
  slots_[i] = slot;
}

void RankMap::Grow() {
  std::vector<Slot> old = std::move(slots_);
  const size_t capacity = old.empty() ? 1024 : old.size() * 2;
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (const Slot& s : old) {
    if (s.length != 0) Place(s, Hash(arena_.data() + s.offset, s.length));
  }
}

void RankMap::Insert(std::string_view key, uint32_t rank) {
  if ((count_ + 1) * 2 > slots_.size()) Grow();
  const uint64_t h = Hash(key.data(), key.size());
  Slot s;
  s.tag = static_cast<uint32_t>(h >> 32);
  s.rank = rank;
  s.offset = static_cast<uint32_t>(arena_.size());
  s.length = static_cast<uint32_t>(key.size());
  arena_.append(key);
  Place(s, h);
  ++count_;
  if (key.size() > max_key_length_) max_key_length_ = key.size();
}

}  // namespace bm::text
