#include "base/digest.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace bm {
namespace digest_internal {
void UpdateAvx2(void* state, const void* data, size_t size);  // digest_avx2.cc
}  // namespace digest_internal

namespace {

bool HaveAvx2() {
#if defined(__x86_64__) && defined(BENCHMAKE_DIGEST_AVX2)
  static const bool have = [] {
    __builtin_cpu_init();  // may run before libgcc's own constructor
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return have;
#else
  return false;
#endif
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string Digest::Hex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return out;
}

Result<Digest> Digest::FromHex(std::string_view hex) {
  if (hex.size() != 32)
    return Errorf(ErrorCode::kCorrupt, "bad digest '{}': want 32 hex digits", hex);
  Digest d;
  for (size_t i = 0; i < 16; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Errorf(ErrorCode::kCorrupt, "bad digest '{}': not hex", hex);
    d.bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return d;
}

bool Digest::IsZero() const {
  for (uint8_t b : bytes)
    if (b) return false;
  return true;
}

struct Hasher::State {
  XXH3_state_t xxh;
};

Hasher::Hasher() : state_(std::make_unique<State>()) { XXH3_128bits_reset(&state_->xxh); }
Hasher::~Hasher() = default;

void Hasher::Update(const void* data, size_t size) {
  if (size >= 1024 && HaveAvx2()) {
    digest_internal::UpdateAvx2(&state_->xxh, data, size);
  } else {
    XXH3_128bits_update(&state_->xxh, data, size);
  }
}

void Hasher::Field(std::string_view tag, std::string_view value) {
  std::string header;
  AppendU64(header, tag.size());
  header.append(tag);
  AppendU64(header, value.size());
  Update(header);
  Update(value);
}

Digest Hasher::Finish() const {
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(&state_->xxh));
  Digest d;
  static_assert(sizeof(canon.digest) == 16);
  for (size_t i = 0; i < 16; ++i) d.bytes[i] = canon.digest[i];
  return d;
}

Digest DigestOf(std::string_view bytes) {
  Hasher h;
  h.Update(bytes);
  return h.Finish();
}

}  // namespace bm
