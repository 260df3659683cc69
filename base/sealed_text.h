// Files that carry the digest of their own body, so that damage which still parses (a bit
// flipped in a number or a file name: other valid JSON, another valid key) is found when they
// are read, not trusted:
//   file   := magic " " version " " hex32 "\n" body     (hex32: XXH3-128 of body)
//   legacy := magic " " version "\n" body               (a version before the seal)
// Used for the files whose damage would change what a step computes or restores: action records
// (cache/action_record.h), a target's key material and step parameters (engine/key_material.h,
// engine/target_state.h).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace bm {

std::string SealText(std::string_view magic, int version, std::string_view body);

struct UnsealedText {
  int version = 0;
  std::string_view body;  // a view into the text read
};

// The body of `text`, a file `magic` of version `current` (sealed: its digest checked) or of a
// version from 1 to `sealed_since` - 1 (no seal). Errors, for the caller to prefix with what the
// file is: kCorrupt when the magic is missing, or a seal is missing or does not match the body
// ("damaged: its bytes do not match its digest"); kUnsupported for a version above `current`
// ("version 3 (this benchmake reads 2)").
Result<UnsealedText> UnsealText(std::string_view text, std::string_view magic, int current,
                                int sealed_since);

}  // namespace bm
