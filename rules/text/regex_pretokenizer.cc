#include <unicode/regex.h>
#include <unicode/utext.h>

#include "rules/text/icu_pattern.h"
#include "rules/text/pretokenizer.h"

namespace bm::text {

struct RegexPretokenizer::Impl {
  std::unique_ptr<icu::RegexPattern> pattern;
  bool keep_unmatched = false;
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

Result<std::unique_ptr<RegexPretokenizer>> RegexPretokenizer::Create(std::string_view pattern,
                                                                     Unmatched unmatched) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error;
  auto impl = std::make_unique<Impl>();
  impl->keep_unmatched = unmatched == Unmatched::kKeep;
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
  size_t done = 0;  // end of the last match
  while (matcher->find(status) && U_SUCCESS(status)) {
    const auto start = static_cast<size_t>(matcher->start64(status));
    const auto end = static_cast<size_t>(matcher->end64(status));
    if (end == start) continue;
    if (impl_->keep_unmatched && start > done) sink.Piece(text.substr(done, start - done));
    sink.Piece(text.substr(start, end - start));
    done = end;
  }
  if (impl_->keep_unmatched && done < text.size()) sink.Piece(text.substr(done));
  utext_close(ut);
}

}  // namespace bm::text
