// Encoding: a byte-level BPE tokenizer as tiktoken defines one — a
// pre-tokenization pattern, a rank file, and special tokens. The tiktoken kind
// of Tokenizer (tokenizer.h).
//
//   BM_ASSIGN_OR_RETURN(Encoding enc, Encoding::Load("gpt2", "data/gpt2.tiktoken"));
//   std::vector<int32_t> ids = enc.Encode("Hello world");   // {15496, 995}
//   std::string text = *enc.Decode(ids);                     // "Hello world"
//
// Encode() treats the text as ordinary text, like tiktoken's encode_ordinary:
// "<|endoftext|>" in the input is encoded as its characters, never as the
// special token; callers append eot_id() where a document ends. Ids equal
// tiktoken's for any valid UTF-8. Invalid UTF-8 is encoded as its raw bytes
// (pieces split as if each bad byte were U+FFFD; see char_class.h), so
// Decode(Encode(x)) == x for every byte string x when the pattern tiles the
// text (GPT-2's does; a custom pattern may drop unmatched text, as tiktoken).
//
// Built-in encodings (Load):
//   "gpt2" (also "r50k_base", "p50k_base"): GPT-2's pattern, the given rank
//       file, <|endoftext|> = 50256; the pattern runs on the hand-written
//       scanner in gpt2_pretokenizer.cc.
//   "cl100k_base", "o200k_base": their tiktoken patterns through ICU regex, the
//       given rank file, and their end-of-text token.
//   "bytes": 256 single-byte tokens (id = byte value) and end-of-text = 256;
//       no rank file. For tests.
//
// No BOS (bos_id() is nullopt); eos_id() is the end-of-text token.
//
// Thread safety: immutable after construction; every method is const and safe
// from any number of threads. Encode() keeps a bounded per-thread cache of
// pieces that needed merges (piece_cache.h), which changes speed, never ids.
// Move-only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rules/text/pretokenizer.h"
#include "rules/text/tiktoken_ranks.h"
#include "rules/text/tokenizer.h"

namespace bm::text {

struct SpecialToken {
  std::string text;  // "<|endoftext|>"
  int32_t id;
};

class Encoding final : public Tokenizer {
 public:
  // name as listed above; rank_file is ignored for "bytes".
  // Errors: kInvalidArgument (unknown name), the rank file's errors.
  static Result<Encoding> Load(std::string_view name, const std::string& rank_file);

  // Any tiktoken rank file with an explicit pattern and special tokens; the
  // end-of-text token is the special named "<|endoftext|>" (required).
  static Result<Encoding> Custom(std::string name, Vocabulary vocab, std::string_view pattern,
                                 std::vector<SpecialToken> specials);

  // The name of the built-in encoding a rank file is meant for, from its file
  // name ("gpt2.tiktoken", "r50k_base.tiktoken" → "gpt2"; "" when unknown).
  static std::string NameForRankFile(std::string_view path);

  Encoding(Encoding&&) noexcept;
  Encoding& operator=(Encoding&&) noexcept;
  ~Encoding() override;

  const std::string& name() const override { return name_; }
  // One more than the largest id, special tokens included (gpt2: 50257).
  size_t vocab_size() const override { return vocab_size_; }
  int32_t eot_id() const { return eot_id_; }
  std::optional<int32_t> bos_id() const override { return std::nullopt; }
  std::optional<int32_t> eos_id() const override { return eot_id_; }
  bool adds_bos() const override { return false; }

  // Appends the ids of text to out.
  void Encode(std::string_view text, std::vector<int32_t>* out) const override;
  using Tokenizer::Encode;

  // The same ids as Encode(text), computed by up to `threads` threads on
  // chunks cut where no piece can straddle ("x\n|y": CutRule::kLoneNewline;
  // built-in patterns only, a custom one runs on one thread).
  std::vector<int32_t> EncodeParallel(std::string_view text, int threads) const override;

  // Appends the bytes of ids to out. Errors: kInvalidArgument for an id that
  // is not a token of this encoding (out then holds the bytes before it).
  Status Decode(std::span<const int32_t> ids, std::string* out) const override;
  using Tokenizer::Decode;

 private:
  Encoding() = default;

  std::string name_;
  Vocabulary vocab_;
  std::unique_ptr<Pretokenizer> pretokenizer_;
  std::vector<SpecialToken> specials_;
  int32_t eot_id_ = -1;
  size_t vocab_size_ = 0;
  bool splits_at_lines_ = false;
  uint64_t cache_owner_ = 0;  // keys the per-thread piece cache; unique per Custom()
};

}  // namespace bm::text
