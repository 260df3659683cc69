// HfTokenizer: a Hugging Face tokenizer.json with a byte-level BPE model
// (GPT-2's, RoBERTa's, Aquila2's, Qwen's, LLaMA-3's format), encoding as
// Hugging Face's `tokenizers` library does with
// encode(text, add_special_tokens=False). hf_tokenizer_json.h lists the parts
// of the file that are implemented; anything else is refused when opening.
//
// Encode, step by step as the library:
//  1. added tokens (special or not) are found in the text, leftmost-longest,
//     first those with normalized = false in the raw text, then the others in
//     each remaining normalized stretch; lstrip/rstrip tokens absorb the white
//     space beside them. A match becomes its id: so "<|endoftext|>" in a
//     document IS the end-of-text token for this kind (unlike tiktoken's
//     encode_ordinary and SentencePiece, which encode it as text);
//  2. each remaining stretch is normalized (NFC when the file says so) and
//     pre-tokenized (Split regexes, then ByteLevel: a prefix space per piece
//     when add_prefix_space, GPT-2's regex when use_regex);
//  3. each piece is encoded with the BPE merge rules (bpe.h, PairMerges); with
//     ignore_merges a piece that is a token is taken whole.
// The post-processor's template (BOS/EOS) is not applied: bos_id()/adds_bos()
// report a template that starts with a special token, eos_id() the one it
// ends with, else the added special token named <|endoftext|>,
// <|end_of_text|>, </s> or <eos> (first found); the tokenize rule adds them
// per document.
// Text that is not valid UTF-8 (which the library cannot be given) is encoded
// as its bytes, pieces cut as if each bad byte were U+FFFD (char_class.h); NFC
// (ICU's) leaves such bytes as they are.
//
// Decode appends each token's bytes; an added token decodes to its content.
//
// Thread safety: as Tokenizer. Encode keeps a per-thread piece cache
// (piece_cache.h).
#pragma once

#include <memory>
#include <string>

#include "rules/text/tokenizer.h"

namespace bm::text {

class HfTokenizer final : public Tokenizer {
 public:
  // Errors: kNotFound/kIo for the file, ParseHfTokenizerJson's, and
  // kInvalidArgument when a Split regex does not compile.
  static Result<std::unique_ptr<HfTokenizer>> Open(const std::string& path);
  // The same from the file's contents; `origin` names it in errors.
  static Result<std::unique_ptr<HfTokenizer>> FromJson(std::string_view contents,
                                                       std::string_view origin);
  ~HfTokenizer() override;

  const std::string& name() const override { return name_; }
  size_t vocab_size() const override;
  std::optional<int32_t> bos_id() const override;
  std::optional<int32_t> eos_id() const override;
  bool adds_bos() const override { return bos_id().has_value(); }

  void Encode(std::string_view text, std::vector<int32_t>* out) const override;
  using Tokenizer::Encode;
  // Several threads when the pre-tokenizer is GPT-2's regex without a prefix
  // space and no added token holds a '\n' or strips on its left (the cuts of
  // CutRule::kLoneNewline are then exact); else one.
  std::vector<int32_t> EncodeParallel(std::string_view text, int threads) const override;
  Status Decode(std::span<const int32_t> ids, std::string* out) const override;
  using Tokenizer::Decode;

 private:
  struct Impl;
  explicit HfTokenizer(std::unique_ptr<Impl> impl);

  std::string name_ = "huggingface";
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::text
