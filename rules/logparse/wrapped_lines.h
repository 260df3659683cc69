// Lines a terminal copy hard-wrapped at the window's width: a Megatron iteration line of 400
// characters pasted from an 86-column terminal arrives as five lines,
//
//    [2025-10-02 22:52:07] iteration       10/      50 | consumed samples:         5120 |
//   elapsed time per iteration (ms): 13212.7 | learning rate: 3.000000E-04 | global batch
//   size:   512 | lm loss: 4.474437E+00 | loss scale: 1.0 | grad norm: 0.704 | number of s
//   kipped iterations:   0 | number of nan iterations:   0 |
//
// (NVIDIA-NeMo/Megatron-Bridge#841), the breaks falling anywhere, inside a word too. A piece
// shorter than the widest piece before the last lost a trailing space to the copy (the break
// was at a space), so it is joined with one; a piece of the full width is joined without.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bm::logparse {

struct LogLine {
  std::string_view text;
  int64_t no = 0;  // 1-based line number
};

// The lines of text as ForEachLine passes them (carriage-return segments apart).
std::vector<LogLine> SplitLogLines(std::string_view text);

// The record that starts at lines[i] when it was wrapped: lines[i] and the lines after it (at
// most max_lines in all) joined, up to the first line after which complete(joined) holds;
// nullopt when lines[i] is complete already, or no such line comes before one for which
// stop(line) holds (another record, a blank line) or the limit. *pieces: the lines it took.
std::optional<std::string> JoinWrapped(const std::vector<LogLine>& lines, size_t i,
                                       const std::function<bool(std::string_view)>& complete,
                                       const std::function<bool(std::string_view)>& stop,
                                       size_t max_lines, size_t* pieces);

// Calls fn(line, line_no) for every line of text as ForEachLine does, except that a line for
// which completion(line) names a key it lacks ("" for none) is passed joined with the lines
// after it that bring that key (JoinWrapped, at most max_lines lines, stopping at one for which
// stop(line) holds), with its first line's number. Stops early once fn sets *done.
struct UnwrappedRead {
  int64_t lines = 0;         // as ForEachLine counts them
  int64_t joined = 0;        // records read joined
  int64_t first_joined = 0;  // the first one's line
};
UnwrappedRead ForEachUnwrappedLine(
    std::string_view text, const std::function<std::string_view(std::string_view)>& completion,
    const std::function<bool(std::string_view)>& stop,
    const std::function<void(std::string_view, int64_t)>& fn, const bool* done,
    size_t max_lines = 6);

}  // namespace bm::logparse
