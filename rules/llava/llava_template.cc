#include "rules/llava/llava_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace bm::rules::llava {
namespace {

constexpr std::string_view kHuman = "human", kGpt = "gpt";
constexpr std::string_view kUser = "USER", kAssistant = "ASSISTANT";
constexpr std::string_view kSep = " ", kSep2 = "</s>";
constexpr std::string_view kPlainSep = "\n";

// Python's str.isspace() for one code point.
bool IsPySpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
         c == 0x205f || c == 0x3000;
}

// The code point starting at s[i] and its length in bytes (an invalid byte: itself, 1).
char32_t DecodeAt(std::string_view s, size_t i, size_t* len) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *len = 1;
    return 0xfffd;
  }
  char32_t c = n == 1 ? b : b & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  *len = n;
  return c;
}

// Python's str.strip() with no arguments.
std::string PyStrip(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    size_t n;
    if (!IsPySpace(DecodeAt(s, begin, &n))) break;
    begin += n;
  }
  size_t end = s.size();
  while (end > begin) {
    // Step back to the start of the last code point.
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(s[start]) & 0xc0) == 0x80) --start;
    size_t n;
    const char32_t c = DecodeAt(s, start, &n);
    if (start + n != end || !IsPySpace(c)) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

// Python's str.split(sep) (sep non-empty): empty pieces kept.
std::vector<std::string_view> PySplit(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  for (;;) {
    const size_t at = s.find(sep, pos);
    if (at == std::string_view::npos) {
      out.push_back(s.substr(pos));
      return out;
    }
    out.push_back(s.substr(pos, at - pos));
    pos = at + sep.size();
  }
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  size_t pos = 0;
  while ((pos = s->find(from, pos)) != std::string::npos) {
    s->replace(pos, from.size(), to);
    pos += to.size();
  }
}

// target[start:stop] = IGNORE with Python's slice bounds.
void MaskSlice(std::vector<uint8_t>* mask, int64_t start, int64_t stop) {
  const auto n = static_cast<int64_t>(mask->size());
  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
  start = clamp(start);
  stop = clamp(stop);
  for (int64_t i = start; i < stop; ++i) (*mask)[static_cast<size_t>(i)] = 0;
}

}  // namespace

Result<Template> ParseTemplate(std::string_view name) {
  if (name == "plain") return Template::kPlain;
  if (name == "vicuna_v1" || name == "v1") return Template::kVicunaV1;
  return Errorf(ErrorCode::kInvalidArgument,
                "unknown LLaVA template \"{}\" (plain: pretraining, vicuna_v1: finetuning)", name);
}

std::string_view TemplateName(Template t) { return t == Template::kPlain ? "plain" : "vicuna_v1"; }

std::vector<int32_t> LlamaTokenize(const text::SentencePieceTokenizer& sp, std::string_view text,
                                   bool legacy) {
  std::vector<int32_t> ids;
  if (sp.bos_id()) ids.push_back(*sp.bos_id());
  // The special tokens' texts, matched in the text as added tokens.
  std::vector<std::pair<std::string, int32_t>> specials;
  for (const std::optional<int32_t> id :
       {std::optional<int32_t>(sp.unk_id()), sp.bos_id(), sp.eos_id()}) {
    if (id && !sp.Piece(*id).empty()) specials.emplace_back(sp.Piece(*id), *id);
  }
  size_t pos = 0;
  for (;;) {
    size_t at = std::string_view::npos, len = 0;
    int32_t special = -1;
    for (const auto& [piece, id] : specials) {
      const size_t f = text.find(piece, pos);
      if (f < at || (f == at && f != std::string_view::npos && piece.size() > len)) {
        at = f;
        len = piece.size();
        special = id;
      }
    }
    const std::string_view segment =
        text.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos);
    if (!segment.empty()) {
      if (legacy || pos == 0) {
        sp.Encode(segment, &ids);
      } else {
        sp.EncodeWithoutDummyPrefix(segment, &ids);
      }
    }
    if (at == std::string_view::npos) break;
    ids.push_back(special);
    pos = at + len;
  }
  return ids;
}

std::vector<int32_t> TokenizeWithImages(const text::SentencePieceTokenizer& sp,
                                        std::string_view prompt, bool legacy,
                                        int32_t image_token_id) {
  std::vector<int32_t> out;
  const std::vector<std::string_view> chunks = PySplit(prompt, kImageTag);
  size_t offset = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const std::vector<int32_t> ids = LlamaTokenize(sp, chunks[k], legacy);
    if (k == 0 && !ids.empty() && sp.bos_id() && ids[0] == *sp.bos_id()) {
      offset = 1;
      out.push_back(ids[0]);
    }
    if (k > 0) out.push_back(image_token_id);
    if (ids.size() > offset)
      out.insert(out.end(), ids.begin() + static_cast<ptrdiff_t>(offset), ids.end());
  }
  return out;
}

void MoveImageTagToFront(std::vector<Turn>* turns) {
  for (Turn& t : *turns) {
    if (t.value.find(kImageTag) == std::string::npos) continue;
    ReplaceAll(&t.value, kImageTag, "");
    t.value = PyStrip(std::string(kImageTag) + "\n" + PyStrip(t.value));
  }
}

