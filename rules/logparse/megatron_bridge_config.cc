#include "rules/logparse/megatron_bridge_config.h"

#include <fmt/format.h>

#include <optional>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kBridgeSummaryTitle =
    "Configuration Summary (Non-Default Values vs Megatron Core)";
constexpr std::string_view kBridgeTargetKey = "_target_: ";

// In order of preference for one fact.
constexpr ConfigFactKey kBridgeFactKeys[] = {
    {"train.global_batch_size", "gbs"},
    {"train.micro_batch_size", "lbs"},
    {"dataset.sequence_length", "mpe"},
    {"dataset.seq_length", "mpe"},
    {"model.tensor_model_parallel_size", "tp"},
    {"model.pipeline_model_parallel_size", "pp"},
    {"model.num_layers", "layers"},
    {"model.hidden_size", "hidden"},
    {"model.num_attention_heads", "heads"},
};

bool IsBridgeKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// "key: value" or "key:" -> the key and the value (trimmed, "" for a section); nullopt when the
// text is not a plain key line.
std::optional<std::pair<std::string_view, std::string_view>> BridgeKeyLine(std::string_view s) {
  size_t colon = s.find(':');
  if (colon == 0 || colon == std::string_view::npos) return std::nullopt;
  for (size_t i = 0; i < colon; ++i)
    if (!IsBridgeKeyChar(s[i])) return std::nullopt;
  if (colon + 1 < s.size() && s[colon + 1] != ' ') return std::nullopt;
  return std::pair{s.substr(0, colon), Trim(s.substr(colon + 1))};
}

// YAML's and Python's spellings of a boolean; nullopt for anything else.
std::optional<bool> BridgeBool(std::string_view s) {
  if (s == "true" || s == "True") return true;
  if (s == "false" || s == "False") return false;
  return std::nullopt;
}

bool IsBridgeRuleOf(std::string_view s, char c) {
  return !s.empty() && s.find_first_not_of(c) == std::string_view::npos;
}

}  // namespace

void BridgeConfigReader::Record(const std::string& path, std::string_view text, int64_t no) {
  // MCore's ModelConfig nests the transformer's fields (`model.transformer.num_layers`).
  constexpr std::string_view kNested = "model.transformer.";
  std::string key = path.starts_with(kNested) ? "model." + path.substr(kNested.size()) : path;
  values_.try_emplace(std::move(key), Value{std::string(text), no});
}

const BridgeConfigReader::Value* BridgeConfigReader::Find(std::string_view path) const {
  auto it = values_.find(path);
  return it == values_.end() ? nullptr : &it->second;
}

bool BridgeConfigReader::Read(std::string_view line, int64_t no) {
  if (shape_ == Shape::kNone) {
    if (size_t at = line.find(kBridgeSummaryTitle); at != std::string_view::npos) {
      shape_ = Shape::kSummary;
      prefix_ = std::string(line.substr(0, at));
      section_.clear();
      rules_ = 0;
      return true;
    }
    size_t at = line.find(kBridgeTargetKey);
    if (at == std::string_view::npos ||
        !Trim(line.substr(at + kBridgeTargetKey.size())).ends_with("ConfigContainer"))
      return false;
    shape_ = Shape::kYaml;
    prefix_ = std::string(line.substr(0, at));
    at_.clear();
    last_indent_ = 0;
    return true;
  }
  // Another rank's or process's line amid the print (a launcher's other prefix): not ours.
  if (!line.starts_with(prefix_)) return false;
  std::string_view content = line.substr(prefix_.size());
  return shape_ == Shape::kYaml ? ReadYaml(content, no) : ReadSummary(content, no);
}

bool BridgeConfigReader::ReadYaml(std::string_view content, int64_t no) {
  const size_t indent = content.find_first_not_of(' ');
  if (indent == std::string_view::npos) {  // a blank line: print()'s after the dump
    shape_ = Shape::kNone;
    return false;
  }
  std::string_view body = content.substr(indent);
  if (indent == 0 && !BridgeKeyLine(body)) {  // `----------`, `Training ...`
    shape_ = Shape::kNone;
    return false;
  }
  if (body.starts_with('-')) return true;  // a list item (`- core_attn`, `- - 0`)
  auto key_line = BridgeKeyLine(body);
  if (!key_line) {
    // A wrapped long scalar continues deeper than its key; anything else (an iteration line
    // where the print lost its ending) is not the print's.
    if (indent > last_indent_ && !IsMegatronIterationLine(content)) return true;
    shape_ = Shape::kNone;
    return false;
  }
  last_indent_ = indent;
  while (!at_.empty() && at_.back().first >= indent) at_.pop_back();
  std::string path;
  for (const auto& open : at_) path += open.second + ".";
  path += key_line->first;
  if (key_line->second.empty()) {
    at_.emplace_back(indent, std::string(key_line->first));
  } else {
    Record(path, key_line->second, no);
  }
  return true;
}

