// Every log of the corpus (tests/data/logs/), mutated as logs really get damaged (cut short, lines
// lost, doubled or moved, another process's lines mixed in, a number turned into nan or an
// overflow, a byte flipped, line ends changed), read by its own format, by `auto` and by one other
// format, then turned into metrics as exec does. What must hold for any text (log_parser.h): no
// crash or exception (run it in the sanitizer build), an error names the log and, where it names a
// line, one the log has; a read log's records ascend by step, each names a line of the log, and
// its metrics serialize. BENCHMAKE_LOG_MUTANTS (default 4 a log) and BENCHMAKE_LOG_MUTATION_SEED
// (default 1) widen the search by hand; BENCHMAKE_LOG_MUTATION_KEEP=DIR keeps the mutants that
// break a promise there.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "rules/external_metrics.h"
#include "rules/logparse/log_parser.h"
#include "tests/rules/read_log.h"

namespace bm::rules {
namespace {

using logparse::FindLogParser;
using logparse::LogParserNameList;
using logparse::ParsedLog;

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoll(v, nullptr, 10) : fallback;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

// What a damaged number may read as.
const char* const kNumbers[] = {"nan",
                                "inf",
                                "-inf",
                                "-1",
                                "0",
                                "1e309",
                                "-0",
                                "abc",
                                "",
                                "99999999999999999999999",
                                "9007199254740993",
                                "1e-320",
                                "0x10",
                                "1,5",
                                "3.",
                                ".5",
                                "1e",
                                "NaN%",
                                "+7"};

// One mutant of `text`; `other` is another log of the corpus, for mixed-in lines.
std::string Mutate(const std::string& text, const std::string& other, std::mt19937_64& rng,
                   std::string* what) {
  auto pick = [&rng](size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  };
  std::vector<std::string> lines = SplitLines(text);
  switch (pick(9)) {
    case 0: {
      size_t at = pick(text.size() + 1);
      *what = "cut at byte " + std::to_string(at);
      return text.substr(0, at);
    }
    case 1: {
      size_t i = pick(lines.size());
      *what = "delete line " + std::to_string(i + 1);
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
      return Join(lines);
    }
    case 2: {
      size_t i = pick(lines.size());
      size_t times = 1 + pick(3);
      *what = "line " + std::to_string(i + 1) + " again x" + std::to_string(times);
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), times, lines[i]);
      return Join(lines);
    }
    case 3: {
      size_t a = pick(lines.size()), b = pick(lines.size());
      *what = "swap lines " + std::to_string(a + 1) + " and " + std::to_string(b + 1);
      std::swap(lines[a], lines[b]);
      return Join(lines);
    }
    case 4: {
      std::vector<std::string> theirs = SplitLines(other);
      size_t i = pick(lines.size() + 1), j = pick(theirs.size());
      *what = "insert another log's line at " + std::to_string(i + 1);
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i), theirs[j]);
      return Join(lines);
    }
    case 5: {
      static const std::regex number(R"(\d+(\.\d+)?([eE][-+]?\d+)?)");
      std::vector<std::pair<size_t, size_t>> spans;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
           it != std::sregex_iterator(); ++it)
        spans.emplace_back(static_cast<size_t>(it->position()), static_cast<size_t>(it->length()));
      if (spans.empty()) return text;
      auto [at, n] = spans[pick(spans.size())];
      const std::string to = kNumbers[pick(std::size(kNumbers))];
      *what = "number at byte " + std::to_string(at) + " -> '" + to + "'";
      return text.substr(0, at) + to + text.substr(at + n);
    }
    case 6: {
      static const char kBytes[] = {'\0', '\xff', '\xc3', '\r', '\n', '|', ':', '{', '}',    '"',
                                    '\'', '[',    ']',    ',',  ' ',  '=', '/', '-', '\x1b', 'e'};
      if (text.empty()) return text;
      size_t at = pick(text.size());
      char to = kBytes[pick(sizeof kBytes)];
      *what =
          "byte " + std::to_string(at) + " -> " + std::to_string(static_cast<unsigned char>(to));
      std::string out = text;
      out[at] = to;
      return out;
    }
    case 7: {
      *what = "line ends CRLF, or none";
      std::string out;
      bool crlf = pick(2);
      for (char c : text) {
        if (c == '\n')
          out += crlf ? "\r\n" : "\r";
        else
          out += c;
      }
      return out;
    }
    default: {
      size_t i = pick(lines.size());
      size_t at = pick(lines[i].size() + 1);
      *what = "line " + std::to_string(i + 1) + " cut at column " + std::to_string(at + 1) +
              " and joined to the next";
      lines[i] = lines[i].substr(0, at);
      if (i + 1 < lines.size()) {
        lines[i] += lines[i + 1];
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i + 1));
      }
      return Join(lines);
    }
  }
}

