// ParseTrainerDict (trainer_dict_literal.h): a log line as a Python dict literal of string keys,
// the values a Trainer dict holds read as numbers.
#include "rules/logparse/trainer_dict_literal.h"

#include <cctype>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/trainer_elapsed.h"

namespace bm::logparse {
namespace {

// Past a quoted string starting at p (the quote), or npos when unterminated.
size_t SkipQuoted(std::string_view s, size_t p) {
  const char q = s[p];
  for (size_t i = p + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == q) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Past a bracketed value ([...], {...}, (...)) starting at p, or npos.
size_t SkipBracketed(std::string_view s, size_t p) {
  int depth = 0;
  for (size_t i = p; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      i = SkipQuoted(s, i);
      if (i == std::string_view::npos) return i;
      --i;
    } else if (c == '[' || c == '{' || c == '(') {
      ++depth;
    } else if (c == ']' || c == '}' || c == ')') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

// "205/270" (ms-swift's 'global_step/max_steps', its Megatron 'iteration'): 205; nullopt for
// anything else.
std::optional<double> Numerator(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size())
    return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i)
    if (i != slash && !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  return ParseNumber(text.substr(0, slash));
}

std::optional<TrainerDict> ParseDictAt(std::string_view s, bool* quoted_epoch) {
  TrainerDict dict;
  size_t p = SkipSpaces(s, 1);
  if (p < s.size() && s[p] == '}')
    return SkipSpaces(s, p + 1) == s.size() ? std::optional(dict) : std::nullopt;
  while (p < s.size()) {
    if (s[p] != '\'' && s[p] != '"') return std::nullopt;
    size_t key_end = SkipQuoted(s, p);
    if (key_end == std::string_view::npos) return std::nullopt;
    std::string key(s.substr(p + 1, key_end - p - 2));
    p = SkipSpaces(s, key_end);
    if (p >= s.size() || s[p] != ':') return std::nullopt;
    p = SkipSpaces(s, p + 1);
    if (p >= s.size()) return std::nullopt;
    std::optional<double> value;
    size_t end = 0;
    if (s[p] == '\'' || s[p] == '"') {
      end = SkipQuoted(s, p);
      if (end == std::string_view::npos) return std::nullopt;
      const std::string_view text = s.substr(p + 1, end - p - 2);
      value = ParseNumber(text);
      if (!value && (key.find("global_step") != std::string::npos || key == "iteration"))
        value = Numerator(text);
      if (!value && key == "elapsed_time") value = FormattedSeconds(text);  // ms-swift's
      if (!value && key == "elapsed_time") value = TimedeltaSeconds(text);  // LLaMA-Factory's
      if (key == "epoch" && quoted_epoch) *quoted_epoch = true;
    } else if (s[p] == '[' || s[p] == '{' || s[p] == '(') {
      end = SkipBracketed(s, p);
      if (end == std::string_view::npos) return std::nullopt;
    } else {
      end = s.find_first_of(",}", p);
      if (end == std::string_view::npos) return std::nullopt;
      value = ParseNumber(s.substr(p, end - p));
    }
    dict.emplace(std::move(key), value);
    p = SkipSpaces(s, end);
    if (p >= s.size()) return std::nullopt;
    if (s[p] == '}') return SkipSpaces(s, p + 1) == s.size() ? std::optional(dict) : std::nullopt;
    if (s[p] != ',') return std::nullopt;
    p = SkipSpaces(s, p + 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<TrainerDict> ParseTrainerDict(std::string_view line, bool* quoted_epoch) {
  if (quoted_epoch) *quoted_epoch = false;
  line = Trim(line);
  size_t open = line.find("{'");
  if (open == std::string_view::npos) open = line.find("{\"");
  if (open == std::string_view::npos || line.back() != '}') return std::nullopt;
  return ParseDictAt(line.substr(open), quoted_epoch);
}

std::string_view TrainerDictCompletion(std::string_view line) {
  const std::string_view t = Trim(line);
  size_t open = 0;
  if (!(t.starts_with("{'") || t.starts_with("{\""))) {
    // A dict on the line of the bar drawn before it (`18/400 [07:10<2:18:52, 21.81s/it]{'loss':`).
    open = t.find("{'");
    if (open == std::string_view::npos) open = t.find("{\"");
    if (open == std::string_view::npos) return "";
    const std::string_view bar = t.substr(0, open);
    if (!bar.ends_with("it/s]") && !bar.ends_with("s/it]")) return "";
  }
  return t.find('}', open) == std::string_view::npos ? "}" : "";
}

bool StopsTrainerDictPieces(std::string_view line) {
  const std::string_view t = Trim(line);
  return t.empty() || t.find('{') != std::string_view::npos || t.starts_with('[');
}

}  // namespace bm::logparse
