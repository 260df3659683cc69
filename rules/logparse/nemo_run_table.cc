#include "rules/logparse/nemo_run_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <optional>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kRunTableHeader = "┃ Argument Name";
constexpr std::string_view kRunTableBar = "│";
constexpr std::string_view kRunTableBottom = "└";
constexpr std::string_view kRunTableHeaderRule = "┡";

constexpr ConfigFactKey kRunTableKeys[] = {
    {"data.seq_length", "mpe"},
    {"data.micro_batch_size", "lbs"},
    {"data.global_batch_size", "gbs"},
    {"trainer.strategy.tensor_model_parallel_size", "tp"},
    {"trainer.strategy.pipeline_model_parallel_size", "pp"},
};

bool IsRunTableNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A cell's text with its quoted strings made inert: their brackets, commas and `=` become `_`,
// and a string a cut cell (`'MODEL_AND_OPTIMIZER_…`) left open is closed at the cell's end.
std::string InertQuotes(std::string_view cell) {
  std::string out(cell);
  char quote = 0;
  for (char& c : out) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else if (std::string_view("()[]{},=").find(c) != std::string_view::npos) {
        c = '_';
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    }
  }
  if (quote != 0) out += quote;
  return out;
}

}  // namespace

bool NemoRunTableReader::Read(std::string_view line, int64_t no) {
  if (state_ == State::kDone) return false;
  if (state_ == State::kNone) {
    const size_t at = line.find(kRunTableHeader);
    if (at == std::string_view::npos || line.find("Resolved Value") == std::string_view::npos)
      return false;
    state_ = State::kHeader;
    prefix_ = std::string(line.substr(0, at));
    return true;
  }
  std::string_view body = line.starts_with(prefix_) ? line.substr(prefix_.size()) : "";
  if (state_ == State::kHeader) {  // the rule under the header
    if (body.starts_with(kRunTableHeaderRule)) {
      state_ = State::kRows;
      return true;
    }
    state_ = State::kNone;
    return false;
  }
  if (!body.starts_with(kRunTableBar)) {  // `└───┴───┘`, or the table lost its bottom
    FinishArgument();
    state_ = State::kDone;
    return body.starts_with(kRunTableBottom);
  }
  body.remove_prefix(kRunTableBar.size());
  const size_t split = body.find(kRunTableBar);
  if (split == std::string_view::npos) return true;
  std::string_view name = Trim(body.substr(0, split));
  std::string_view value = body.substr(split + kRunTableBar.size());
  if (size_t end = value.rfind(kRunTableBar); end != std::string_view::npos)
    value = value.substr(0, end);
  if (!name.empty()) {
    FinishArgument();
    argument_ = std::string(name);
  }
  if (argument_.empty()) return true;
  if (!text_.empty()) text_ += ' ';
  // Rich pads a cell with one space; Pretty indents a nested item two more a level. A row
  // without indentation continues a wrapped one.
  if (value.starts_with(' ')) value.remove_prefix(1);
  const size_t indent = std::min(value.find_first_not_of(' '), value.size());
  rows_.push_back(Row{text_.size(), no, indent >= 2 ? indent / 2 : 0});
  text_ += InertQuotes(Trim(value));
  return true;
}

// Reads the joined cells of one argument: `Name(key=value, key=Call(key=value), ...)`; each
// `key=value` whose value is no call is recorded by its path under the argument.
void NemoRunTableReader::FinishArgument() {
  std::vector<std::string> open;  // the keys of the calls and lists we are in ("" for none)
  std::string pending_key;        // a `key=` whose value is being read
  auto line_at = [&](size_t pos) {
    auto it = std::upper_bound(rows_.begin(), rows_.end(), pos,
                               [](size_t p, const Row& row) { return p < row.at; });
    return it == rows_.begin() ? int64_t{0} : std::prev(it)->line;
  };
  size_t row = 0;  // the next row to start
  const std::string_view text = text_;
  // The argument's own call: `data` -> "MockDataModule", under the path "data()".
  if (size_t call = text.find('('); call != std::string_view::npos && !rows_.empty())
    values_.try_emplace(argument_ + "()",
                        Value{std::string(Trim(text.substr(0, call))), rows_.front().line});
  for (size_t i = 0; i < text.size();) {
    // An indented row's items are at its depth: a cell cut with `…` may have lost closing
    // brackets before it.
    for (; row < rows_.size() && rows_[row].at <= i; ++row)
      if (rows_[row].depth > 0 && open.size() > rows_[row].depth) open.resize(rows_[row].depth);
    const char c = text[i];
    if (c == '(' || c == '[' || c == '{') {
      open.push_back(pending_key);
      pending_key.clear();
      ++i;
    } else if (c == ')' || c == ']' || c == '}') {
      if (!open.empty()) open.pop_back();
      pending_key.clear();
      ++i;
    } else if (IsRunTableNameChar(c) && (i == 0 || !IsRunTableNameChar(text[i - 1]))) {
      size_t end = i;
      while (end < text.size() && IsRunTableNameChar(text[end])) ++end;
      if (end < text.size() && text[end] == '=') {  // `key=`
        pending_key = std::string(text.substr(i, end - i));
        size_t v = end + 1;
        // The value ends at a separator, or where the next indented row starts (the cell was
        // cut).
        size_t limit = text.size();
        for (size_t r = row; r < rows_.size(); ++r) {
          if (rows_[r].at > v && rows_[r].depth > 0) {
            limit = rows_[r].at;
            break;
          }
        }
        size_t stop = v;
        while (stop < limit &&
               std::string_view(",)]}([{").find(text[stop]) == std::string_view::npos)
          ++stop;
        if (stop < limit && std::string_view("([{").find(text[stop]) != std::string_view::npos) {
          // `key=Call(`, `key=[...]`: nested
          i = stop;
          continue;
        }
        std::string path = argument_;
        for (const std::string& key : open)
          if (!key.empty()) path += "." + key;
        path += "." + pending_key;
        values_.try_emplace(std::move(path),
                            Value{std::string(Trim(text.substr(v, stop - v))), line_at(i)});
        pending_key.clear();
        i = stop;
      } else {
        i = end;
      }
    } else {
      ++i;
    }
  }
  argument_.clear();
  text_.clear();
  rows_.clear();
}

