#include "rules/text/hf_tokenizer_json.h"

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

namespace bm::text {
namespace {

using nlohmann::json;

// Errors name the file and the JSON path of the part they are about.
class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  Status Unsupported(std::string_view path, std::string_view what) const {
    return Errorf(ErrorCode::kInvalidArgument, "{}: {}: {} is not implemented", origin_, path,
                  what);
  }
  Status Corrupt(std::string_view path, std::string_view what) const {
    return Errorf(ErrorCode::kCorrupt, "{}: {}: {}", origin_, path, what);
  }

  // The "type" of an object at path.
  Result<std::string> Type(const json& j, std::string_view path) const {
    if (!j.is_object()) return Corrupt(path, "not an object");
    auto it = j.find("type");
    if (it == j.end() || !it->is_string()) return Corrupt(path, "no \"type\"");
    return it->get<std::string>();
  }
  // A boolean member, `fallback` when absent or null.
  Result<bool> Bool(const json& j, std::string_view path, const char* key, bool fallback) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return Corrupt(fmt::format("{}.{}", path, key), "not a boolean");
    return it->get<bool>();
  }
  // A string member, "" when absent or null.
  Result<std::string> String(const json& j, std::string_view path, const char* key) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::string();
    if (!it->is_string()) return Corrupt(fmt::format("{}.{}", path, key), "not a string");
    return it->get<std::string>();
  }
  Result<int32_t> Id(const json& j, std::string_view path) const {
    if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() > (1 << 30)) {
      return Corrupt(path, "not a token id");
    }
    return static_cast<int32_t>(j.get<int64_t>());
  }

 private:
  std::string origin_;
};

// Byte-level alphabet: code point → byte, -1 for characters outside it.
const std::array<int16_t, 324>& ByteOfChar() {
  static const std::array<int16_t, 324> table = [] {
    std::array<int16_t, 324> t;
    t.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      t[printable ? b : 256 + extra++] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return table;
}

// Decodes a token written in the byte-level alphabet; false when a character
// is outside it.
bool DecodeByteLevel(std::string_view text, std::string* out) {
  const auto& table = ByteOfChar();
  out->clear();
  for (size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<uint8_t>(text[i]);
    uint32_t cp;
    if (b0 < 0x80) {
      cp = b0;
      i += 1;
    } else if ((b0 & 0xe0) == 0xc0 && i + 1 < text.size()) {
      cp = ((b0 & 0x1fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3fu);
      i += 2;
    } else {
      return false;  // the alphabet is below U+0144: one or two bytes
    }
    if (cp >= table.size() || table[cp] < 0) return false;
    out->push_back(static_cast<char>(table[cp]));
  }
  return true;
}

Status ReadNormalizer(const Reader& r, const json& j, HfTokenizerSpec* spec) {
  if (j.is_null()) return Status::Ok();
  BM_ASSIGN_OR_RETURN(std::string type, r.Type(j, "normalizer"));
  if (type == "NFC") {
    spec->nfc = true;
    return Status::Ok();
  }
  if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
    for (size_t i = 0; i < j["normalizers"].size(); ++i) {
      const std::string path = fmt::format("normalizer.normalizers[{}]", i);
      BM_ASSIGN_OR_RETURN(std::string t, r.Type(j["normalizers"][i], path));
      if (t != "NFC") return r.Unsupported(path + ".type", fmt::format("normalizer {}", t));
      spec->nfc = true;
    }
    return Status::Ok();
  }
  return r.Unsupported("normalizer.type", fmt::format("normalizer {} (null or NFC only)", type));
}

Status ReadPreTokenizerStep(const Reader& r, const json& j, const std::string& path,
                            HfTokenizerSpec* spec) {
  BM_ASSIGN_OR_RETURN(std::string type, r.Type(j, path));
  HfPreTokenizerStep step;
  if (type == "ByteLevel") {
    step.kind = HfPreTokenizerStep::Kind::kByteLevel;
    BM_ASSIGN_OR_RETURN(step.add_prefix_space, r.Bool(j, path, "add_prefix_space", true));
    BM_ASSIGN_OR_RETURN(step.use_regex, r.Bool(j, path, "use_regex", true));
  } else if (type == "Split") {
    for (const auto& s : spec->pre_tokenizer) {
      if (s.kind == HfPreTokenizerStep::Kind::kByteLevel) {
        return r.Unsupported(path, "a Split after ByteLevel (it would see byte-level characters)");
      }
    }
    step.kind = HfPreTokenizerStep::Kind::kSplit;
    const auto pattern = j.find("pattern");
    if (pattern == j.end() || !pattern->is_object() || !pattern->contains("Regex") ||
        !(*pattern)["Regex"].is_string()) {
      return r.Unsupported(path + ".pattern", "a Split pattern other than {\"Regex\": ...}");
    }
    step.pattern = (*pattern)["Regex"].get<std::string>();
    BM_ASSIGN_OR_RETURN(std::string behavior, r.String(j, path, "behavior"));
    if (behavior != "Isolated") {
      return r.Unsupported(path + ".behavior", fmt::format("'{}' (Isolated only)", behavior));
    }
    BM_ASSIGN_OR_RETURN(bool invert, r.Bool(j, path, "invert", false));
    if (invert) return r.Unsupported(path + ".invert", "invert = true");
  } else {
    return r.Unsupported(path + ".type",
                         fmt::format("pre-tokenizer {} (ByteLevel and Split only)", type));
  }
  spec->pre_tokenizer.push_back(std::move(step));
  return Status::Ok();
}

Status ReadPreTokenizer(const Reader& r, const json& j, HfTokenizerSpec* spec) {
  if (j.is_null()) return r.Unsupported("pre_tokenizer", "null (a ByteLevel step is required)");
  BM_ASSIGN_OR_RETURN(std::string type, r.Type(j, "pre_tokenizer"));
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
      return r.Corrupt("pre_tokenizer.pretokenizers", "not a list");
    }
    for (size_t i = 0; i < j["pretokenizers"].size(); ++i) {
      BM_TRY(ReadPreTokenizerStep(r, j["pretokenizers"][i],
                                  fmt::format("pre_tokenizer.pretokenizers[{}]", i), spec));
    }
  } else {
    BM_TRY(ReadPreTokenizerStep(r, j, "pre_tokenizer", spec));
  }
  if (spec->pre_tokenizer.empty() ||
      spec->pre_tokenizer.back().kind != HfPreTokenizerStep::Kind::kByteLevel) {
    return r.Unsupported("pre_tokenizer", "a pre-tokenizer without a ByteLevel step");
  }
  return Status::Ok();
}

