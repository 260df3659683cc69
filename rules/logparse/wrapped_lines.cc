#include "rules/logparse/wrapped_lines.h"

#include <algorithm>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {

std::vector<LogLine> SplitLogLines(std::string_view text) {
  std::vector<LogLine> lines;
  ForEachLine(text, [&](std::string_view line, int64_t no) { lines.push_back({line, no}); });
  return lines;
}

std::optional<std::string> JoinWrapped(const std::vector<LogLine>& lines, size_t i,
                                       const std::function<bool(std::string_view)>& complete,
                                       const std::function<bool(std::string_view)>& stop,
                                       size_t max_lines, size_t* pieces) {
  if (complete(lines[i].text)) return std::nullopt;
  for (size_t last = i + 1; last < lines.size() && last - i < max_lines; ++last) {
    const std::string_view next = lines[last].text;
    if (Trim(next).empty() || stop(next)) return std::nullopt;
    size_t width = 0;  // the widest piece but the last: the terminal's
    for (size_t k = i; k < last; ++k) width = std::max(width, lines[k].text.size());
    std::string joined;
    for (size_t k = i; k <= last; ++k) {
      joined += lines[k].text;
      if (k < last && lines[k].text.size() < width) joined += ' ';
    }
    if (!complete(joined)) continue;
    *pieces = last - i + 1;
    return joined;
  }
  return std::nullopt;
}

}  // namespace bm::logparse
