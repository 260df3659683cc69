#include "rules/logparse/line_scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>
#include <string>

namespace bm::logparse {

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::optional<double> LeadingNumber(std::string_view s, size_t* end) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return std::nullopt;
  double v = 0;
  // from_chars reads nan / inf in any case, as strtod does, but never a '+'.
  const char* first = s.data() + b;
  if (*first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, s.data() + s.size(), v);
  if (ec != std::errc()) return std::nullopt;
  if (end) *end = static_cast<size_t>(ptr - s.data());
  return v;
}

std::optional<double> ParseNumber(std::string_view s) {
  s = Trim(s);
  size_t end = 0;
  std::optional<double> v = LeadingNumber(s, &end);
  if (!v || end != s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> WholeCount(double v) {
  constexpr double kLargest = 9007199254740992.0;  // 2^53
  if (!(v >= 0 && v <= kLargest) || v != std::floor(v)) return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<int64_t> WholeCount(std::optional<double> v) {
  return v ? WholeCount(*v) : std::nullopt;
}

std::optional<double> SiValue(std::string_view text, std::string_view unit) {
  size_t end = 0;
  std::optional<double> v = LeadingNumber(text, &end);
  if (!v) return std::nullopt;
  std::string_view rest = Trim(text.substr(end));
  double scale = 1;
  if (!rest.empty() && !(unit.size() > 0 && rest.starts_with(unit))) {
    switch (rest.front()) {
      case 'E':
        scale = 1e18;
        break;
      case 'P':
        scale = 1e15;
        break;
      case 'T':
        scale = 1e12;
        break;
      case 'G':
        scale = 1e9;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'K':
      case 'k':
        scale = 1e3;
        break;
      case 'm':
        scale = 1e-3;
        break;
      case 'u':
        scale = 1e-6;
        break;
      default:
        return std::nullopt;
    }
    rest.remove_prefix(1);
  }
  if (!unit.empty() && !rest.starts_with(unit)) return std::nullopt;
  rest.remove_prefix(unit.size());
  if (!rest.empty() && std::isalnum(static_cast<unsigned char>(rest.front()))) return std::nullopt;
  return *v * scale;
}

std::optional<double> GroupedNumber(std::string_view s, size_t* end) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string_view::npos) return std::nullopt;
  auto digit = [&](size_t i) {
    return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]));
  };
  if (std::isalpha(static_cast<unsigned char>(s[b]))) {  // nan, inf
    size_t n = 0;
    std::optional<double> v = LeadingNumber(s.substr(b), &n);
    if (v && end) *end = b + n;
    return v;
  }
  std::string digits;
  size_t p = b;
  for (; p < s.size(); ++p) {
    const char c = s[p];
    if (c == ',' && p > b && digit(p - 1) && digit(p + 1)) continue;  // "8,030,261,248"
    if (!digit(p) && c != '.' && c != '-' && c != '+' && c != 'e' && c != 'E') break;
    digits += c;
  }
  size_t used = 0;
  std::optional<double> v = LeadingNumber(digits, &used);
  if (!v || used != digits.size()) return std::nullopt;
  if (end) *end = p;
  return v;
}

std::optional<std::string_view> DottedArg(std::string_view line, std::string_view name) {
  size_t from = 0;
  while (true) {
    size_t at = line.find(name, from);
    if (at == std::string_view::npos) return std::nullopt;
    from = at + 1;
    if (at < 2 || line.substr(at - 2, 2) != "  ") continue;
    size_t p = at + name.size();
    if (p >= line.size() || line[p] != ' ') continue;
    ++p;
    while (p < line.size() && line[p] == '.') ++p;
    if (p >= line.size() || line[p] != ' ') continue;
    std::string_view value = Trim(line.substr(p + 1));
    if (value.starts_with(':')) continue;  // Primus's `  name     : value (type)`
    return value;
  }
}

size_t SkipSpaces(std::string_view s, size_t p) {
  while (p < s.size() && s[p] == ' ') ++p;
  return p;
}