Status ReadAddedTokens(const Reader& r, const json& j, HfTokenizerSpec* spec) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_array()) return r.Corrupt("added_tokens", "not a list");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string path = fmt::format("added_tokens[{}]", i);
    if (!j[i].is_object() || !j[i].contains("id")) return r.Corrupt(path, "no id");
    HfAddedToken t;
    BM_ASSIGN_OR_RETURN(t.id, r.Id(j[i]["id"], path + ".id"));
    BM_ASSIGN_OR_RETURN(t.content, r.String(j[i], path, "content"));
    if (t.content.empty()) return r.Corrupt(path + ".content", "empty");
    BM_ASSIGN_OR_RETURN(t.special, r.Bool(j[i], path, "special", false));
    BM_ASSIGN_OR_RETURN(t.lstrip, r.Bool(j[i], path, "lstrip", false));
    BM_ASSIGN_OR_RETURN(t.rstrip, r.Bool(j[i], path, "rstrip", false));
    BM_ASSIGN_OR_RETURN(t.normalized, r.Bool(j[i], path, "normalized", !t.special));
    BM_ASSIGN_OR_RETURN(bool single_word, r.Bool(j[i], path, "single_word", false));
    if (single_word) return r.Unsupported(path + ".single_word", "single_word = true");
    spec->added_tokens.push_back(std::move(t));
  }
  return Status::Ok();
}

// The id of a template's special token: {"SpecialToken": {"id": NAME}} looked
// up in special_tokens[NAME].ids (one id).
std::optional<int32_t> TemplateSpecialId(const json& piece, const json& special_tokens) {
  if (!piece.is_object() || !piece.contains("SpecialToken")) return std::nullopt;
  const json& st = piece["SpecialToken"];
  if (!st.is_object() || !st.contains("id") || !st["id"].is_string()) return std::nullopt;
  auto it = special_tokens.find(st["id"].get<std::string>());
  if (it == special_tokens.end() || !it->contains("ids") || !(*it)["ids"].is_array() ||
      (*it)["ids"].size() != 1 || !(*it)["ids"][0].is_number_integer()) {
    return std::nullopt;
  }
  return (*it)["ids"][0].get<int32_t>();
}