// "" when `log`, read from `text` as `name`, keeps the parsers' promises; else what it breaks.
std::string Broken(const ParsedLog& log, const std::string& text) {
  const int64_t lines = static_cast<int64_t>(SplitLines(text).size()) + 1;
  int64_t last = -1;
  for (const logparse::Iteration& it : log.iterations) {
    if (it.step <= last)
      return "step " + std::to_string(it.step) + " after " + std::to_string(last);
    if (it.span < 1)
      return "span " + std::to_string(it.span) + " at step " + std::to_string(it.step);
    if (it.line < 1 || it.line > lines)
      return "record of step " + std::to_string(it.step) + " at line " + std::to_string(it.line);
    last = it.step;
  }
  for (const auto& [key, fact] : log.facts)
    if (fact.line < 0 || fact.line > lines)
      return "fact " + key + " at line " + std::to_string(fact.line);
  for (const logparse::EvalPoint& e : log.evals)
    if (e.line < 0 || e.line > lines) return "evaluation at line " + std::to_string(e.line);
  return "";
}

// "" when an error message names the log and every line it names is one the log has.
std::string BadMessage(const std::string& message, const std::string& name,
                       const std::string& text) {
  if (message.find(name) == std::string::npos) return "does not name " + name;
  const std::regex at(std::regex_replace(name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                      R"(:(\d+))");
  const size_t lines = SplitLines(text).size();
  for (auto it = std::sregex_iterator(message.begin(), message.end(), at);
       it != std::sregex_iterator(); ++it) {
    const long long line = std::stoll((*it)[1]);
    if (line < 1 || line > static_cast<long long>(lines) + 1)
      return "names line " + (*it)[1].str() + " of a log of " + std::to_string(lines);
  }
  return "";
}

TEST(LogMutation, EveryMutantIsReadOrRefusedByItsPlace) {
  std::vector<std::filesystem::path> logs;
  for (const auto& e : std::filesystem::directory_iterator(testing::TestDataPath("logs")))
    if (e.path().extension() == ".log" || e.path().extension() == ".txt" ||
        e.path().extension() == ".jsonl")
      logs.push_back(e.path());
  std::sort(logs.begin(), logs.end());
  ASSERT_GT(logs.size(), 200u) << testing::TestDataPath("logs");

  const int64_t mutants = EnvInt("BENCHMAKE_LOG_MUTANTS", 4);
  std::mt19937_64 rng(static_cast<uint64_t>(EnvInt("BENCHMAKE_LOG_MUTATION_SEED", 1)));
  const std::vector<std::string> formats = LogParserNameList();
  int64_t read = 0, refused = 0;
  for (size_t k = 0; k < logs.size(); ++k) {
    const std::string base = logs[k].filename().string();
    const std::string text = testing::ReadTestData("logs/" + base);
    const std::string own = base.substr(0, base.find('_'));
    for (int64_t m = 0; m < mutants; ++m) {
      std::string what;
      const std::string other = testing::ReadTestData(
          "logs/" +
          logs[std::uniform_int_distribution<size_t>(0, logs.size() - 1)(rng)].filename().string());
      const std::string mutant = Mutate(text, other, rng, &what);
      std::vector<std::string> tried = {"auto", formats[rng() % formats.size()]};
      if (FindLogParser(own)) tried.push_back(own);
      // A mutant that breaks a promise is kept for reading where asked.
      auto keep = [&] {
        if (const char* dir = std::getenv("BENCHMAKE_LOG_MUTATION_KEEP"))
          std::ofstream(std::string(dir) + "/" + base + "." + std::to_string(m), std::ios::binary)
              << mutant;
      };
      for (const std::string& format : tried) {
        SCOPED_TRACE(base + " (" + what + ") as " + format);
        const logparse::LogParser* parser = FindLogParser(format);
        ASSERT_NE(parser, nullptr);
        const auto start = std::chrono::steady_clock::now();
        Result<ParsedLog> log = parser->parse(mutant, base);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_LT(s, 5.0) << "reading took " << s << " s";
        if (!log.ok()) {
          ++refused;
          const std::string bad = BadMessage(log.status().message(), base, mutant);
          EXPECT_EQ(bad, "") << log.status().message();
          if (!bad.empty()) keep();
          continue;
        }
        const std::string broken = Broken(*log, mutant);
        EXPECT_EQ(broken, "");
        if (!broken.empty()) keep();
        nlohmann::json params = {{"log_format", format}};
        Result<ExternalMetrics> ext =
            BuildExternalMetrics(*parser, *log, base, testing_logs::Params(params), {});
        if (!ext.ok()) {
          ++refused;
          EXPECT_EQ(BadMessage(ext.status().message(), base, mutant), "") << ext.status().message();
          continue;
        }
        ++read;
        EXPECT_NO_THROW(
            (void)ext->metrics.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
      }
    }
  }
  std::printf("%lld read, %lld refused\n", static_cast<long long>(read),
              static_cast<long long>(refused));
  EXPECT_GT(read, 0);
}

}  // namespace
}  // namespace bm::rules
