// Digest: XXH3-128 content digests, and Hasher, the streaming form with
// tagged fields. The only file of benchmake that sees xxHash is digest.cc.
//
// Keys hash tagged fields, never bare concatenations (STYLE §4):
//   Field(tag, value) = u64le(len(tag)) tag u64le(len(value)) value
// so ("ab","c") and ("a","bc") cannot collide.
//
// Thread safety: Digest is a value; a Hasher is used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace bm {

struct Digest {
  std::array<uint8_t, 16> bytes{};  // big-endian high64 then low64 (XXH128 canonical form)

  std::string Hex() const;  // 32 lowercase hex digits
  static Result<Digest> FromHex(std::string_view hex);
  bool IsZero() const;

  friend bool operator==(const Digest&, const Digest&) = default;
  friend auto operator<=>(const Digest&, const Digest&) = default;
};

// Streaming XXH3-128. Update() for raw bytes (file contents); Field() for
// tagged key material.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  void Field(std::string_view tag, std::string_view value);
  Digest Finish() const;  // may be called more than once; does not reset

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Digest DigestOf(std::string_view bytes);

}  // namespace bm
