#include "rules/text/tokenizer.h"

#include <algorithm>

#include "rules/text/encoding.h"
#include "rules/text/hf_tokenizer.h"
#include "rules/text/sentencepiece_tokenizer.h"

namespace bm::text {
namespace {

constexpr std::string_view kTiktokenKinds[] = {"gpt2",        "r50k_base",  "p50k_base",
                                               "cl100k_base", "o200k_base", "bytes"};

bool IsTiktoken(std::string_view kind) {
  return std::find(std::begin(kTiktokenKinds), std::end(kTiktokenKinds), kind) !=
         std::end(kTiktokenKinds);
}

// The kind a file's extension belongs to ("" when the name says nothing).
std::string_view KindOfExtension(std::string_view path) {
  const std::string_view base = path.substr(path.find_last_of('/') + 1);
  if (base.ends_with(".model")) return kSentencePieceKind;
  if (base.ends_with(".json")) return kHuggingFaceKind;
  if (base.ends_with(".tiktoken")) return "tiktoken";
  return "";
}

}  // namespace

std::vector<int32_t> Tokenizer::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  Encode(text, &ids);
  return ids;
}

std::vector<int32_t> Tokenizer::EncodeParallel(std::string_view text, int /*threads*/) const {
  return Encode(text);
}

Result<std::string> Tokenizer::Decode(std::span<const int32_t> ids) const {
  std::string out;
  BM_TRY(Decode(ids, &out));
  return out;
}

const std::vector<std::string>& TokenizerKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k = {std::string(kAutoKind), std::string(kSentencePieceKind),
                                  std::string(kHuggingFaceKind)};
    for (std::string_view t : kTiktokenKinds) k.emplace_back(t);
    return k;
  }();
  return kinds;
}

std::string ResolveTokenizerKind(std::string_view kind, std::string_view path) {
  if (kind != kAutoKind) return std::string(kind);
  const std::string_view by_extension = KindOfExtension(path);
  if (by_extension == kSentencePieceKind || by_extension == kHuggingFaceKind) {
    return std::string(by_extension);
  }
  const std::string by_name = Encoding::NameForRankFile(path);
  return by_name.empty() ? "gpt2" : by_name;
}

Status CheckTokenizerFile(std::string_view kind, std::string_view path) {
  const auto& kinds = TokenizerKinds();
  if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
    std::string known;
    for (const std::string& k : kinds) known += (known.empty() ? "" : ", ") + k;
    return Errorf(ErrorCode::kInvalidArgument, "unknown tokenizer '{}' (known: {})", kind, known);
  }
  if (kind == "bytes") return Status::Ok();
  const std::string resolved = ResolveTokenizerKind(kind, path);
  const std::string_view file_kind = KindOfExtension(path);
  const std::string_view wanted = IsTiktoken(resolved) ? "tiktoken" : std::string_view(resolved);
  if (!file_kind.empty() && file_kind != wanted) {
    static constexpr std::string_view kWhat[][2] = {
        {"tiktoken", "a tiktoken rank file (.tiktoken)"},
        {kSentencePieceKind, "a SentencePiece model (.model)"},
        {kHuggingFaceKind, "a Hugging Face tokenizer.json (.json)"}};
    auto describe = [](std::string_view k) {
      for (const auto& w : kWhat)
        if (w[0] == k) return w[1];
      return k;
    };
    return Errorf(ErrorCode::kInvalidArgument, "tokenizer '{}' reads {}, but {} is {}", resolved,
                  describe(wanted), path, describe(file_kind));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Tokenizer>> OpenTokenizer(std::string_view kind, const std::string& path) {
  BM_TRY(CheckTokenizerFile(kind, path));
  const std::string resolved = ResolveTokenizerKind(kind, path);
  if (resolved == kSentencePieceKind) {
    BM_ASSIGN_OR_RETURN(auto sp, SentencePieceTokenizer::Open(path));
    return std::unique_ptr<Tokenizer>(std::move(sp));
  }
  if (resolved == kHuggingFaceKind) {
    BM_ASSIGN_OR_RETURN(auto hf, HfTokenizer::Open(path));
    return std::unique_ptr<Tokenizer>(std::move(hf));
  }
  BM_ASSIGN_OR_RETURN(Encoding enc, Encoding::Load(resolved, path));
  return std::unique_ptr<Tokenizer>(std::make_unique<Encoding>(std::move(enc)));
}

}  // namespace bm::text