bool BridgeConfigReader::ReadSummary(std::string_view content, int64_t no) {
  std::string_view body = Trim(content);
  if (body.empty() || IsBridgeRuleOf(body, '-') || body == "Other Configuration Values:")
    return true;
  if (IsBridgeRuleOf(body, '=')) {
    // The rule under the title, then the closing one.
    if (++rules_ == 2) shape_ = Shape::kNone;
    return true;
  }
  if (body.starts_with('[')) {
    size_t close = body.find(']');
    std::string_view rest = close == std::string_view::npos ? "" : body.substr(close + 1);
    if (rest == ":" || rest.starts_with(" Non-default values")) {
      section_ = std::string(body.substr(1, close - 1));
      return true;
    }
  } else if (content.starts_with("  ") && !section_.empty()) {
    if (auto key_line = BridgeKeyLine(body)) {
      std::string_view value = key_line->second;
      if (size_t d = value.find("  (Mcore default: "); d != std::string_view::npos)
        value = Trim(value.substr(0, d));
      Record(section_ + "." + std::string(key_line->first), value, no);
      return true;
    }
  }
  shape_ = Shape::kNone;  // not the summary's: it ended without its closing rule
  return false;
}

std::string BridgeConfigReader::SeqLengthMismatch(std::string_view name) const {
  const Value* model = Find("model.seq_length");
  if (model == nullptr) return "";
  for (std::string_view key : {"dataset.sequence_length", "dataset.seq_length"}) {
    const Value* data = Find(key);
    if (data == nullptr || !ParseNumber(data->text)) continue;
    if (ParseNumber(model->text) == ParseNumber(data->text)) return "";
    return fmt::format("{}:{} model.seq_length {}, not {}:{} {} {}", name, model->line, model->text,
                       name, data->line, key, data->text);
  }
  return "";
}

void BridgeConfigReader::Apply(ParsedLog& log, std::string_view name) const {
  std::map<std::string, std::pair<std::string_view, const Value*>> found;  // fact -> key, value
  for (const ConfigFactKey& k : kBridgeFactKeys) {
    const Value* v = Find(k.path);
    if (v != nullptr && ParseNumber(v->text) && !found.contains(k.fact))
      found[k.fact] = {k.path, v};
  }
  for (const auto& [fact, key_value] : found) {
    const auto& [key, v] = key_value;
    SetConfigFact(log, name, fact.c_str(), *ParseNumber(v->text), v->line,
                  "Megatron-Bridge's config print", key);
  }
  if (const Value* model_seq = Find("model.seq_length"); model_seq && found.contains("mpe")) {
    const auto& [key, v] = found.at("mpe");
    if (ParseNumber(model_seq->text) != ParseNumber(v->text)) {
      log.notes.push_back(fmt::format(
          "mpe: {}:{} {} {} is the training length; {}:{} model.seq_length {} is the model's "
          "maximum, not used",
          name, v->line, key, v->text, name, model_seq->line, model_seq->text));
    }
  }
  if (const Value* cp = Find("model.context_parallel_size")) {
    if (std::optional<double> n = ParseNumber(cp->text); n && *n > 1) {
      log.notes.push_back(fmt::format(
          "dp: {}:{} context_parallel_size {}: the data-parallel size is devices / (tp x pp x "
          "cp), which the log does not state; set layout for per-replica figures",
          name, cp->line, cp->text));
    }
  }
  // The precision: mixed_precision's recipe name or flags, else the model's flags.
  std::string precision;
  int64_t line = 0;
  std::string said;  // the key that said it
  if (const Value* recipe = Find("mixed_precision")) {
    std::string_view r = recipe->text;
    if (r.find("bf16") != std::string_view::npos)
      precision = "bf16";
    else if (r.find("fp16") != std::string_view::npos)
      precision = "fp16";
    line = recipe->line, said = "mixed_precision";
  }
  for (std::string_view section : {"mixed_precision", "model"}) {
    if (!precision.empty()) break;
    const Value* bf16 = Find(std::string(section) + ".bf16");
    const Value* fp16 = Find(std::string(section) + ".fp16");
    std::optional<bool> b = bf16 ? BridgeBool(bf16->text) : std::nullopt;
    std::optional<bool> f = fp16 ? BridgeBool(fp16->text) : std::nullopt;
    if (b.value_or(false)) {
      precision = "bf16", line = bf16->line, said = std::string(section) + ".bf16";
    } else if (f.value_or(false)) {
      precision = "fp16", line = fp16->line, said = std::string(section) + ".fp16";
    } else if (section == "model" && b && f) {
      // Both stated false: fp32 (a YAML print states every field; the summary only non-defaults).
      precision = "fp32", line = bf16->line, said = "model.bf16, model.fp16";
    }
  }
  if (!precision.empty())
    SetConfigPrecision(log, name, precision, line, "Megatron-Bridge's config print", said);
}

}  // namespace bm::logparse
