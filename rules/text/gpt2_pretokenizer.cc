// GPT-2's pattern, alternative by alternative, without a regex engine. At
// each position the first alternative that matches wins, as in the regex:
//   1. a contraction 's 't 're 've 'm 'll 'd (case-sensitive);
//   2. an optional ASCII space, then a maximal run of letters, of numbers,
//      or of "other" characters (neither letter, number nor white space);
//   3. white space: the maximal run, minus its last character when a
//      non-space follows and the run is longer than one character
//      (\s+(?!\S) backtracks one character, then \s+ takes a lone one).
#include "rules/text/char_class.h"
#include "rules/text/pretokenizer.h"

namespace bm::text {
namespace {

size_t ContractionLength(const uint8_t* p, const uint8_t* end) {
  if (end - p < 2) return 0;
  switch (p[1]) {
    case 's':
    case 't':
    case 'm':
    case 'd':
      return 2;
    case 'r':
    case 'v':
      return end - p >= 3 && p[2] == 'e' ? 3 : 0;
    case 'l':
      return end - p >= 3 && p[2] == 'l' ? 3 : 0;
    default:
      return 0;
  }
}

// End of the maximal run of class `cls` starting at p.
inline const uint8_t* RunEnd(const uint8_t* p, const uint8_t* end, CharClass cls,
                             const CharClass* bmp) {
  while (p < end) {
    if (*p < 0x80) {
      if (bmp[*p] != cls) break;
      ++p;
      continue;
    }
    const DecodedChar d = DecodeChar(p, end, bmp);
    if (d.cls != cls) break;
    p += d.length;
  }
  return p;
}

}  // namespace

void Gpt2Pretokenizer::Split(std::string_view text, PieceSink& sink) const {
  const CharClass* bmp = BmpClassTable();
  const auto* begin = reinterpret_cast<const uint8_t*>(text.data());
  const uint8_t* end = begin + text.size();
  const uint8_t* p = begin;
  auto emit = [&](const uint8_t* from, const uint8_t* to) {
    sink.Piece(std::string_view(reinterpret_cast<const char*>(from), to - from));
  };
  while (p < end) {
    if (*p == '\'') {
      const size_t n = ContractionLength(p, end);
      if (n != 0) {
        emit(p, p + n);
        p += n;
        continue;
      }
    }
    const uint8_t* q = (*p == ' ' && p + 1 < end) ? p + 1 : p;
    const DecodedChar d = DecodeChar(q, end, bmp);
    if (d.cls != CharClass::kSpace) {
      const uint8_t* e = RunEnd(q + d.length, end, d.cls, bmp);
      emit(p, e);
      p = e;
      continue;
    }
    // White space at p: find the run and the start of its last character.
    const uint8_t* last = p;
    const uint8_t* e = p;
    while (e < end) {
      const DecodedChar w = DecodeChar(e, end, bmp);
      if (w.cls != CharClass::kSpace) break;
      last = e;
      e += w.length;
    }
    if (e < end && last > p) e = last;
    emit(p, e);
    p = e;
  }
}

}  // namespace bm::text
