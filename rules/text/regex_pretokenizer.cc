#include <unicode/regex.h>
#include <unicode/utext.h>

#include "rules/text/icu_pattern.h"
#include "rules/text/pretokenizer.h"

namespace bm::text {

struct RegexPretokenizer::Impl {
  std::unique_ptr<icu::RegexPattern> pattern;
};

std::string TranslatePatternForIcu(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += '\\';
        out += next;
      }
      continue;
    }
    out += pattern[i];
  }
  return out;
}

std::unique_ptr<icu::RegexPattern> CompileIcuPattern(std::string_view pattern, UErrorCode& status,
                                                     UParseError& error) {
  const std::string translated = TranslatePatternForIcu(pattern);
  return std::unique_ptr<icu::RegexPattern>(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(icu::StringPiece(translated.data(), translated.size())), 0,
      error, status));
}

RegexPretokenizer::RegexPretokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RegexPretokenizer::~RegexPretokenizer() = default;

Result<std::unique_ptr<RegexPretokenizer>> RegexPretokenizer::Create(std::string_view pattern) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error;
  auto impl = std::make_unique<Impl>();
  impl->pattern = CompileIcuPattern(pattern, status, parse_error);
  if (U_FAILURE(status)) {
    return Errorf(ErrorCode::kInvalidArgument, "pattern does not compile ({} at offset {}): {}",
                  u_errorName(status), parse_error.offset, pattern);
  }
  return std::unique_ptr<RegexPretokenizer>(new RegexPretokenizer(std::move(impl)));
}

void RegexPretokenizer::Split(std::string_view text, PieceSink& sink) const {
  UErrorCode status = U_ZERO_ERROR;
  UText* ut = utext_openUTF8(nullptr, text.data(), static_cast<int64_t>(text.size()), &status);
  std::unique_ptr<icu::RegexMatcher> matcher(impl_->pattern->matcher(status));
  if (U_FAILURE(status)) {
    utext_close(ut);
    return;
  }
  matcher->reset(ut);
  // With a UTF-8 UText, ICU's native indexes are byte offsets into `text`.
  while (matcher->find(status) && U_SUCCESS(status)) {
    const int64_t start = matcher->start64(status);
    const int64_t end = matcher->end64(status);
    if (end > start) sink.Piece(text.substr(static_cast<size_t>(start), end - start));
  }
  utext_close(ut);
}

}  // namespace bm::text
