// LineRegex: a regular expression tested against one line at a time, on
// ICU's engine (ICU syntax, a superset of ECMAScript's for these uses; \s and
// \S mean White_Space as in pretokenizer.h). Used by the tokenize rule's
// document_start; far faster than std::regex on a corpus.
//
// Not thread-safe (it keeps one matcher); movable.
#pragma once

#include <memory>
#include <string_view>

#include "base/result.h"

namespace bm::text {

class LineRegex {
 public:
  // Errors: kInvalidArgument with ICU's reason and offset.
  static Result<LineRegex> Create(std::string_view pattern);
  LineRegex(LineRegex&&) noexcept;
  LineRegex& operator=(LineRegex&&) noexcept;
  ~LineRegex();

  // True when the pattern matches somewhere in line (a search, so anchor
  // with ^ and $ for whole lines). Invalid UTF-8 reads as U+FFFD.
  bool Search(std::string_view line);

 private:
  struct Impl;
  explicit LineRegex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::text
