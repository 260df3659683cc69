// The three Unicode classes that tiktoken's pre-tokenization patterns use —
// \p{L} (general category L*), \p{N} (N*), \s (the White_Space property) —
// and a UTF-8 decoder that never fails.
//
// Classes of the Basic Multilingual Plane come from one 64 KiB table built
// from ICU on first use; other planes ask ICU directly (they hold letters,
// numbers and symbols, but no white space).
//
// Invalid UTF-8 (a stray continuation byte, a truncated or overlong sequence,
// an encoded surrogate, a value above U+10FFFF) decodes as one byte of class
// kOther: the class of U+FFFD, the replacement character that tiktoken's
// callers substitute for such bytes. So piece boundaries are those of the
// replaced text, while the bytes themselves are kept and round-trip.
//
// Thread safety: all functions are safe from any thread (the table is built
// under a function-local static).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bm::text {

enum class CharClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

// The class of a code point (0..0x10FFFF).
CharClass ClassOf(uint32_t code_point);

// The BMP table (index: code point < 0x10000).
const CharClass* BmpClassTable();

struct DecodedChar {
  CharClass cls;
  uint32_t length;  // bytes, 1..4
};

// Decodes the character starting at p (precondition: p < end).
inline DecodedChar DecodeChar(const uint8_t* p, const uint8_t* end, const CharClass* bmp) {
  const uint8_t b0 = p[0];
  if (b0 < 0x80) return {bmp[b0], 1};
  const size_t avail = static_cast<size_t>(end - p);
  auto cont = [&](size_t i) { return i < avail && (p[i] & 0xc0) == 0x80; };
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    if (!cont(1)) return {CharClass::kOther, 1};
    return {bmp[((b0 & 0x1fu) << 6) | (p[1] & 0x3fu)], 2};
  }
  if (b0 >= 0xe0 && b0 <= 0xef) {
    if (!cont(1) || !cont(2)) return {CharClass::kOther, 1};
    const uint32_t cp = ((b0 & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
    if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return {CharClass::kOther, 1};
    return {bmp[cp], 3};
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return {CharClass::kOther, 1};
    const uint32_t cp =
        ((b0 & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) | (p[3] & 0x3fu);
    if (cp < 0x10000 || cp > 0x10ffff) return {CharClass::kOther, 1};
    return {ClassOf(cp), 4};
  }
  return {CharClass::kOther, 1};
}

}  // namespace bm::text
