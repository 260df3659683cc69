#include "rules/text/hf_tokenizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>

#include "base/real_filesystem.h"
#include "rules/text/added_tokens.h"
#include "rules/text/bpe.h"
#include "rules/text/chunked_encode.h"
#include "rules/text/hf_tokenizer_json.h"
#include "rules/text/piece_cache.h"
#include "rules/text/pretokenizer.h"

namespace bm::text {
namespace {

// One pre-tokenizer step: an optional prefix space, then an optional split.
struct Stage {
  bool add_prefix_space = false;
  std::unique_ptr<Pretokenizer> splitter;  // null: the piece goes on whole
};

// Runs a piece through one stage, handing the results to the next sink.
class StageSink final : public PieceSink {
 public:
  StageSink(const Stage& stage, PieceSink& next) : stage_(stage), next_(next) {}
  void Piece(std::string_view piece) override {
    if (stage_.add_prefix_space && piece.front() != ' ') {
      buffer_.assign(1, ' ');
      buffer_.append(piece);
      piece = buffer_;
    }
    if (stage_.splitter) {
      stage_.splitter->Split(piece, next_);
    } else {
      next_.Piece(piece);
    }
  }

 private:
  const Stage& stage_;
  PieceSink& next_;
  std::string buffer_;  // the piece with its prefix space, while the next sink reads it
};

constexpr std::string_view kEosNames[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};

}  // namespace

struct HfTokenizer::Impl {
  std::vector<std::string> decoded;  // id → bytes (tokens) or content (added tokens)
  RankMap tokens;                    // token bytes → id
  PairMerges merges;
  bool ignore_merges = false;
  const icu::Normalizer2* nfc = nullptr;  // null: no normalizer
  std::vector<Stage> stages;
  AddedTokenMatcher raw_added, normalized_added;
  std::optional<int32_t> bos, eos;
  bool parallel = false;
  uint64_t cache_owner = NewPieceCacheOwner();

  class BpeSink final : public PieceSink {
   public:
    BpeSink(const Impl& impl, std::vector<int32_t>* out)
        : impl_(impl), cache_(ThreadPieceCache(impl.cache_owner)), out_(out) {}
    void Piece(std::string_view piece) override {
      if (impl_.ignore_merges && piece.size() <= impl_.tokens.max_key_length()) {
        const uint32_t whole = impl_.tokens.Find(piece);
        if (whole != RankMap::kNotFound) {
          out_->push_back(static_cast<int32_t>(whole));
          return;
        }
      }
      cache_.Encode(piece, out_, [this](std::string_view p, std::vector<int32_t>* out) {
        impl_.merges.Encode(p, impl_.tokens, out);
      });
    }

   private:
    const Impl& impl_;
    PieceCache& cache_;
    std::vector<int32_t>* out_;
  };

  // Pre-tokenizes and encodes one normalized stretch without added tokens.
  void EncodeStretch(std::string_view text, std::vector<int32_t>* out) const {
    BpeSink bpe(*this, out);
    std::vector<StageSink> sinks;
    sinks.reserve(stages.size());  // no reallocation: each sink refers to the one before
    PieceSink* next = &bpe;
    for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
      next = &sinks.emplace_back(*it, *next);
    }
    next->Piece(text);
  }

  std::string Normalize(std::string_view text) const {
    std::string result;
    UErrorCode status = U_ZERO_ERROR;
    icu::StringByteSink<std::string> sink(&result, static_cast<int32_t>(text.size()));
    nfc->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink,
                       nullptr, status);
    return U_SUCCESS(status) ? result : std::string(text);
  }

  void Encode(std::string_view text, std::vector<int32_t>* out) const {
    auto push_id = [out](int32_t id) { out->push_back(id); };
    auto normalized_stretch = [&](std::string_view stretch) {
      UErrorCode status = U_ZERO_ERROR;
      std::string normalized;
      if (nfc != nullptr &&
          !nfc->isNormalizedUTF8(
              icu::StringPiece(stretch.data(), static_cast<int32_t>(stretch.size())), status)) {
        normalized = Normalize(stretch);
        stretch = normalized;
      }
      normalized_added.Split(
          stretch, [&](std::string_view s) { EncodeStretch(s, out); }, push_id);
    };
    raw_added.Split(text, normalized_stretch, push_id);
  }
};

HfTokenizer::HfTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HfTokenizer::~HfTokenizer() = default;

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::Open(const std::string& path) {
  BM_ASSIGN_OR_RETURN(std::string contents, DiskFilesystem().ReadFile(path));
  return FromJson(contents, path);
}

