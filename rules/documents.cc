#include "rules/documents.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/formats/json_text.h"
#include "rules/text/line_regex.h"

namespace bm::rules {
namespace {

using nlohmann::json;

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The line of a JSON Lines file that starts at `pos`, without its end ("\n", "\r\n" or a lone
// "\r": old Mac files, which Python's text mode reads as lines too; a raw CR cannot sit inside a
// JSON string, so a lone one always ends a line), and where the next one starts.
std::pair<std::string_view, size_t> LineAt(std::string_view contents, size_t pos) {
  size_t eol = contents.find_first_of("\r\n", pos);
  if (eol == std::string_view::npos) eol = contents.size();
  return {contents.substr(pos, eol - pos), eol + (contents.substr(eol, 2) == "\r\n" ? 2 : 1)};
}

// Calls f(line, line_number) for each line (LineAt's).
template <typename F>
Status ForEachLine(std::string_view contents, F&& f) {
  size_t line_no = 0;
  for (size_t pos = 0; pos < contents.size();) {
    const auto [line, next] = LineAt(contents, pos);
    BM_TRY(f(line, ++line_no));
    pos = next;
  }
  return Status::Ok();
}

// A JSON text of a data file (a line, or the whole file) parsed; an error names
// origin:line:column and the parser's reason, and is the user's (exit 2).
Result<json> ParseJson(std::string_view text, std::string_view origin, size_t first_line) {
  Result<json> r = formats::ParseJsonText(text, origin, static_cast<int>(first_line));
  if (!r.ok()) return Status(ErrorCode::kInvalidArgument, r.status().message());
  return r;
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

Result<std::string> StringField(const json& obj, std::string_view key, bool required,
                                std::string_view where) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (!required) return std::string();
    if (it != obj.end()) {
      return Errorf(ErrorCode::kInvalidArgument, "{}: \"{}\" is null, not a string", where, key);
    }
    return Errorf(ErrorCode::kInvalidArgument, "{}: no \"{}\" field", where, key);
  }
  if (!it->is_string()) {
    return Errorf(ErrorCode::kInvalidArgument, "{}: \"{}\" is not a string", where, key);
  }
  return it->get<std::string>();
}

Status AlpacaDocument(const json& obj, const PromptTemplates& t, std::string_view where,
                      std::vector<Document>* out) {
  if (!obj.is_object()) return Errorf(ErrorCode::kInvalidArgument, "{}: not an object", where);
  BM_ASSIGN_OR_RETURN(std::string instruction, StringField(obj, "instruction", true, where));
  BM_ASSIGN_OR_RETURN(std::string input, StringField(obj, "input", false, where));
  BM_ASSIGN_OR_RETURN(std::string output, StringField(obj, "output", true, where));
  const std::string prompt = RenderTemplate(input.empty() ? t.prompt : t.prompt_input,
                                            {{"instruction", instruction}, {"input", input}});
  out->push_back({{{prompt, false}, {output, true}}});
  return Status::Ok();
}

Status ConversationDocument(const json& obj, const PromptTemplates& t, std::string_view where,
                            std::vector<Document>* out) {
  if (!obj.is_object() || !obj.contains("conversations") || !obj["conversations"].is_array()) {
    return Errorf(ErrorCode::kInvalidArgument, "{}: no \"conversations\" list", where);
  }
  Document doc;
  BM_ASSIGN_OR_RETURN(std::string system, StringField(obj, "system", false, where));
  if (system.empty()) {
    BM_ASSIGN_OR_RETURN(system, StringField(obj, "instruction", false, where));
  }
  if (!system.empty())
    doc.segments.push_back({RenderTemplate(t.system, {{"system", system}}), false});
  for (const json& turn : obj["conversations"]) {
    BM_ASSIGN_OR_RETURN(std::string from, StringField(turn, "from", true, where));
    BM_ASSIGN_OR_RETURN(std::string value, StringField(turn, "value", true, where));
    if (from == "human" || from == "user") {
      doc.segments.push_back({RenderTemplate(t.human, {{"value", value}}), false});
    } else if (from == "gpt" || from == "assistant") {
      doc.segments.push_back({RenderTemplate(t.gpt, {{"value", value}}), true});
    } else {
      return Errorf(ErrorCode::kInvalidArgument, "{}: turn from \"{}\" (expected human or gpt)",
                    where, from);
    }
  }
  out->push_back(std::move(doc));
  return Status::Ok();
}

Status TextDocuments(std::string_view contents, std::string_view origin,
                     const std::string& document_start, std::vector<Document>* out) {
  if (document_start.empty()) {
    out->push_back({{{std::string(contents), true}}});
    return Status::Ok();
  }
  BM_ASSIGN_OR_RETURN(text::LineRegex start, text::LineRegex::Create(document_start));
  size_t doc_begin = 0, pos = 0;
  while (pos < contents.size()) {
    size_t eol = contents.find('\n', pos);
    eol = eol == std::string_view::npos ? contents.size() : eol + 1;
    std::string_view line = contents.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    if (pos > doc_begin && start.Search(line)) {
      out->push_back({{{std::string(contents.substr(doc_begin, pos - doc_begin)), true}}});
      doc_begin = pos;
    }
    pos = eol;
  }
  if (pos > doc_begin || contents.empty()) {
    out->push_back({{{std::string(contents.substr(doc_begin)), true}}});
  }
  (void)origin;
  return Status::Ok();
}

}  // namespace

std::string_view FormatName(Format format) {
  switch (format) {
    case Format::kText:
      return "text";
    case Format::kJsonl:
      return "jsonl";
    case Format::kAlpaca:
      return "alpaca";
    case Format::kConversations:
      return "conversations";
    case Format::kNpy:
      return "npy";
    case Format::kPaddle:
      return "paddle";
  }
  return "?";
}

Result<Format> ParseFormat(std::string_view name) {
  for (Format f : {Format::kText, Format::kJsonl, Format::kAlpaca, Format::kConversations,
                   Format::kNpy, Format::kPaddle}) {
    if (FormatName(f) == name) return f;
  }
  return Errorf(ErrorCode::kInvalidArgument,
                "unknown format '{}' (auto, text, jsonl, alpaca, conversations, npy, paddle)",
                name);
}

Format DetectFormat(const std::string& path, std::string_view first_line) {
  if (path.ends_with("_ids.npy")) return Format::kPaddle;
  if (path.ends_with(".npy")) return Format::kNpy;
  if (path.ends_with(".json")) return Format::kAlpaca;
  if (path.ends_with(".jsonl")) {
    if (first_line.find("\"conversations\"") != std::string_view::npos) {
      return Format::kConversations;
    }
    const bool alpaca = first_line.find("\"instruction\"") != std::string_view::npos &&
                        first_line.find("\"output\"") != std::string_view::npos;
    return alpaca ? Format::kAlpaca : Format::kJsonl;
  }
  return Format::kText;
}

std::string_view FirstNonBlankLine(std::string_view contents) {
  for (size_t pos = 0; pos < contents.size();) {
    const auto [line, next] = LineAt(contents, pos);
    if (!IsBlank(line)) return line;
    pos = next;
  }
  return {};
}

PromptTemplates DefaultPromptTemplates() {
  PromptTemplates t;
  t.prompt =
      "Below is an instruction that describes a task. Write a response that appropriately "
      "completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:\n";
  t.prompt_input =
      "Below is an instruction that describes a task, paired with an input that provides further "
      "context. Write a response that appropriately completes the request.\n\n### Instruction:\n"
      "{instruction}\n\n### Input:\n{input}\n\n### Response:\n";
  t.system = "{system}\n\n";
  t.human = "### Human: {value}\n### Assistant: ";
  t.gpt = "{value}\n";
  return t;
}

std::string RenderTemplate(std::string_view text,
                           const std::vector<std::pair<std::string, std::string>>& vars) {
  std::string out;
  out.reserve(text.size() + 64);
  for (size_t i = 0; i < text.size();) {
    bool replaced = false;
    if (text[i] == '{') {
      for (const auto& [name, value] : vars) {
        if (text.compare(i + 1, name.size(), name) == 0 && i + 1 + name.size() < text.size() &&
            text[i + 1 + name.size()] == '}') {
          out += value;
          i += name.size() + 2;
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

Status ParseDocuments(std::string_view contents, std::string_view origin, Format format,
                      const ReadOptions& options, std::vector<Document>* out) {
  switch (format) {
    case Format::kText:
      return TextDocuments(contents, origin, options.document_start, out);
    case Format::kAlpaca:
    case Format::kConversations: {
      // A UTF-8 byte order mark may open the file (RFC 8259 8.1: parsers may ignore it, as
      // Python's json.loads of bytes and the JSON parser do).
      std::string_view body = contents;
      if (body.starts_with(kUtf8Bom)) body.remove_prefix(kUtf8Bom.size());
      const size_t first = body.find_first_not_of(" \t\r\n");
      if (first != std::string_view::npos && body[first] == '[') {
        BM_ASSIGN_OR_RETURN(json list, ParseJson(contents, origin, 1));
        if (!list.is_array()) {
          return Errorf(ErrorCode::kInvalidArgument, "{}: not a JSON list", origin);
        }
        for (size_t i = 0; i < list.size(); ++i) {
          const std::string where = fmt::format("{}: item {}", origin, i);
          BM_TRY(format == Format::kAlpaca
                     ? AlpacaDocument(list[i], options.templates, where, out)
                     : ConversationDocument(list[i], options.templates, where, out));
        }
        return Status::Ok();
      }
      [[fallthrough]];  // one object per line
    }
    case Format::kJsonl:
      return ForEachLine(contents, [&](std::string_view line, size_t line_no) -> Status {
        if (IsBlank(line)) return Status::Ok();
        const std::string where = fmt::format("{}:{}", origin, line_no);
        BM_ASSIGN_OR_RETURN(json obj, ParseJson(line, origin, line_no));
        if (format == Format::kAlpaca) return AlpacaDocument(obj, options.templates, where, out);
        if (format == Format::kConversations) {
          return ConversationDocument(obj, options.templates, where, out);
        }
        if (!obj.is_object())
          return Errorf(ErrorCode::kInvalidArgument, "{}: not an object", where);
        BM_ASSIGN_OR_RETURN(std::string text, StringField(obj, options.text_field, true, where));
        out->push_back({{{std::move(text), true}}});
        return Status::Ok();
      });
    case Format::kNpy:
    case Format::kPaddle:
      break;
  }
  return Errorf(ErrorCode::kInternal, "{}: format {} holds token ids, not text", origin,
                FormatName(format));
}

Status ReadDocuments(const std::string& path, Format format, const ReadOptions& options,
                     std::vector<Document>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Errorf(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "cannot open {}: {}",
                  path, std::strerror(errno));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Errorf(ErrorCode::kIo, "cannot read {}", path);
  return ParseDocuments(buf.str(), path, format, options, out);
}

}  // namespace bm::rules
