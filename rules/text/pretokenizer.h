// Pre-tokenization: splitting text into the pieces that BPE encodes one by
// one, as tiktoken's `pat_str` regex does.
//
// Two implementations:
//  - Gpt2Pretokenizer: a hand-written scanner equivalent to GPT-2's pattern
//      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//    with a table lookup per ASCII byte and the char_class tables otherwise;
//    its pieces tile the text (every byte lands in exactly one piece).
//  - RegexPretokenizer: any tiktoken pattern through ICU's regex engine (for
//    cl100k_base-style encodings), with \s and \S meaning the White_Space
//    property as in tiktoken's Rust regex. Like tiktoken it yields the matches
//    only: text that no alternative matches is dropped.
// Invalid UTF-8 is treated as char_class.h describes.
//
// Thread safety: Split() is const and safe from any number of threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace bm::text {

inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Receives the pieces of a text in order.
class PieceSink {
 public:
  virtual ~PieceSink() = default;
  virtual void Piece(std::string_view piece) = 0;
};

class Pretokenizer {
 public:
  virtual ~Pretokenizer() = default;
  virtual void Split(std::string_view text, PieceSink& sink) const = 0;
};

class Gpt2Pretokenizer final : public Pretokenizer {
 public:
  void Split(std::string_view text, PieceSink& sink) const override;
};

class RegexPretokenizer final : public Pretokenizer {
 public:
  enum class Unmatched { kDrop, kKeep };
  // Errors: kInvalidArgument when ICU cannot compile the pattern.
  static Result<std::unique_ptr<RegexPretokenizer>> Create(std::string_view pattern,
                                                           Unmatched unmatched = Unmatched::kDrop);
  ~RegexPretokenizer() override;
  void Split(std::string_view text, PieceSink& sink) const override;

 private:
  struct Impl;
  explicit RegexPretokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A pattern's text with \s and \S rewritten to \p{White_Space} and
// \P{White_Space} (ICU's \s is narrower than Unicode's White_Space).
std::string TranslatePatternForIcu(std::string_view pattern);

}  // namespace bm::text
