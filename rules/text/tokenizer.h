// Tokenizer: what the tokenize rule and `benchmake tokenize` know of a
// tokenizer — encode, decode, its special ids and its vocabulary size — and
// the factory that opens one by kind. Three kinds implement it, each in its
// own files:
//
//   tiktoken encodings  "gpt2" (= "r50k_base", "p50k_base"), "cl100k_base",
//                       "o200k_base", "bytes" — encoding.h; the file is a
//                       tiktoken rank file (.tiktoken).
//   "sentencepiece"     a SentencePiece model (tokenizer.model, LLaMA-2's
//                       format) through libsentencepiece — sentencepiece_tokenizer.h.
//   "huggingface"       a Hugging Face tokenizer.json with a byte-level BPE model
//                       (GPT-2's, Aquila2's, Qwen's, LLaMA-3's) — hf_tokenizer.h.
//
// What Encode does with the text of a special token differs by kind, as in
// each kind's reference: tiktoken's encode_ordinary and SentencePiece encode it
// as ordinary text; Hugging Face's encode matches added tokens (special or
// not) in the text and emits their ids. No kind adds BOS or EOS in Encode:
// documents get them from their user (the tokenize rule: bos_id() first when
// adds_bos(), eos_id() last).
//
// Thread safety: a Tokenizer is immutable once opened; every method is const
// and safe from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The kind's name for reports: the tiktoken encoding ("gpt2"),
  // "sentencepiece" or "huggingface".
  virtual const std::string& name() const = 0;
  // One more than the largest id, special tokens included.
  virtual size_t vocab_size() const = 0;
  // Beginning of a document (LLaMA's <s>); nullopt when the tokenizer has none.
  virtual std::optional<int32_t> bos_id() const = 0;
  // End of a document (end-of-text, </s>); nullopt when the tokenizer has none.
  virtual std::optional<int32_t> eos_id() const = 0;
  // True when a document starts with bos_id() in this tokenizer's convention
  // (SentencePiece models with a BOS piece, tokenizer.json files whose
  // post-processor template starts with one). Implies bos_id().
  virtual bool adds_bos() const = 0;

  // Appends the ids of text to out (no BOS, no EOS). Any bytes are accepted;
  // what invalid UTF-8 becomes is each kind's business (its header says).
  virtual void Encode(std::string_view text, std::vector<int32_t>* out) const = 0;
  std::vector<int32_t> Encode(std::string_view text) const;

  // The same ids as Encode(text), computed by up to `threads` threads where
  // the kind knows places to cut the text that no token can straddle; else
  // Encode on the calling thread.
  virtual std::vector<int32_t> EncodeParallel(std::string_view text, int threads) const;

  // Appends the text of ids to out. Errors: kInvalidArgument for an id that
  // is not a token (out then holds the text before it).
  virtual Status Decode(std::span<const int32_t> ids, std::string* out) const = 0;
  Result<std::string> Decode(std::span<const int32_t> ids) const;

 protected:
  Tokenizer() = default;
  Tokenizer(const Tokenizer&) = default;
  Tokenizer& operator=(const Tokenizer&) = default;
};

inline constexpr std::string_view kAutoKind = "auto";
inline constexpr std::string_view kSentencePieceKind = "sentencepiece";
inline constexpr std::string_view kHuggingFaceKind = "huggingface";

// Every kind a user may name, "auto" first, for messages and checks.
const std::vector<std::string>& TokenizerKinds();

// The kind "auto" means for a file, by its name: *.model → sentencepiece,
// *.json → huggingface, otherwise the tiktoken encoding the rank file's name
// says (Encoding::NameForRankFile), else "gpt2" (the default of old). Any
// other kind is returned as given.
std::string ResolveTokenizerKind(std::string_view kind, std::string_view path);

// Whether kind and file can go together, judged from names only (the file
// need not exist yet): kInvalidArgument for an unknown kind, or a file whose
// extension belongs to another kind (a .model or .json file for a tiktoken
// encoding, a .tiktoken or .json file for sentencepiece, ...).
Status CheckTokenizerFile(std::string_view kind, std::string_view path);

// Opens the tokenizer of `kind` (resolving "auto") from `path` ("bytes"
// ignores it). Errors: CheckTokenizerFile's, then the kind's own (kNotFound,
// kIo, kCorrupt, kInvalidArgument for parts of a file it does not implement).
Result<std::unique_ptr<Tokenizer>> OpenTokenizer(std::string_view kind, const std::string& path);

}  // namespace bm::text
