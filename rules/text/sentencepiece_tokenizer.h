// SentencePieceTokenizer: a SentencePiece model (tokenizer.model, LLaMA-2's
// format) through libsentencepiece — the same library that Python's
// `sentencepiece` wraps, so ids equal its EncodeAsIds for any input. Only
// sentencepiece_tokenizer.cc sees the library's headers.
//
// Conventions (LLaMA's): Encode adds neither BOS nor EOS; adds_bos() is true
// when the model has a BOS piece (<s>), so the tokenize rule starts every
// document with it, and eos_id() (</s>) ends it. Text that spells a control
// piece ("<s>") is ordinary text, as in SentencePiece; user-defined pieces
// are matched as the model defines them. Byte fallback is the model's: with
// it, a character outside the vocabulary becomes its UTF-8 bytes' pieces.
// Bytes that are not valid UTF-8 are handled as libsentencepiece handles
// them (each becomes U+FFFD before encoding, so they do not round-trip).
//
// Speed: SentencePiece's BPE slows down on long inputs (a 4 MB text as one
// call runs at about 1 MB/s). For the models where it is exact — BPE, the
// "identity" normalizer without remove_extra_whitespaces, whitespace as
// prefix, byte fallback on, and no piece holding a '\n', which is LLaMA-2's
// case and data/kjv_sp.model's — Encode cuts the text after every '\n' and
// encodes the lines one by one (all but the first without the dummy "▁"
// prefix), and EncodeParallel spreads the lines over threads; no merge can
// cross a '\n' there, so the ids are those of one call on the whole text.
// Other models are encoded in one call.
//
// Decode is SentencePiece's DecodeIds (control pieces decode to nothing).
//
// Thread safety: as Tokenizer (libsentencepiece's encoding is const).
#pragma once

#include <memory>
#include <string>

#include "rules/text/tokenizer.h"

namespace bm::text {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Errors: kNotFound/kIo for the file, kCorrupt when it is not a model.
  static Result<std::unique_ptr<SentencePieceTokenizer>> Open(const std::string& path);
  // The same from a serialized ModelProto; `origin` names it in errors.
  static Result<std::unique_ptr<SentencePieceTokenizer>> FromSerialized(std::string serialized,
                                                                        std::string_view origin);
  ~SentencePieceTokenizer() override;

  const std::string& name() const override { return name_; }
  size_t vocab_size() const override;
  std::optional<int32_t> bos_id() const override;
  std::optional<int32_t> eos_id() const override;
  bool adds_bos() const override { return bos_id().has_value(); }

  void Encode(std::string_view text, std::vector<int32_t>* out) const override;
  using Tokenizer::Encode;
  std::vector<int32_t> EncodeParallel(std::string_view text, int threads) const override;
  Status Decode(std::span<const int32_t> ids, std::string* out) const override;
  using Tokenizer::Decode;

  // Encode as the model would without its dummy "▁" prefix (its
  // NormalizerSpec.add_dummy_prefix off): what Hugging Face's LlamaTokenizer
  // with legacy = false does to text that follows a special token. Equal to
  // Encode for a model without the prefix.
  void EncodeWithoutDummyPrefix(std::string_view text, std::vector<int32_t>* out) const;
  // <unk>'s id (SentencePiece models always have one).
  int32_t unk_id() const;
  // The piece of an id ("<s>", "▁the", "<0x0A>"); "" for an id out of range.
  std::string Piece(int32_t id) const;
  // What an id decodes to, as DecodeIds puts it into the text: a control or unknown
  // piece (kSpecial, no bytes; Hugging Face's skip_special_tokens drops them), a byte
  // fallback piece <0xNN> (kByte: that byte), or any other piece (kText: its text with
  // U+2581 "▁" as " "). An id out of range is kSpecial.
  struct PieceBytes {
    enum Kind { kSpecial, kByte, kText } kind = kSpecial;
    std::string bytes;
  };
  PieceBytes Bytes(int32_t id) const;
  // NormalizerSpec.add_dummy_prefix: DecodeIds then drops the first piece's leading "▁".
  bool adds_dummy_prefix() const;

  // True when Encode cuts the text at newlines (see above); for tests.
  bool encodes_by_line() const;

 private:
  struct Impl;
  explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);

  std::string name_ = "sentencepiece";
  std::unique_ptr<Impl> impl_;
};

}  // namespace bm::text
