#include "rules/text/encoding.h"

#include <algorithm>

#include "rules/text/bpe.h"
#include "rules/text/chunked_encode.h"
#include "rules/text/piece_cache.h"

namespace bm::text {
namespace {

// tiktoken's openai_public.py patterns.
constexpr std::string_view kCl100kPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Encodes pieces: a whole-piece lookup first (most words are one token), then
// the thread's cache, then BPE.
class BpeSink final : public PieceSink {
 public:
  BpeSink(const RankMap& ranks, PieceCache& cache, std::vector<int32_t>* out)
      : ranks_(ranks), cache_(cache), out_(out) {}

  void Piece(std::string_view piece) override {
    const uint32_t whole =
        piece.size() <= ranks_.max_key_length() ? ranks_.Find(piece) : RankMap::kNotFound;
    if (whole != RankMap::kNotFound) {
      out_->push_back(static_cast<int32_t>(whole));
      return;
    }
    cache_.Encode(piece, out_, [this](std::string_view p, std::vector<int32_t>* out) {
      BytePairEncode(p, ranks_, out);
    });
  }

 private:
  const RankMap& ranks_;
  PieceCache& cache_;
  std::vector<int32_t>* out_;
};

}  // namespace

Encoding::Encoding(Encoding&&) noexcept = default;
Encoding& Encoding::operator=(Encoding&&) noexcept = default;
Encoding::~Encoding() = default;

std::string Encoding::NameForRankFile(std::string_view path) {
  std::string_view base = path.substr(path.find_last_of('/') + 1);
  for (std::string_view name : {"gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base"}) {
    if (base == std::string(name) + ".tiktoken")
      return name.substr(0, 2) == "r5" ? "gpt2" : std::string(name);
  }
  return "";
}

Result<Encoding> Encoding::Custom(std::string name, Vocabulary vocab, std::string_view pattern,
                                  std::vector<SpecialToken> specials) {
  Encoding enc;
  enc.cache_owner_ = NewPieceCacheOwner();
  enc.name_ = std::move(name);
  if (pattern == kGpt2Pattern) {
    enc.pretokenizer_ = std::make_unique<Gpt2Pretokenizer>();
  } else {
    BM_ASSIGN_OR_RETURN(enc.pretokenizer_, RegexPretokenizer::Create(pattern));
  }
  enc.vocab_size_ = vocab.size();
  for (const SpecialToken& s : specials) {
    if (s.id < 0 || (static_cast<size_t>(s.id) < vocab.size() && !vocab.tokens[s.id].empty())) {
      return Errorf(ErrorCode::kInvalidArgument, "special token {} has id {}, already a token",
                    s.text, s.id);
    }
    enc.vocab_size_ = std::max(enc.vocab_size_, static_cast<size_t>(s.id) + 1);
    if (s.text == "<|endoftext|>") enc.eot_id_ = s.id;
  }
  if (enc.eot_id_ < 0) {
    return Errorf(ErrorCode::kInvalidArgument, "encoding {} has no <|endoftext|> token", enc.name_);
  }
  enc.vocab_ = std::move(vocab);
  enc.specials_ = std::move(specials);
  return enc;
}

Result<Encoding> Encoding::Load(std::string_view name, const std::string& rank_file) {
  if (name == "bytes") {
    BM_ASSIGN_OR_RETURN(Encoding enc,
                        Custom("bytes", ByteVocabulary(), kGpt2Pattern, {{"<|endoftext|>", 256}}));
    enc.splits_at_lines_ = true;
    return enc;
  }
  std::string_view pattern;
  std::vector<SpecialToken> specials;
  if (name == "gpt2" || name == "r50k_base" || name == "p50k_base") {
    pattern = kGpt2Pattern;
    specials = {{"<|endoftext|>", 50256}};
  } else if (name == "cl100k_base") {
    pattern = kCl100kPattern;
    specials = {{"<|endoftext|>", 100257},
                {"<|fim_prefix|>", 100258},
                {"<|fim_middle|>", 100259},
                {"<|fim_suffix|>", 100260},
                {"<|endofprompt|>", 100276}};
  } else if (name == "o200k_base") {
    pattern = kO200kPattern;
    specials = {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}};
  } else {
    return Errorf(ErrorCode::kInvalidArgument,
                  "unknown encoding '{}' (known: gpt2, r50k_base, p50k_base, cl100k_base, "
                  "o200k_base, bytes)",
                  name);
  }
  BM_ASSIGN_OR_RETURN(Vocabulary vocab, LoadTiktokenRanks(rank_file));
  BM_ASSIGN_OR_RETURN(Encoding enc,
                      Custom(std::string(name), std::move(vocab), pattern, std::move(specials)));
  enc.splits_at_lines_ = true;
  return enc;
}

void Encoding::Encode(std::string_view text, std::vector<int32_t>* out) const {
  BpeSink sink(vocab_.ranks, ThreadPieceCache(cache_owner_), out);
  pretokenizer_->Split(text, sink);
}

std::vector<int32_t> Encoding::EncodeParallel(std::string_view text, int threads) const {
  if (threads <= 1 || !splits_at_lines_) return Encode(text);
  return EncodeByCuts(*this, text, threads, CutRule::kLoneNewline);
}

Status Encoding::Decode(std::span<const int32_t> ids, std::string* out) const {
  for (const int32_t id : ids) {
    if (id >= 0 && static_cast<size_t>(id) < vocab_.tokens.size() && !vocab_.tokens[id].empty()) {
      out->append(vocab_.tokens[id]);
      continue;
    }
    auto special = std::find_if(specials_.begin(), specials_.end(),
                                [id](const SpecialToken& s) { return s.id == id; });
    if (special == specials_.end()) {
      return Errorf(ErrorCode::kInvalidArgument, "id {} is not a token of encoding {}", id, name_);
    }
    out->append(special->text);
  }
  return Status::Ok();
}

}  // namespace bm::text
