#include "base/formats/json_text.h"

#include <algorithm>
#include <string>

namespace bm::formats {
namespace {

// The parser quotes the token it stopped in ("...; last read: '<token>'"), and a string
// token is everything since its opening quote: an error at the end of a 100 MB JSONL
// line would be a 100 MB message. Keep the token's last bytes (cut where a UTF-8
// character starts).
std::string ShortenLastRead(std::string reason) {
  constexpr std::string_view kLastRead = "last read: '";
  constexpr size_t kKeep = 40;
  const size_t begin = reason.find(kLastRead);
  if (begin == std::string::npos || !reason.ends_with('\'')) return reason;
  const size_t token = begin + kLastRead.size();
  const size_t end = reason.size() - 1;
  if (end - token <= kKeep) return reason;
  size_t cut = end - kKeep;
  while (cut < end && (static_cast<unsigned char>(reason[cut]) & 0xC0) == 0x80) ++cut;
  return reason.substr(0, token) + "..." + reason.substr(cut);
}

}  // namespace

Result<nlohmann::json> ParseJsonText(std::string_view text, std::string_view name, int first_line) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: the 1-based offset of the character the parser stopped at.
    const size_t at = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const std::string_view before = text.substr(0, at);
    const int line = first_line + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');
    const size_t column = at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    // what(): "[json.exception.parse_error.101] parse error at line 1, column 2: REASON".
    std::string reason = e.what();
    const size_t colon = reason.find(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    return Errorf(ErrorCode::kCorrupt, "{}:{}:{}: not valid JSON: {}", name, line, column,
                  ShortenLastRead(std::move(reason)));
  } catch (const nlohmann::json::exception& e) {
    // A number too large for a double ("1e999": out_of_range.406) carries no position; the
    // reason quotes the number. A text of one line (a JSON Lines line) is that line.
    std::string reason = e.what();
    const size_t end = reason.find("] ");
    if (end != std::string::npos) reason = reason.substr(end + 2);
    if (text.find('\n') == std::string_view::npos) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: not valid JSON: {}", name, first_line, reason);
    }
    return Errorf(ErrorCode::kCorrupt, "{}: not valid JSON: {}", name, reason);
  }
}

}  // namespace bm::formats