Result<std::unique_ptr<HfTokenizer>> HfTokenizer::FromJson(std::string_view contents,
                                                           std::string_view origin) {
  BM_ASSIGN_OR_RETURN(HfTokenizerSpec spec, ParseHfTokenizerJson(contents, origin));
  auto impl = std::make_unique<Impl>();
  impl->ignore_merges = spec.ignore_merges;
  for (size_t id = 0; id < spec.tokens.size(); ++id) {
    if (!spec.tokens[id].empty()) impl->tokens.Insert(spec.tokens[id], static_cast<uint32_t>(id));
  }
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    if (!impl->merges.Add(spec.merges[rank].left, spec.merges[rank].right,
                          static_cast<uint32_t>(rank))) {
      return Errorf(ErrorCode::kCorrupt, "{}: model.merges[{}]: merge repeated", origin, rank);
    }
  }
  if (spec.nfc) {
    UErrorCode status = U_ZERO_ERROR;
    impl->nfc = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) return Errorf(ErrorCode::kInternal, "ICU has no NFC normalizer");
  }
  // Parallel cuts are exact when every split is GPT-2's regex (see the header).
  bool gpt2_only = true, splits = false;
  for (size_t i = 0; i < spec.pre_tokenizer.size(); ++i) {
    const HfPreTokenizerStep& step = spec.pre_tokenizer[i];
    Stage stage;
    stage.add_prefix_space =
        step.kind == HfPreTokenizerStep::Kind::kByteLevel && step.add_prefix_space;
    const bool split = step.kind == HfPreTokenizerStep::Kind::kSplit || step.use_regex;
    const std::string_view pattern = step.kind == HfPreTokenizerStep::Kind::kSplit
                                         ? std::string_view(step.pattern)
                                         : kGpt2Pattern;
    if (split && pattern == kGpt2Pattern) {
      stage.splitter = std::make_unique<Gpt2Pretokenizer>();
      splits = true;
    } else if (split) {
      auto regex = RegexPretokenizer::Create(pattern, RegexPretokenizer::Unmatched::kKeep);
      if (!regex.ok()) {
        return regex.status().WithContext(
            fmt::format("{}: pre_tokenizer.pretokenizers[{}].pattern", origin, i));
      }
      stage.splitter = std::move(*regex);
      gpt2_only = false;
    }
    gpt2_only &= !stage.add_prefix_space;
    impl->stages.push_back(std::move(stage));
  }
  impl->decoded = std::move(spec.tokens);
  for (const HfAddedToken& t : spec.added_tokens) {
    if (static_cast<size_t>(t.id) >= impl->decoded.size()) impl->decoded.resize(t.id + 1);
    impl->decoded[t.id] = t.content;
    gpt2_only &= t.content.find('\n') == std::string::npos && !t.lstrip;
    if (t.normalized && impl->nfc != nullptr) {
      impl->normalized_added.Add(impl->Normalize(t.content), t.id, t.lstrip, t.rstrip);
    } else {
      (t.normalized ? impl->normalized_added : impl->raw_added)
          .Add(t.content, t.id, t.lstrip, t.rstrip);
    }
  }
  impl->parallel = gpt2_only && splits;
  impl->bos = spec.template_bos;
  impl->eos = spec.template_eos;
  for (std::string_view name : kEosNames) {
    if (impl->eos) break;
    for (const HfAddedToken& t : spec.added_tokens) {
      if (t.special && t.content == name) {
        impl->eos = t.id;
        break;
      }
    }
  }
  return std::unique_ptr<HfTokenizer>(new HfTokenizer(std::move(impl)));
}

size_t HfTokenizer::vocab_size() const { return impl_->decoded.size(); }
std::optional<int32_t> HfTokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> HfTokenizer::eos_id() const { return impl_->eos; }

void HfTokenizer::Encode(std::string_view text, std::vector<int32_t>* out) const {
  impl_->Encode(text, out);
}

std::vector<int32_t> HfTokenizer::EncodeParallel(std::string_view text, int threads) const {
  if (threads <= 1 || !impl_->parallel) return Encode(text);
  return EncodeByCuts(*this, text, threads, CutRule::kLoneNewline);
}

Status HfTokenizer::Decode(std::span<const int32_t> ids, std::string* out) const {
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= impl_->decoded.size() || impl_->decoded[id].empty()) {
      return Errorf(ErrorCode::kInvalidArgument, "id {} is not a token of this tokenizer.json", id);
    }
    out->append(impl_->decoded[id]);
  }
  return Status::Ok();
}

}  // namespace bm::text
