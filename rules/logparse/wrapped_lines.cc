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

UnwrappedRead ForEachUnwrappedLine(
    std::string_view text, const std::function<std::string_view(std::string_view)>& completion,
    const std::function<bool(std::string_view)>& stop,
    const std::function<void(std::string_view, int64_t)>& fn, const bool* done, size_t max_lines) {
  const std::vector<LogLine> lines = SplitLogLines(text);
  UnwrappedRead read;
  read.lines = CountLines(text);
  for (size_t i = 0; i < lines.size() && !*done; ++i) {
    const std::string_view key = completion(lines[i].text);
    size_t pieces = 0;
    std::optional<std::string> joined;
    if (!key.empty()) {
      auto has_key = [key](std::string_view l) { return l.find(key) != std::string_view::npos; };
      joined = JoinWrapped(lines, i, has_key, stop, max_lines, &pieces);
    }
    if (!joined) {
      fn(lines[i].text, lines[i].no);
      continue;
    }
    fn(*joined, lines[i].no);
    read.first_joined = read.first_joined ? read.first_joined : lines[i].no;
    ++read.joined;
    i += pieces - 1;
  }
  return read;
}

}  // namespace bm::logparse