size_t FindNoCase(std::string_view line, std::string_view key, size_t from) {
  if (from > line.size()) return std::string_view::npos;
  auto lower_eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
  };
  auto it = std::search(line.begin() + static_cast<std::ptrdiff_t>(from), line.end(), key.begin(),
                        key.end(), lower_eq);
  return it == line.end() ? std::string_view::npos : static_cast<size_t>(it - line.begin());
}

bool NameStartsAt(std::string_view line, size_t at) {
  if (at == 0 || at > line.size()) return true;
  const char before = line[at - 1];
  if (std::isalnum(static_cast<unsigned char>(before)) || before == '_') return false;
  return !(before == '/' && at >= 2 &&
           (std::isalpha(static_cast<unsigned char>(line[at - 2])) || line[at - 2] == '_'));
}

size_t FindKeyValue(std::string_view line, std::string_view key, std::string_view seps,
                    size_t from) {
  const bool named =
      !key.empty() && (std::isalnum(static_cast<unsigned char>(key.front())) || key.front() == '_');
  while (true) {
    size_t at = FindNoCase(line, key, from);
    if (at == std::string_view::npos) return at;
    size_t p = at + key.size();
    from = at + 1;
    if (named && !NameStartsAt(line, at)) continue;
    while (p < line.size() && (line[p] == ' ' || line[p] == '\'' || line[p] == '"')) ++p;
    if (p < line.size() && seps.find(line[p]) != std::string_view::npos) return p + 1;
  }
}

namespace {

bool Same(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b) return a.has_value() == b.has_value();
  return *a == *b || (std::isnan(*a) && std::isnan(*b));
}

// Another rank's (or node's) copy of a record: the same numbers.
bool SameRecord(const Iteration& a, const Iteration& b) {
  return a.step == b.step && Same(a.ms, b.ms) && Same(a.loss, b.loss) && Same(a.lr, b.lr) &&
         Same(a.samples, b.samples) && Same(a.grad_norm, b.grad_norm) &&
         Same(a.loss_scale, b.loss_scale) && a.skipped == b.skipped && a.nan == b.nan;
}

}  // namespace

bool IsElisionMark(std::string_view line) {
  std::string_view t = Trim(line);
  if (t == "<snip>" || t == "[snip]") return true;
  if (t.size() >= 2 &&
      ((t.front() == '[' && t.back() == ']') || (t.front() == '(' && t.back() == ')'))) {
    t = Trim(t.substr(1, t.size() - 2));
  }
  if (t == "\xE2\x80\xA6") return true;  // U+2026, the ellipsis character, in UTF-8
  return t.size() >= 3 && t.find_first_not_of('.') == std::string_view::npos;
}

bool IsCutLastLine(std::string_view text, std::string_view line) {
  return !text.ends_with('\n') && !std::less<const char*>()(line.data(), text.data()) &&
         std::equal_to<const char*>()(line.data() + line.size(), text.data() + text.size());
}

void AddIteration(std::vector<Iteration>& its, Iteration it, int64_t* restarts) {
  if (!its.empty() && SameRecord(it, its.back())) return;
  if (!its.empty() && it.step <= its.back().step) {
    auto first_replaced =
        std::lower_bound(its.begin(), its.end(), it.step,
                         [](const Iteration& a, int64_t step) { return a.step < step; });
    its.erase(first_replaced, its.end());
    ++*restarts;
  }
  its.push_back(it);
}

void FillSpansFromGaps(std::vector<Iteration>& its) {
  for (size_t i = 0; i < its.size(); ++i) {
    int64_t span = 0;
    if (i > 0) {
      span = its[i].step - its[i - 1].step;
    } else if (its.size() > 1) {
      span = std::min(its[0].step, its[1].step - its[0].step);
    } else {
      span = its[0].step;
    }
    its[i].span = std::max<int64_t>(1, span);
  }
}

void SetFact(ParsedLog& log, const char* name, double value, int64_t line) {
  log.facts.emplace(name, Fact{value, line});
}

