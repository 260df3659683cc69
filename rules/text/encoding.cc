#include "rules/text/encoding.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <unordered_map>

#include "rules/text/bpe.h"

namespace bm::text {
namespace {

// tiktoken's openai_public.py patterns.
constexpr std::string_view kCl100kPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kO200kPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return RankMap::Hash(s.data(), s.size()); }
};

// The tokens of pieces that are not a token themselves: in real text the same
// rare words recur, and a merge costs tens of rank lookups. One cache per
// thread, tied to one encoding (by its id, never reused), bounded in size.
struct PieceCache {
  static constexpr size_t kMaxEntries = 1 << 16;

  uint64_t encoding_id = 0;
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash, std::equal_to<>>
      entries;  // piece → (offset, count) in tokens
  std::vector<int32_t> tokens;

  void Clear() {
    entries.clear();
    tokens.clear();
  }
};

PieceCache& ThreadCache(uint64_t encoding_id) {
  thread_local PieceCache cache;
  if (cache.encoding_id != encoding_id) {
    cache.Clear();
    cache.encoding_id = encoding_id;
  }
  return cache;
}

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
    if (piece.size() > kMaxCachedBytes) {
      BytePairEncode(piece, ranks_, out_);
      return;
    }
    auto hit = cache_.entries.find(piece);
    if (hit != cache_.entries.end()) {
      const auto first = cache_.tokens.begin() + hit->second.first;
      out_->insert(out_->end(), first, first + hit->second.second);
      return;
    }
    const size_t before = out_->size();
    BytePairEncode(piece, ranks_, out_);
    if (cache_.entries.size() >= PieceCache::kMaxEntries) cache_.Clear();
    const auto offset = static_cast<uint32_t>(cache_.tokens.size());
    cache_.tokens.insert(cache_.tokens.end(), out_->begin() + before, out_->end());
    cache_.entries.emplace(std::string(piece),
                           std::make_pair(offset, static_cast<uint32_t>(out_->size() - before)));
  }

 private:
  static constexpr size_t kMaxCachedBytes = 64;

  const RankMap& ranks_;
  PieceCache& cache_;
  std::vector<int32_t>* out_;
};

std::atomic<uint64_t> next_encoding_id{1};

bool IsAsciiNonSpace(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u > 0x20 && u < 0x7f;
}

// Cut points for EncodeParallel: about `parts` chunks, each starting at a
// printable ASCII byte after a lone '\n' that follows a printable ASCII byte
// ("x\ny"). No built-in pattern has a piece that spans such a point, and the
// '\n' is a piece of its own whether or not the text ends after it (a longer
// run of white space would not be: \s+(?!\S) sees the end of the chunk).
std::vector<size_t> ChunkStarts(std::string_view text, size_t parts) {
  std::vector<size_t> starts = {0};
  const size_t step = std::max<size_t>(text.size() / parts, 1 << 16);
  for (size_t target = step; target < text.size(); target += step) {
    size_t p = std::max(target, starts.back() + 1);
    while (p < text.size() && !(p >= 2 && text[p - 1] == '\n' && IsAsciiNonSpace(text[p]) &&
                                IsAsciiNonSpace(text[p - 2]))) {
      ++p;
    }
    if (p >= text.size()) break;
    starts.push_back(p);
    target = p;
  }
  return starts;
}

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
  enc.id_ = next_encoding_id.fetch_add(1);
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
  BpeSink sink(vocab_.ranks, ThreadCache(id_), out);
  pretokenizer_->Split(text, sink);
}

std::vector<int32_t> Encoding::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3);
  Encode(text, &ids);
  return ids;
}

std::vector<int32_t> Encoding::EncodeParallel(std::string_view text, int threads) const {
  if (threads <= 1 || !splits_at_lines_) return Encode(text);
  const std::vector<size_t> starts = ChunkStarts(text, static_cast<size_t>(threads) * 4);
  std::vector<std::vector<int32_t>> chunks(starts.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < starts.size();) {
      const size_t end = i + 1 < starts.size() ? starts[i + 1] : text.size();
      chunks[i] = Encode(text.substr(starts[i], end - starts[i]));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  std::vector<int32_t> ids;
  size_t total = 0;
  for (const auto& c : chunks) total += c.size();
  ids.reserve(total);
  for (const auto& c : chunks) ids.insert(ids.end(), c.begin(), c.end());
  return ids;
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

Result<std::string> Encoding::Decode(std::span<const int32_t> ids) const {
  std::string out;
  BM_TRY(Decode(ids, &out));
  return out;
}

}  // namespace bm::text