Status ReadPostProcessor(const Reader& r, const json& j, const std::string& path,
                         HfTokenizerSpec* spec) {
  if (j.is_null()) return Status::Ok();
  BM_ASSIGN_OR_RETURN(std::string type, r.Type(j, path));
  if (type == "ByteLevel") return Status::Ok();
  if (type == "Sequence" && j.contains("processors") && j["processors"].is_array()) {
    for (size_t i = 0; i < j["processors"].size(); ++i) {
      BM_TRY(ReadPostProcessor(r, j["processors"][i], fmt::format("{}.processors[{}]", path, i),
                               spec));
    }
    return Status::Ok();
  }
  if (type == "RobertaProcessing") {
    // cls: [token, id] starts, sep: [token, id] ends a single sequence.
    for (const char* key : {"cls", "sep"}) {
      const auto it = j.find(key);
      if (it == j.end() || !it->is_array() || it->size() != 2) {
        return r.Corrupt(fmt::format("{}.{}", path, key), "not a [token, id] pair");
      }
      BM_ASSIGN_OR_RETURN(int32_t id, r.Id((*it)[1], fmt::format("{}.{}[1]", path, key)));
      (std::string_view(key) == "cls" ? spec->template_bos : spec->template_eos) = id;
    }
    return Status::Ok();
  }
  if (type == "TemplateProcessing") {
    const auto single = j.find("single");
    const auto specials = j.find("special_tokens");
    if (single == j.end() || !single->is_array() || specials == j.end()) {
      return r.Corrupt(path, "no single template or special_tokens");
    }
    if (!single->empty()) {
      spec->template_bos = TemplateSpecialId(single->front(), *specials);
      if (single->size() > 1) spec->template_eos = TemplateSpecialId(single->back(), *specials);
    }
    return Status::Ok();
  }
  return r.Unsupported(path + ".type", fmt::format("post-processor {}", type));
}

