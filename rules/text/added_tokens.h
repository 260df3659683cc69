// AddedTokenMatcher: finds Hugging Face added tokens in a text as the
// `tokenizers` library does (AddedVocabulary::find_matches): non-overlapping
// matches, leftmost first and the longest of those starting there, the search
// going on after each match; a token with lstrip takes the white space before
// it (not past the previous match), one with rstrip the white space after it.
// White space is Unicode's White_Space, as Rust's char::is_whitespace.
//
// Thread safety: immutable after Add(); Split is const.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bm::text {

class AddedTokenMatcher {
 public:
  void Add(std::string content, int32_t id, bool lstrip, bool rstrip);
  bool empty() const { return tokens_.empty(); }

  // Cuts text into stretches between matches and matches: on_text for each
  // non-empty stretch, on_token for each match, in order.
  void Split(std::string_view text, const std::function<void(std::string_view)>& on_text,
             const std::function<void(int32_t)>& on_token) const;

 private:
  struct Token {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  std::vector<Token> tokens_;  // longest first
  std::array<bool, 256> first_byte_{};
};

}  // namespace bm::text