Result<std::string> VicunaPrompt(const std::vector<Turn>& turns) {
  auto role = [](const Turn& t, size_t j) -> Result<std::string_view> {
    if (t.from == kHuman) return kUser;
    if (t.from == kGpt) return kAssistant;
    return Errorf(ErrorCode::kInvalidArgument,
                  "conversations[{}].from is \"{}\"; LLaVA's vicuna_v1 knows \"human\" and \"gpt\"",
                  j, t.from);
  };
  size_t first = 0;
  if (!turns.empty()) {
    BM_ASSIGN_OR_RETURN(std::string_view r, role(turns[0], 0));
    if (r != kUser) first = 1;  // LLaVA skips a first turn that is not the human's
  }
  std::string prompt = std::string(kVicunaSystem) + std::string(kSep);
  for (size_t j = first; j < turns.size(); ++j) {
    BM_ASSIGN_OR_RETURN(std::string_view r, role(turns[j], j));
    const bool human_turn = (j - first) % 2 == 0;
    if (r != (human_turn ? kUser : kAssistant)) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "conversations[{}] is from \"{}\" where LLaVA expects \"{}\" (turns alternate "
                    "human, gpt, ...)",
                    j, turns[j].from, human_turn ? kHuman : kGpt);
    }
    if (turns[j].value.empty()) {
      prompt += fmt::format("{}:", r);
    } else {
      prompt += fmt::format("{}: {}{}", r, turns[j].value, human_turn ? kSep : kSep2);
    }
  }
  return prompt;
}

namespace {

Result<Tokenized> Plain(const text::SentencePieceTokenizer& sp, const std::vector<Turn>& turns,
                        bool has_image, const TemplateOptions& o) {
  if (turns.size() != 2) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "the plain template needs exactly 2 turns (image, caption); this sample has {}",
                  turns.size());
  }
  if (!has_image || turns[0].value.find(kImageTag) == std::string::npos) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "the plain template needs an image and \"<image>\" in the first turn");
  }
  Tokenized t;
  const std::string text = std::string(kImageTag) + turns[1].value + std::string(kPlainSep);
  t.ids = TokenizeWithImages(sp, text, o.legacy, o.image_token_id);
  t.mask.assign(t.ids.size(), 1);
  MaskSlice(
      &t.mask, 0,
      static_cast<int64_t>(TokenizeWithImages(sp, kImageTag, o.legacy, o.image_token_id).size()));
  return t;
}

Result<Tokenized> Vicuna(const text::SentencePieceTokenizer& sp, const std::vector<Turn>& turns,
                         bool has_image, const TemplateOptions& o) {
  BM_ASSIGN_OR_RETURN(std::string prompt, VicunaPrompt(turns));
  auto tok = [&](std::string_view s) {
    return has_image ? TokenizeWithImages(sp, s, o.legacy, o.image_token_id)
                     : LlamaTokenize(sp, s, o.legacy);
  };
  Tokenized t;
  t.ids = tok(prompt);
  t.mask.assign(t.ids.size(), 1);
  const int32_t pad = sp.unk_id();  // LLaVA v1: pad_token = unk_token
  // LLaVA truncates a text-only sample's ids to model_max_length before counting them
  // (an image sample's are not truncated there).
  const auto counted = static_cast<ptrdiff_t>(
      has_image ? t.ids.size()
                : std::min<size_t>(t.ids.size(), static_cast<size_t>(o.model_max_length)));
  const auto total_len = static_cast<int64_t>(
      std::count_if(t.ids.begin(), t.ids.begin() + counted, [&](int32_t id) { return id != pad; }));
  const std::string sep = std::string(kSep) + std::string(kAssistant) + ": ";
  int64_t cur_len = 1;
  MaskSlice(&t.mask, 0, cur_len);
  const std::vector<std::string_view> rounds = PySplit(prompt, kSep2);
  for (size_t i = 0; i < rounds.size(); ++i) {
    if (rounds[i].empty()) break;
    const std::vector<std::string_view> parts = PySplit(rounds[i], sep);
    if (parts.size() != 2) break;
    const std::string instruction = std::string(parts[0]) + sep;
    auto round_len = static_cast<int64_t>(tok(rounds[i]).size());
    auto instruction_len = static_cast<int64_t>(tok(instruction).size()) - 2;
    if (i != 0 && !o.legacy) {
      round_len -= 1;
      instruction_len -= 1;
    }
    MaskSlice(&t.mask, cur_len, cur_len + instruction_len);
    cur_len += round_len;
  }
  MaskSlice(&t.mask, cur_len, static_cast<int64_t>(t.mask.size()));
  if (cur_len < o.model_max_length && cur_len != total_len) {
    std::fill(t.mask.begin(), t.mask.end(), 0);
    t.mismatch = true;
  }
  return t;
}

}  // namespace

Result<Tokenized> TokenizeSample(const text::SentencePieceTokenizer& sp, std::vector<Turn> turns,
                                 bool has_image, const TemplateOptions& options) {
  if (has_image) MoveImageTagToFront(&turns);
  Result<Tokenized> r = options.kind == Template::kPlain ? Plain(sp, turns, has_image, options)
                                                         : Vicuna(sp, turns, has_image, options);
  if (!r.ok()) return r;
  r->images = static_cast<int>(std::count(r->ids.begin(), r->ids.end(), options.image_token_id));
  return r;
}

}  // namespace bm::rules::llava
