// The elapsed time in ms-swift's Trainer dicts and LLaMA-Factory's jsonl as the steps' time
// (trainer_elapsed.h).
#include "rules/logparse/trainer_elapsed.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/trainer_dicts.h"

namespace bm::logparse {
namespace {

// A half unit of train_speed's printing: round(v, 6), or from 2025 f"{v:.4g}".
double SpeedHalf(double v) { return HalfUnit(v, 5e-7); }

}  // namespace

std::optional<double> FormattedSeconds(std::string_view text) {
  double seconds = 0;
  bool any = false;
  size_t p = 0;
  while (p < text.size()) {
    p = SkipSpaces(text, p);
    if (p >= text.size()) break;
    size_t q = p;
    while (q < text.size() && std::isdigit(static_cast<unsigned char>(text[q]))) ++q;
    if (q == p || q >= text.size()) return std::nullopt;
    std::optional<double> n = ParseNumber(text.substr(p, q - p));
    if (!n) return std::nullopt;
    switch (text[q]) {
      case 'd':
        seconds += *n * 86400;
        break;
      case 'h':
        seconds += *n * 3600;
        break;
      case 'm':
        seconds += *n * 60;
        break;
      case 's':
        seconds += *n;
        break;
      default:
        return std::nullopt;
    }
    any = true;
    p = q + 1;
  }
  return any ? std::optional(seconds) : std::nullopt;
}

std::optional<double> TimedeltaSeconds(std::string_view text) {
  double days = 0;
  if (size_t comma = text.find(", "); comma != std::string_view::npos) {
    // "1 day, " / "3 days, ": a count, a space, the word.
    const std::string_view head = text.substr(0, comma);
    const size_t space = head.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const std::string_view word = head.substr(space + 1);
    if (word != "day" && word != "days") return std::nullopt;
    for (char c : head.substr(0, space))
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    std::optional<double> n = ParseNumber(head.substr(0, space));
    if (!n) return std::nullopt;
    days = *n;
    text.remove_prefix(comma + 2);
  }
  // H:MM:SS, the hours one or two digits, minutes and seconds two.
  const size_t c1 = text.find(':');
  if (c1 == std::string_view::npos || c1 == 0 || c1 > 2 || text.size() != c1 + 6 ||
      text[c1 + 3] != ':')
    return std::nullopt;
  double parts[3] = {0, 0, 0};
  const std::string_view fields[3] = {text.substr(0, c1), text.substr(c1 + 1, 2),
                                      text.substr(c1 + 4, 2)};
  for (int i = 0; i < 3; ++i) {
    for (char c : fields[i])
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    std::optional<double> n = ParseNumber(fields[i]);
    if (!n) return std::nullopt;
    parts[i] = *n;
  }
  if (parts[1] >= 60 || parts[2] >= 60) return std::nullopt;
  return days * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2];
}

std::optional<DictElapsed> ReadDictElapsed(const TrainerDict& dict, int64_t step) {
  auto get = [&](std::string_view key) -> std::optional<double> {
    auto it = dict.find(key);
    return it == dict.end() ? std::nullopt : it->second;
  };
  DictElapsed e;
  e.text = get("elapsed_time");
  if (e.text && !(std::isfinite(*e.text) && *e.text >= 0)) e.text.reset();
  const double n = static_cast<double>(step);
  if (std::optional<double> v = get("train_speed(iter/s)"); v && std::isfinite(*v) && *v > 0) {
    const double h = SpeedHalf(*v);
    if (h < *v) {
      e.speed = n / *v;
      e.speed_half = n / (*v - h) - *e.speed;
      e.speed_per_second = true;
    }
  } else if (std::optional<double> v = get("train_speed(s/it)");
             v && std::isfinite(*v) && *v > 0 && e.text) {
    // Seconds over the steps since the resume: x step is the seconds only without one, when it
    // is the 'elapsed_time' (rounded or cut to the second).
    const double s = *v * n, h = SpeedHalf(*v) * n;
    if (std::fabs(s - *e.text) <= 1.0 + h) {
      e.speed = s;
      e.speed_half = h;
    }
  }
  if (!e.text && !e.speed) return std::nullopt;
  return e;
}

std::vector<std::pair<int64_t, int64_t>> TimeByElapsed(
    const std::map<int64_t, DictElapsed>& elapsed, const std::vector<int64_t>& breaks,
    std::vector<Iteration>& its) {
  std::vector<std::pair<int64_t, int64_t>> paused;
  for (size_t i = 1; i < its.size(); ++i) {
    Iteration& it = its[i];
    const Iteration& before = its[i - 1];
    if (it.ms || it.span < 1 || before.step != it.step - it.span) continue;
    auto a = elapsed.find(before.line), b = elapsed.find(it.line);
    if (a == elapsed.end() || b == elapsed.end()) continue;
    std::optional<int64_t> between;
    for (int64_t l : breaks)
      if (l > before.line && l <= it.line && (!between || l < *between)) between = l;
    if (between) {
      paused.emplace_back(it.line, *between);
      continue;
    }
    std::optional<double> seconds;
    if (a->second.speed && b->second.speed &&
        a->second.speed_per_second == b->second.speed_per_second) {
      seconds = *b->second.speed - *a->second.speed;
    } else if (a->second.text && b->second.text) {
      seconds = *b->second.text - *a->second.text;
    }
    if (seconds && *seconds > 0) it.ms = *seconds * 1000.0 / static_cast<double>(it.span);
  }
  return paused;
}

}  // namespace bm::logparse
