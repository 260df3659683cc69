// tqdm's progress-bar counters, as the Trainer's and torchtune's bars draw them (tqdm_bar.h).
#include "rules/logparse/tqdm_bar.h"

#include <cctype>
#include <vector>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// Nothing but spaces and carriage returns written as "^M" (a paste in caret notation: h2oGPT PR
// #86's `...1.89it/s]^M      ^M{'loss': ...`), as tqdm.write's clear leaves between a bar and the
// dict after it.
bool OnlyClears(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 2) == "^M") {
      ++i;
    } else if (text[i] != ' ') {
      return false;
    }
  }
  return true;
}

// tqdm's {elapsed} at the start of text, before its '<' (format_interval: "MM:SS", or "H:MM:SS"
// from an hour on, whole seconds cut down): seconds; nullopt for anything else.
std::optional<double> BarElapsed(std::string_view text) {
  const size_t end = text.find('<');
  if (end == std::string_view::npos) return std::nullopt;
  std::vector<double> parts;
  size_t p = 0;
  while (p <= end) {
    size_t q = p;
    while (q < end && std::isdigit(static_cast<unsigned char>(text[q]))) ++q;
    if (q == p || (!parts.empty() && q - p != 2)) return std::nullopt;
    std::optional<double> v = ParseNumber(text.substr(p, q - p));
    if (!v) return std::nullopt;
    parts.push_back(*v);
    if (q == end) break;
    if (text[q] != ':') return std::nullopt;
    p = q + 1;
  }
  if (parts.size() < 2 || parts.size() > 3 || parts.back() >= 60) return std::nullopt;
  if (parts.size() == 3 && parts[1] >= 60) return std::nullopt;
  if (parts.size() == 2 &&
      (parts[0] >= 60 || text.substr(0, 2).find(':') != std::string_view::npos))
    return std::nullopt;  // minutes are two digits, and under an hour
  double s = 0;
  for (double v : parts) s = s * 60 + v;
  return s;
}
}  // namespace

std::optional<TqdmCounter> ReadTqdmCounter(std::string_view text) {
  std::optional<TqdmCounter> found;
  auto digits = [&](size_t p) {
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
    return p;
  };
  for (size_t bar = text.find_first_of("|%"); bar != std::string_view::npos;
       bar = text.find_first_of("|%", bar + 1)) {
    if (text[bar] == '%' && (bar == 0 || !std::isdigit(static_cast<unsigned char>(text[bar - 1])) ||
                             bar + 1 >= text.size() || text[bar + 1] != ' '))
      continue;
    const size_t n_at = SkipSpaces(text, bar + 1);
    const size_t n_end = digits(n_at);
    if (n_end == n_at || n_end >= text.size() || text[n_end] != '/') continue;
    const size_t total_end = digits(n_end + 1);
    if (total_end == n_end + 1 || text.substr(total_end, 2) != " [") continue;
    std::optional<int64_t> n = WholeCount(ParseNumber(text.substr(n_at, n_end - n_at)));
    std::optional<int64_t> total =
        WholeCount(ParseNumber(text.substr(n_end + 1, total_end - n_end - 1)));
    if (n && total && *n <= *total) {
      const size_t close = text.find(']', total_end);
      found = TqdmCounter{*n, *total,
                          close != std::string_view::npos && OnlyClears(text.substr(close + 1)),
                          BarElapsed(text.substr(total_end + 2, close == std::string_view::npos
                                                                    ? std::string_view::npos
                                                                    : close - total_end - 2))};
    }
  }
  return found;
}

}  // namespace bm::logparse
