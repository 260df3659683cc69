#include "rules/llava/llava_json.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/formats/json_text.h"
#include "base/real_filesystem.h"

namespace bm::rules::llava {
namespace {

using nlohmann::json;

// The sample's "id" as text ("" when it has none).
Result<std::string> IdOf(const json& s) {
  auto it = s.find("id");
  if (it == s.end()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return Errorf(ErrorCode::kInvalidArgument, "\"id\" is neither a string nor a number");
}

Result<Sample> ParseSample(const json& s) {
  if (!s.is_object()) return Errorf(ErrorCode::kInvalidArgument, "is not an object");
  Sample out;
  BM_ASSIGN_OR_RETURN(out.id, IdOf(s));
  if (auto it = s.find("image"); it != s.end() && !it->is_null()) {
    if (!it->is_string()) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "\"image\" is not a string (LLaVA-1.5's samples have one image path)");
    }
    out.image = it->get<std::string>();
    BM_TRY(CheckImagePath(*out.image));
  }
  auto conv = s.find("conversations");
  if (conv == s.end() || !conv->is_array()) {
    return Errorf(ErrorCode::kInvalidArgument, "has no \"conversations\" list");
  }
  if (conv->empty()) {
    // LLaVA's preprocess reads source[0] and fails (IndexError) on such a sample.
    return Errorf(ErrorCode::kInvalidArgument, "\"conversations\" is empty");
  }
  for (size_t j = 0; j < conv->size(); ++j) {
    const json& t = (*conv)[j];
    if (!t.is_object())
      return Errorf(ErrorCode::kInvalidArgument, "conversations[{}] is not an object", j);
    auto from = t.find("from");
    auto value = t.find("value");
    if (from == t.end() || !from->is_string()) {
      return Errorf(ErrorCode::kInvalidArgument, "conversations[{}].from is not a string", j);
    }
    if (value == t.end() || !value->is_string()) {
      return Errorf(ErrorCode::kInvalidArgument, "conversations[{}].value is not a string", j);
    }
    out.conversations.push_back({from->get<std::string>(), value->get<std::string>()});
  }
  return out;
}

}  // namespace

std::string SampleWhere(const std::string& file, size_t index, const std::string& id) {
  return id.empty() ? fmt::format("{}: sample {}", file, index)
                    : fmt::format("{}: sample {} (id \"{}\")", file, index, id);
}

Status CheckImagePath(const std::string& path) {
  if (path.empty()) return Errorf(ErrorCode::kInvalidArgument, "\"image\" is empty");
  const std::filesystem::path p(path);
  if (p.is_absolute()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "\"image\" {} is absolute; it must be relative to the image folder", path);
  }
  for (const auto& part : p) {
    if (part == "..") {
      return Errorf(ErrorCode::kInvalidArgument, "\"image\" {} leaves the image folder (..)", path);
    }
  }
  return Status::Ok();
}

Result<std::vector<Sample>> ParseLlavaJson(std::string_view contents, const std::string& origin) {
  Result<json> parsed = formats::ParseJsonText(contents, origin);
  // The user's file, as every data file's JSON is (rules/documents.cc): exit 2, not 1.
  if (!parsed.ok()) return Status(ErrorCode::kInvalidArgument, parsed.status().message());
  json list = std::move(*parsed);
  if (!list.is_array()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: not a JSON list of samples ({{\"id\", \"image\", \"conversations\"}})",
                  origin);
  }
  std::vector<Sample> samples;
  samples.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    Result<Sample> s = ParseSample(list[i]);
    if (!s.ok()) {
      std::string id;
      if (list[i].is_object()) {
        Result<std::string> named = IdOf(list[i]);
        if (named.ok()) id = std::move(*named);
      }
      return Errorf(s.status().code(), "{}: {}", SampleWhere(origin, i, id), s.status().message());
    }
    samples.push_back(std::move(*s));
    list[i] = nullptr;  // frees the parsed sample as we go
  }
  return samples;
}

Result<std::vector<Sample>> ReadLlavaJson(const std::string& path) {
  BM_ASSIGN_OR_RETURN(std::string contents, DiskFilesystem().ReadFile(path));
  return ParseLlavaJson(contents, path);
}

}  // namespace bm::rules::llava
