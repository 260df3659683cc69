#include "rules/text/added_tokens.h"

#include <algorithm>

#include "rules/text/char_class.h"

namespace bm::text {
namespace {

bool IsSpaceAt(std::string_view text, size_t p, size_t* length) {
  const auto* begin = reinterpret_cast<const uint8_t*>(text.data());
  const DecodedChar d = DecodeChar(begin + p, begin + text.size(), BmpClassTable());
  *length = d.length;
  return d.cls == CharClass::kSpace;
}

// The start of the white space that ends text[0, end), not before floor.
size_t SpaceRunStart(std::string_view text, size_t end, size_t floor) {
  size_t p = end;
  while (p > floor) {
    size_t q = p - 1;  // back to the start of the previous character
    while (q > floor && (static_cast<uint8_t>(text[q]) & 0xc0) == 0x80 && p - q < 4) --q;
    size_t length;
    if (!IsSpaceAt(text, q, &length) || q + length != p) break;
    p = q;
  }
  return p;
}

size_t SpaceRunEnd(std::string_view text, size_t start) {
  size_t p = start, length;
  while (p < text.size() && IsSpaceAt(text, p, &length)) p += length;
  return p;
}

}  // namespace

void AddedTokenMatcher::Add(std::string content, int32_t id, bool lstrip, bool rstrip) {
  if (content.empty()) return;
  first_byte_[static_cast<uint8_t>(content[0])] = true;
  tokens_.push_back({std::move(content), id, lstrip, rstrip});
  std::stable_sort(tokens_.begin(), tokens_.end(), [](const Token& a, const Token& b) {
    return a.content.size() > b.content.size();
  });
}

void AddedTokenMatcher::Split(std::string_view text,
                              const std::function<void(std::string_view)>& on_text,
                              const std::function<void(int32_t)>& on_token) const {
  size_t done = 0;  // end of the previous match, white space taken by rstrip included
  size_t pos = 0;   // where the search goes on: the end of the previous match proper
  while (pos < text.size()) {
    const Token* found = nullptr;
    size_t at = pos;
    for (; at < text.size(); ++at) {
      if (!first_byte_[static_cast<uint8_t>(text[at])]) continue;
      for (const Token& t : tokens_) {
        if (text.compare(at, t.content.size(), t.content) == 0) {
          found = &t;
          break;
        }
      }
      if (found != nullptr) break;
    }
    if (found == nullptr) break;
    size_t start = at;
    size_t stop = at + found->content.size();
    pos = stop;
    if (found->lstrip) start = std::max(SpaceRunStart(text, start, 0), done);
    if (found->rstrip) stop = SpaceRunEnd(text, stop);
    if (done < start) on_text(text.substr(done, start - done));
    on_token(found->id);
    done = stop;
  }
  if (done < text.size()) on_text(text.substr(done));
}

}  // namespace bm::text
