#include "rules/text/char_class.h"

#include <unicode/uchar.h>

#include <vector>

namespace bm::text {

CharClass ClassOf(uint32_t code_point) {
  const UChar32 c = static_cast<UChar32>(code_point);
  const uint32_t mask = U_GET_GC_MASK(c);
  if (mask & U_GC_L_MASK) return CharClass::kLetter;
  if (mask & U_GC_N_MASK) return CharClass::kNumber;
  if (u_isUWhiteSpace(c)) return CharClass::kSpace;
  return CharClass::kOther;
}

const CharClass* BmpClassTable() {
  static const std::vector<CharClass> table = [] {
    std::vector<CharClass> t(0x10000);
    for (uint32_t cp = 0; cp < 0x10000; ++cp) t[cp] = ClassOf(cp);
    return t;
  }();
  return table.data();
}

}  // namespace bm::text
