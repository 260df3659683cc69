#include "trainer/eval/mmmu_answer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>

namespace bm::train::eval {
namespace {

bool IsPySpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' ||
         (c >= '\x1c' && c <= '\x1f');
}

std::string_view Strip(std::string_view s) {  // str.strip()
  while (!s.empty() && IsPySpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsPySpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view StripChar(std::string_view s, char c) {  // str.strip(c)
  while (!s.empty() && s.front() == c) s.remove_prefix(1);
  while (!s.empty() && s.back() == c) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

size_t CodePoints(std::string_view s) {  // len(str) of UTF-8 text
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

size_t SplitCount(std::string_view s) {  // len(str.split())
  size_t n = 0;
  bool in_word = false;
  for (char c : s) {
    const bool space = IsPySpace(c);
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

bool Contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// rfind as Python returns it: -1 when absent.
long RFind(std::string_view hay, std::string_view needle) {
  const size_t p = hay.rfind(needle);
  return p == std::string_view::npos ? -1 : static_cast<long>(p);
}

// round(x, 2) for a float: correctly rounded to 2 decimals (ties on the exact binary
// value go to even), as CPython's float.__round__ (dtoa mode 3) and glibc's printf do.
double Round2(double x) {
  if (!std::isfinite(x)) return x;
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return std::strtod(buf, nullptr);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Digits with single underscores between them (Python's float() grammar); returns the
// end, or start when there is none.
size_t Digits(std::string_view s, size_t i) {
  const size_t start = i;
  while (i < s.size()) {
    if (IsDigit(s[i])) {
      ++i;
    } else if (s[i] == '_' && i > start && IsDigit(s[i - 1]) && i + 1 < s.size() &&
               IsDigit(s[i + 1])) {
      ++i;
    } else {
      break;
    }
  }
  return i;
}

bool EqualsNoCase(std::string_view a, std::string_view b) { return Lower(a) == b; }

}  // namespace

std::optional<double> PythonFloat(std::string_view text) {
  std::string no_commas;
  for (char c : text)
    if (c != ',') no_commas += c;
  std::string_view s = Strip(no_commas);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  const std::string_view rest = s.substr(i);
  if (EqualsNoCase(rest, "inf") || EqualsNoCase(rest, "infinity"))
    return negative ? -HUGE_VAL : HUGE_VAL;
  if (EqualsNoCase(rest, "nan")) return std::nan("");
  const size_t int_end = Digits(s, i);
  bool any_digits = int_end > i;
  i = int_end;
  if (i < s.size() && s[i] == '.') {
    const size_t frac_end = Digits(s, i + 1);
    any_digits = any_digits || frac_end > i + 1;
    i = frac_end;
  }
  if (!any_digits) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const size_t exp_end = Digits(s, j);
    if (exp_end == j) return std::nullopt;
    i = exp_end;
  }
  if (i != s.size()) return std::nullopt;
  std::string clean;
  for (char c : s)
    if (c != '_') clean += c;
  return std::strtod(clean.c_str(), nullptr);
}

std::vector<OpenPred> NormalizeStr(std::string_view text) {
  const std::string_view s = Strip(text);
  if (std::optional<double> v = PythonFloat(s)) return {OpenPred{true, Round2(*v), ""}};
  std::string lower = Lower(s);
  if (CodePoints(lower) == 1)
    return {OpenPred{false, 0, " " + lower}, OpenPred{false, 0, lower + " "}};
  return {OpenPred{false, 0, std::move(lower)}};
}

std::vector<std::string> ExtractNumbers(std::string_view text) {
  // The patterns of extract_numbers, verbatim (ECMAScript and Python agree on them).
  static const std::regex kCommas(R"(-?\b\d{1,3}(?:,\d{3})+\b)");
  static const std::regex kScientific(R"(-?\d+(?:\.\d+)?[eE][+-]?\d+)");
  static const std::regex kSimple(R"(-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d]))");
  std::vector<std::string> out;
  const std::string s(text);
  for (const std::regex* re : {&kCommas, &kScientific, &kSimple})
    for (auto it = std::sregex_iterator(s.begin(), s.end(), *re); it != std::sregex_iterator();
         ++it)
      out.push_back(it->str());
  return out;
}

std::string ParseMultiChoice(std::string_view response_in, const std::vector<std::string>& options,
                             PythonRandom& rng) {
  std::string_view r = response_in;
  for (char c : {',', '.', '!', '?', ';', ':', '\''}) r = StripChar(r, c);
  const std::string response = " " + std::string(r) + " ";
  std::vector<std::string> letters;
  for (size_t i = 0; i < options.size(); ++i) letters.emplace_back(1, static_cast<char>('A' + i));

  bool index_ans = true, with_brackets = false;
  std::vector<size_t> cands;  // indices into letters
  for (size_t i = 0; i < letters.size(); ++i)
    if (Contains(response, "(" + letters[i] + ")")) {
      cands.push_back(i);
      with_brackets = true;
    }
  if (cands.empty())
    for (size_t i = 0; i < letters.size(); ++i)
      if (Contains(response, " " + letters[i] + " ")) cands.push_back(i);
  const std::string lower = Lower(response);
  if (cands.empty() && SplitCount(response) > 5)
    for (size_t i = 0; i < options.size(); ++i)
      if (Contains(lower, Lower(options[i]))) {
        cands.push_back(i);
        index_ans = false;
      }

  if (cands.empty()) {
    if (letters.empty()) return "";  // MMMU's random.choice([]) raises IndexError
    return letters[rng.RandBelow(static_cast<uint32_t>(letters.size()))];
  }
  if (cands.size() == 1) return letters[cands[0]];
  // The candidate found last in the response (np.argmax: the first of equal maxima).
  size_t best = 0;
  long best_pos = 0;
  for (size_t c = 0; c < cands.size(); ++c) {
    const size_t i = cands[c];
    long pos;
    if (!index_ans)
      pos = RFind(lower, Lower(options[i]));
    else if (with_brackets)
      pos = RFind(response, "(" + letters[i] + ")");
    else
      pos = RFind(response, " " + letters[i] + " ");
    if (c == 0 || pos > best_pos) {
      best = i;
      best_pos = pos;
    }
  }
  return letters[best];
}

std::vector<OpenPred> ParseOpen(std::string_view response_in) {
  // get_key_subresponses: MMMU splits on r'\.\s(?=[A-Z])|\n' after lower-casing, so only
  // the newlines split.
  const std::string response = Lower(StripChar(Strip(response_in), '.'));
  std::vector<std::string_view> subs;
  {
    std::string_view rest = response;
    for (size_t p; (p = rest.find('\n')) != std::string_view::npos; rest.remove_prefix(p + 1))
      subs.push_back(rest.substr(0, p));
    subs.push_back(rest);
  }
  std::vector<std::string_view> indicators = {"could be ",  "so ",    "is ",     "thus ",
                                              "therefore ", "final ", "answer ", "result "};
  std::vector<std::string> keys;
  for (size_t index = 0; index < subs.size(); ++index) {
    const std::string_view resp = subs[index];
    if (index == subs.size() - 1) indicators.push_back("=");
    std::optional<std::string_view> shortest;
    for (std::string_view ind : indicators) {
      const size_t p = resp.rfind(ind);
      if (p == std::string_view::npos) continue;
      const std::string_view tail = Strip(resp.substr(p + ind.size()));
      // `if not shortest_key_response`: None and "" both take the new one.
      if (!shortest || shortest->empty() || CodePoints(tail) < CodePoints(*shortest))
        shortest = tail;
    }
    if (shortest && !shortest->empty()) {
      static const std::string_view kTrivial[] = {":", ",", ".", "!", "?", ";", "'"};
      bool trivial = false;
      for (std::string_view t : kTrivial) trivial = trivial || Strip(*shortest) == t;
      if (!trivial) keys.emplace_back(*shortest);
    }
  }
  if (keys.empty()) keys.push_back(response);

  std::vector<std::string> pred_list = keys;
  for (const std::string& k : keys)
    for (std::string& n : ExtractNumbers(k)) pred_list.push_back(std::move(n));
  std::vector<OpenPred> out;
  for (const std::string& p : pred_list)
    for (OpenPred& n : NormalizeStr(p)) {
      bool seen = false;
      for (const OpenPred& o : out) seen = seen || o == n;
      if (!seen) out.push_back(std::move(n));
    }
  return out;
}

}  // namespace bm::train::eval