Status ReadModel(const Reader& r, const json& j, HfTokenizerSpec* spec) {
  if (!j.is_object()) return r.Corrupt("model", "not an object");
  BM_ASSIGN_OR_RETURN(std::string type, r.String(j, "model", "type"));
  if (!type.empty() && type != "BPE") {
    return r.Unsupported("model.type", fmt::format("{} (byte-level BPE only)", type));
  }
  const auto dropout = j.find("dropout");
  if (dropout != j.end() && !dropout->is_null()) {
    return r.Unsupported("model.dropout", "BPE dropout (ids would be random)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    BM_ASSIGN_OR_RETURN(std::string affix, r.String(j, "model", key));
    if (!affix.empty()) return r.Unsupported(fmt::format("model.{}", key), "a non-empty affix");
  }
  BM_ASSIGN_OR_RETURN(spec->ignore_merges, r.Bool(j, "model", "ignore_merges", false));

  const auto vocab = j.find("vocab");
  if (vocab == j.end() || !vocab->is_object()) return r.Corrupt("model.vocab", "not an object");
  size_t size = 0;
  for (const auto& [text, id_json] : vocab->items()) {
    BM_ASSIGN_OR_RETURN(int32_t id, r.Id(id_json, fmt::format("model.vocab[\"{}\"]", text)));
    size = std::max<size_t>(size, id + 1);
  }
  // Added tokens get their ids as the library gives them when it loads the
  // file (AddedVocabulary::add_tokens; the "id" written in the file is only
  // checked, with a warning): an earlier added token's id for the same
  // content, else the model's id for the content, else the next free id after
  // the model's vocabulary and the added tokens so far.
  std::unordered_map<std::string, int32_t> added;
  const auto model_size = static_cast<int32_t>(vocab->size());
  std::optional<int32_t> max_added;
  for (HfAddedToken& t : spec->added_tokens) {
    if (auto a = added.find(t.content); a != added.end()) {
      t.id = a->second;
    } else if (auto v = vocab->find(t.content); v != vocab->end()) {
      t.id = v->get<int32_t>();
    } else {
      t.id = !max_added || *max_added < model_size ? model_size : *max_added + 1;
    }
    added[t.content] = t.id;
    max_added = std::max(max_added.value_or(t.id), t.id);
    size = std::max<size_t>(size, t.id + 1);
  }
  spec->tokens.assign(size, "");
  std::vector<bool> used(size, false);
  std::string bytes;
  for (const auto& [text, id_json] : vocab->items()) {
    const auto id = id_json.get<int32_t>();
    if (used[id]) return r.Corrupt(fmt::format("model.vocab[\"{}\"]", text), "id repeated");
    used[id] = true;
    if (!DecodeByteLevel(text, &bytes)) {
      auto a = added.find(text);
      if (a != added.end() && a->second == id) continue;  // an added token's own entry
      return r.Unsupported(fmt::format("model.vocab[\"{}\"]", text),
                           "a token outside the byte-level alphabet");
    }
    if (bytes.empty()) return r.Corrupt(fmt::format("model.vocab[\"{}\"]", text), "empty token");
    spec->tokens[id] = bytes;
  }
  for (int b = 0; b < 256; ++b) {
    if (!vocab->contains(ByteLevelChar(static_cast<uint8_t>(b)))) {
      return r.Corrupt("model.vocab", fmt::format("byte 0x{:02x} ('{}') has no token", b,
                                                  ByteLevelChar(static_cast<uint8_t>(b))));
    }
  }

  const auto merges = j.find("merges");
  if (merges == j.end() || !merges->is_array()) return r.Corrupt("model.merges", "not a list");
  spec->merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    const std::string path = fmt::format("model.merges[{}]", i);
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return r.Corrupt(path, "not \"left right\"");
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return r.Corrupt(path, "neither \"left right\" nor [left, right]");
    }
    const auto l = vocab->find(left), rr = vocab->find(right), merged = vocab->find(left + right);
    if (l == vocab->end() || rr == vocab->end()) {
      return r.Corrupt(path, "merges a token that is not in model.vocab");
    }
    if (merged == vocab->end()) return r.Corrupt(path, "makes a token that is not in model.vocab");
    spec->merges.push_back({l->get<int32_t>(), rr->get<int32_t>()});
  }
  return Status::Ok();
}

}  // namespace

const std::string& ByteLevelChar(uint8_t byte) {
  static const std::array<std::string, 256> chars = [] {
    std::array<std::string, 256> c;
    const auto& table = ByteOfChar();
    for (uint32_t cp = 0; cp < table.size(); ++cp) {
      if (table[cp] < 0) continue;
      std::string& s = c[static_cast<size_t>(table[cp])];
      if (cp < 0x80) {
        s = std::string(1, static_cast<char>(cp));
      } else {
        s = {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
      }
    }
    return c;
  }();
  return chars[byte];
}

Result<HfTokenizerSpec> ParseHfTokenizerJson(std::string_view contents, std::string_view origin) {
  const Reader r(origin);
  const json j = json::parse(contents, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Errorf(ErrorCode::kCorrupt, "{}: not a JSON object", origin);
  }
  if (!j.contains("model")) return r.Corrupt("model", "missing");
  HfTokenizerSpec spec;
  BM_TRY(ReadAddedTokens(r, j.value("added_tokens", json()), &spec));
  BM_TRY(ReadNormalizer(r, j.value("normalizer", json()), &spec));
  BM_TRY(ReadPreTokenizer(r, j.value("pre_tokenizer", json()), &spec));
  BM_TRY(ReadModel(r, j["model"], &spec));
  BM_TRY(ReadPostProcessor(r, j.value("post_processor", json()), "post_processor", &spec));
  const json decoder = j.value("decoder", json());
  if (decoder.is_null()) return r.Unsupported("decoder", "null (ByteLevel only)");
  BM_ASSIGN_OR_RETURN(std::string decoder_type, r.Type(decoder, "decoder"));
  if (decoder_type != "ByteLevel") {
    return r.Unsupported("decoder.type", fmt::format("decoder {} (ByteLevel only)", decoder_type));
  }
  return spec;
}

}  // namespace bm::text
