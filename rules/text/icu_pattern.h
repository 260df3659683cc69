// ICU regex compilation shared by the pretokenizer and LineRegex (internal to rules/text, the
// only folder that sees ICU): the pattern goes through TranslatePatternForIcu first.
#pragma once

#include <unicode/regex.h>

#include <memory>
#include <string_view>

namespace bm::text {

// Null with `status` failed and `error` filled when the pattern does not compile.
std::unique_ptr<icu::RegexPattern> CompileIcuPattern(std::string_view pattern, UErrorCode& status,
                                                     UParseError& error);

}  // namespace bm::text
