// RankMap: byte string → BPE rank, the hot lookup of the encoder.
//
// An open-addressing hash table (linear probing, power-of-two capacity, load
// at most 1/2) over keys stored back to back in one arena, so a lookup costs
// one hash of the piece, usually one probe and one memcmp. Built once, then
// read-only: Find() is safe from any number of threads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bm::text {

class RankMap {
 public:
  static constexpr uint32_t kNotFound = 0xffffffffu;

  RankMap() = default;

  // Adds key → rank. Precondition: key is not empty and not present yet
  // (callers check with Find first). Invalidates nothing: keys are copied.
  void Insert(std::string_view key, uint32_t rank);

  // The rank of key, or kNotFound.
  uint32_t Find(std::string_view key) const {
    if (slots_.empty()) return kNotFound;
    const uint64_t h = Hash(key.data(), key.size());
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.length == 0) return kNotFound;
      if (s.tag == tag && s.length == key.size() &&
          std::char_traits<char>::compare(arena_.data() + s.offset, key.data(), key.size()) == 0) {
        return s.rank;
      }
    }
  }

  size_t size() const { return count_; }
  // The length of the longest key (0 when empty).
  size_t max_key_length() const { return max_key_length_; }

  static uint64_t Hash(const char* p, size_t n);

 private:
  struct Slot {
    uint32_t tag = 0;
    uint32_t rank = 0;
    uint32_t offset = 0;
    uint32_t length = 0;  // 0: empty slot
  };
  void Grow();
  void Place(const Slot& slot, uint64_t hash);

  std::vector<Slot> slots_;
  std::string arena_;
  size_t mask_ = 0;
  size_t count_ = 0;
  size_t max_key_length_ = 0;
};

}  // namespace bm::text