void DataParallelFromTotalBatch(ParsedLog& log, std::string_view name) {
  if (log.facts.count("dp")) return;
  auto gbs = log.facts.find("gbs"), lbs = log.facts.find("lbs"), gas = log.facts.find("gas");
  if (gbs == log.facts.end() || lbs == log.facts.end() || gas == log.facts.end()) return;
  if (!(lbs->second.value >= 1 && gas->second.value >= 1)) return;
  const double dp = gbs->second.value / (lbs->second.value * gas->second.value);
  if (!(dp >= 1 && dp <= 2147483648.0) || dp != std::floor(dp)) return;
  SetFact(log, "dp", dp, gbs->second.line);
  log.notes.push_back(fmt::format(
      "{}:{}: {} data-parallel ranks: the total train batch size {} / ({} per device x {} "
      "accumulation steps); the devices are taken to be these ranks (a run that also splits the "
      "model, tensor, pipeline, context or sequence parallel, has more: set layout)",
      name, gbs->second.line, dp, gbs->second.value, lbs->second.value, gas->second.value));
}

void SetConfigFact(ParsedLog& log, std::string_view name, const char* fact, double value,
                   int64_t line, std::string_view source, std::string_view key) {
  auto it = log.facts.find(fact);
  if (it == log.facts.end()) {
    SetFact(log, fact, value, line);
  } else if (it->second.value != value) {
    log.notes.push_back(fmt::format("{}: {}:{} says {}, {} {}:{} says {} ({}): {} kept", fact, name,
                                    it->second.line, it->second.value, source, name, line, value,
                                    key, it->second.value));
  }
}

void SetConfigPrecision(ParsedLog& log, std::string_view name, std::string_view precision,
                        int64_t line, std::string_view source, std::string_view key) {
  if (log.precision.empty()) {
    log.precision = std::string(precision);
    log.precision_line = line;
  } else if (log.precision != precision) {
    log.notes.push_back(fmt::format("precision: {}:{} says {}, {} {}:{} says {} ({}): {} kept",
                                    name, log.precision_line, log.precision, source, name, line,
                                    precision, key, log.precision));
  }
}

int64_t CountLines(std::string_view text) {
  if (text.empty()) return 0;
  int64_t n = std::count(text.begin(), text.end(), '\n');
  return text.back() == '\n' ? n : n + 1;
}

std::optional<std::string> WithoutTerminalEscapes(std::string_view text) {
  size_t esc = text.find("\x1b[");
  if (esc == std::string_view::npos) return std::nullopt;
  std::string out(text.substr(0, esc));
  out.reserve(text.size());
  while (esc != std::string_view::npos) {
    size_t p = esc + 2;  // parameter and intermediate bytes (0x20-0x3F), then a final 0x40-0x7E
    while (p < text.size() && text[p] >= 0x20 && text[p] <= 0x3F) ++p;
    if (p < text.size() && text[p] >= 0x40 && text[p] <= 0x7E) ++p;
    size_t next = text.find("\x1b[", p);
    out += text.substr(p, (next == std::string_view::npos ? text.size() : next) - p);
    esc = next;
  }
  return out;
}

std::string NoteText(std::string_view text) {
  const std::string quoted = nlohmann::json(std::string(text))
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return quoted.substr(1, quoted.size() - 2);
}

std::optional<double> JsonNumber(const nlohmann::json& o, const char* key) {
  if (!o.is_object()) return std::nullopt;
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<double> NumberAfter(std::string_view line, std::string_view key,
                                  std::string_view seps) {
  size_t at = FindKeyValue(line, key, seps);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = Trim(line.substr(at));
  if (rest.rfind("tensor(", 0) == 0) rest.remove_prefix(7);  // print(loss) of a torch tensor
  while (!rest.empty() && (rest.front() == '[' || rest.front() == '\'' || rest.front() == '"'))
    rest.remove_prefix(1);  // lr=[0.0001], 'loss': '10.46'
  return LeadingNumber(rest);
}

}  // namespace bm::logparse
