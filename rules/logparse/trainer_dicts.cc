#include "rules/logparse/trainer_dicts.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <utility>

#include "rules/logparse/line_scan.h"

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

// "205/270" (ms-swift's 'global_step/max_steps'): 205; nullopt for anything else.
std::optional<double> Numerator(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size())
    return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i)
    if (i != slash && !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  return ParseNumber(text.substr(0, slash));
}

size_t SkipSpaces(std::string_view s, size_t p) {
  while (p < s.size() && s[p] == ' ') ++p;
  return p;
}

std::optional<TrainerDict> ParseDictAt(std::string_view s) {
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
      if (!value && key.find("global_step") != std::string::npos) value = Numerator(text);
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

std::optional<double> Get(const TrainerDict& d, std::string_view key) {
  auto it = d.find(key);
  return it == d.end() ? std::nullopt : it->second;
}

bool Has(const TrainerDict& d, std::string_view key) { return d.find(key) != d.end(); }

// After `key` in line: spaces, quotes, '=' or ':' and the value's text.
std::optional<std::string_view> SettingValue(std::string_view line, std::string_view key) {
  size_t at = FindNoCase(line, key);
  if (at == std::string_view::npos) return std::nullopt;
  if (at > 0 && (std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_'))
    return std::nullopt;
  size_t p = at + key.size();
  if (p < line.size() && (std::isalnum(static_cast<unsigned char>(line[p])) || line[p] == '_'))
    return std::nullopt;
  while (p < line.size() &&
         (line[p] == ' ' || line[p] == '\'' || line[p] == '"' || line[p] == '=' || line[p] == ':'))
    ++p;
  size_t end = line.find_first_of(" ,)'\"", p);
  return line.substr(p, end == std::string_view::npos ? std::string_view::npos : end - p);
}

// The last tqdm counter "| n/total [" in text (tqdm's default format:
// "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]").
std::optional<std::pair<int64_t, int64_t>> BarCounter(std::string_view text) {
  std::optional<std::pair<int64_t, int64_t>> found;
  auto digits = [&](size_t p) {
    while (p < text.size() && std::isdigit(static_cast<unsigned char>(text[p]))) ++p;
    return p;
  };
  for (size_t bar = text.find('|'); bar != std::string_view::npos; bar = text.find('|', bar + 1)) {
    const size_t n_at = SkipSpaces(text, bar + 1);
    const size_t n_end = digits(n_at);
    if (n_end == n_at || n_end >= text.size() || text[n_end] != '/') continue;
    const size_t total_end = digits(n_end + 1);
    if (total_end == n_end + 1 || text.substr(total_end, 2) != " [") continue;
    std::optional<double> n = ParseNumber(text.substr(n_at, n_end - n_at));
    std::optional<double> total = ParseNumber(text.substr(n_end + 1, total_end - n_end - 1));
    if (n && total && *n <= *total)
      found = {static_cast<int64_t>(*n), static_cast<int64_t>(*total)};
  }
  return found;
}

}  // namespace

std::optional<TrainerDict> ParseTrainerDict(std::string_view line) {
  line = Trim(line);
  size_t open = line.find("{'");
  if (open == std::string_view::npos) open = line.find("{\"");
  if (open == std::string_view::npos || line.back() != '}') return std::nullopt;
  return ParseDictAt(line.substr(open));
}

bool TrainerDictReader::ReadSetting(std::string_view line) {
  if (std::optional<std::string_view> v = SettingValue(line, "logging_steps")) {
    std::optional<double> n = LeadingNumber(*v);
    if (n && *n >= 1 && *n == std::floor(*n)) {
      logging_steps_ = static_cast<int64_t>(*n);
      stated_ = true;
      if (std::optional<std::string_view> f = SettingValue(line, "logging_first_step"))
        first_step_ = *f == "True" || *f == "true" || f->empty() || *f == "--";
      return true;
    }
  }
  if (std::optional<std::string_view> f = SettingValue(line, "logging_first_step")) {
    // "--logging_first_step" alone (HfArgumentParser's bool flag) means True.
    first_step_ = *f == "True" || *f == "true" || f->empty() || f->rfind("--", 0) == 0;
    return true;
  }
  return false;
}

void TrainerDictReader::SawStep(int64_t step) { anchored_ = step; }

void TrainerDictReader::ReadBar(std::string_view text, int64_t line) {
  if (std::optional<std::pair<int64_t, int64_t>> c = BarCounter(text.substr(0, text.find('{'))))
    bar_ = Bar{c->first, c->second, line};
}

std::optional<int64_t> TrainerDictReader::BarStep(const std::optional<Bar>& bar, int64_t line) {
  if (!bar) return std::nullopt;
  const bool near = bar->line == line || (bar->line == line - 1 && bar->n < bar->total);
  if (!near || bar->n <= last_ || (bar_total_ != 0 && bar->total != bar_total_))
    return std::nullopt;
  if (stated_ && bar->n % logging_steps_ != 0 && !(first_step_ && bar->n == 1))
    return std::nullopt;  // a bar tqdm had not redrawn since an earlier step
  bar_total_ = bar->total;
  return bar->n;
}

void TrainerDictReader::NoteGuessedSteps(std::string_view name, ParsedLog& log) const {
  if (!counted_ || stated_) return;
  log.notes.push_back(fmt::format(
      "{}: the log does not state logging_steps (TrainingArguments or the command line): its "
      "dicts without a progress bar that gives their step are numbered as if it were 1 "
      "(1, 2, 3, ... after the last known step; transformers' default is 500)",
      name));
}

bool TrainerDictReader::ReadResume(std::string_view line, std::map<int64_t, Iteration>& steps,
                                   ParsedLog& log) {
  constexpr std::string_view kResume = "Continuing training from global step ";
  size_t at = line.find(kResume);
  if (at == std::string_view::npos) return false;
  std::optional<double> n = LeadingNumber(line.substr(at + kResume.size()));
  if (!n) return false;
  const int64_t step = static_cast<int64_t>(*n);
  steps.erase(steps.upper_bound(step), steps.end());
  ++log.restarts;
  last_ = step;
  anchored_.reset();
  bar_.reset();
  return true;
}

int64_t TrainerDictReader::NextAfter(int64_t step) const {
  if (first_step_ && step < 1) return 1;
  return (step / logging_steps_ + 1) * logging_steps_;
}

bool TrainerDictReader::Read(const TrainerDict& dict, int64_t line,
                             std::map<int64_t, Iteration>& steps, ParsedLog& log) {
  const std::optional<Bar> bar = std::exchange(bar_, std::nullopt);  // a bar is for one dict
  if (Has(dict, "train_runtime")) {
    log.wall_s = Get(dict, "train_runtime");
    std::optional<double> rate = Get(dict, "train_samples_per_second");
    if (rate && *rate > 0 && !log.trainer_average) {
      TrainerAverage avg;
      avg.samples_per_s = rate;
      avg.through_step = last_;
      std::optional<double> sps = Get(dict, "train_steps_per_second");
      if (sps && log.wall_s && *sps > 0)  // rounded to 4 digits: the nearest whole step
        avg.through_step = std::llround(*sps * *log.wall_s);
      avg.line = line;
      avg.what = "the Trainer's train_samples_per_second (the whole run, its first steps included)";
      log.trainer_average = avg;
    }
    return true;
  }
  if (std::optional<double> eval = Get(dict, "eval_loss")) {
    log.evals.push_back({last_, *eval, line});
    if (log.eval_what.empty()) log.eval_what = "the Trainer's eval_loss";
    return true;
  }
  if (!Has(dict, "loss")) return false;
  int64_t step = 0;
  std::optional<double> named;
  for (std::string_view key :
       {"step", "global_step",                                     // PaddleNLP's Trainer
        "global_step/max_steps", "steps[global_step/max_steps]"})  // ms-swift
    if (!named) named = Get(dict, key);
  if (named) {
    step = static_cast<int64_t>(*named);
  } else if (anchored_) {
    const int64_t n = *anchored_;
    step = first_step_ && n <= 1 ? 1 : (n + logging_steps_ - 1) / logging_steps_ * logging_steps_;
  } else if (std::optional<int64_t> n = BarStep(bar, line)) {
    step = *n;
  } else {
    step = NextAfter(last_);
    counted_ = true;
  }
  anchored_.reset();
  last_ = step;
  Iteration& it = steps[step];
  if (it.line == 0) {
    it.step = step;
    it.line = line;
  }
  if (!it.loss) it.loss = Get(dict, "loss");
  if (!it.lr) it.lr = Get(dict, "learning_rate");
  if (!it.grad_norm) it.grad_norm = Get(dict, "grad_norm");
  return true;
}

}  // namespace bm::logparse