std::string NemoRunTableReader::SeqLengthMismatch(std::string_view name) const {
  auto data = values_.find(std::string_view("data.seq_length"));
  auto model = values_.find(std::string_view("model.config.seq_length"));
  if (data == values_.end() || model == values_.end() || !ParseNumber(data->second.text) ||
      ParseNumber(data->second.text) == ParseNumber(model->second.text))
    return "";
  return fmt::format("{}:{} model.config.seq_length {}, not {}:{} data.seq_length {}", name,
                     model->second.line, model->second.text, name, data->second.line,
                     data->second.text);
}

void NemoRunTableReader::Apply(ParsedLog& log, std::string_view name) const {
  constexpr std::string_view kSource = "NeMo-Run's argument table";
  // A pretraining or synthetic data module's samples are seq_length tokens; a fine-tuning one's
  // (FineTuningDataModule, SquadDataModule, ChatDataModule, ...) at most that, padded per batch.
  auto module = values_.find(std::string_view("data()"));
  const std::string_view kind =
      module == values_.end() ? std::string_view() : std::string_view(module->second.text);
  const bool fixed_length = kind == "PreTrainingDataModule" ||
                            kind.find("Mock") != std::string_view::npos ||
                            kind.find("Fake") != std::string_view::npos;
  for (const ConfigFactKey& k : kRunTableKeys) {
    auto it = values_.find(k.path);
    if (it == values_.end()) continue;
    if (std::string_view(k.fact) == "mpe" && !fixed_length) {
      log.notes.push_back(fmt::format(
          "mpe: {}:{} data.seq_length {} is {}'s longest sample, not every sample's length: not "
          "read (set mpe)",
          name, it->second.line, NoteText(it->second.text),
          kind.empty() ? std::string("the data module") : NoteText(kind)));
      continue;
    }
    if (std::optional<double> v = ParseNumber(it->second.text))
      SetConfigFact(log, name, k.fact, *v, it->second.line, kSource, k.path);
  }
  auto data = values_.find(std::string_view("data.seq_length"));
  auto model = values_.find(std::string_view("model.config.seq_length"));
  if (data != values_.end() && model != values_.end() &&
      ParseNumber(data->second.text) != ParseNumber(model->second.text)) {
    log.notes.push_back(fmt::format(
        "mpe: {}:{} data.seq_length {} is the training length; {}:{} model.config.seq_length {} "
        "is the model's maximum, not used",
        name, data->second.line, data->second.text, name, model->second.line, model->second.text));
  }
  auto precision = values_.find(std::string_view("trainer.plugins.precision"));
  if (precision == values_.end()) return;
  std::string_view p = precision->second.text;
  if (p.size() >= 2 && (p.front() == '\'' || p.front() == '"')) p = p.substr(1, p.size() - 2);
  std::string word;
  if (p.starts_with("bf16")) {
    word = "bf16";
  } else if (p == "16" || p == "16-mixed" || p.starts_with("fp16")) {
    word = "fp16";
  } else if (p == "32" || p == "32-true") {
    word = "fp32";
  }
  if (!word.empty())
    SetConfigPrecision(log, name, word, precision->second.line, kSource,
                       "trainer.plugins.precision");
}

}  // namespace bm::logparse
