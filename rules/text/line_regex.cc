#include "rules/text/line_regex.h"

#include <unicode/regex.h>
#include <unicode/utext.h>

#include "rules/text/icu_pattern.h"

namespace bm::text {

struct LineRegex::Impl {
  std::unique_ptr<icu::RegexPattern> pattern;
  std::unique_ptr<icu::RegexMatcher> matcher;
  UText* text = nullptr;
  ~Impl() { utext_close(text); }
};

LineRegex::LineRegex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LineRegex::LineRegex(LineRegex&&) noexcept = default;
LineRegex& LineRegex::operator=(LineRegex&&) noexcept = default;
LineRegex::~LineRegex() = default;

Result<LineRegex> LineRegex::Create(std::string_view pattern) {
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error;
  auto impl = std::make_unique<Impl>();
  impl->pattern = CompileIcuPattern(pattern, status, parse_error);
  if (U_SUCCESS(status)) impl->matcher.reset(impl->pattern->matcher(status));
  if (U_FAILURE(status)) {
    return Errorf(ErrorCode::kInvalidArgument, "regex /{}/ does not compile ({} at offset {})",
                  pattern, u_errorName(status), parse_error.offset);
  }
  return LineRegex(std::move(impl));
}

bool LineRegex::Search(std::string_view line) {
  UErrorCode status = U_ZERO_ERROR;
  impl_->text =
      utext_openUTF8(impl_->text, line.data(), static_cast<int64_t>(line.size()), &status);
  if (U_FAILURE(status)) return false;
  impl_->matcher->reset(impl_->text);
  const bool found = impl_->matcher->find(status);
  return U_SUCCESS(status) && found;
}

}  // namespace bm::text
