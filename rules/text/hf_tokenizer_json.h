// The parts of a Hugging Face tokenizer.json (the `tokenizers` library's
// serialization) that the huggingface tokenizer kind implements, read and
// checked. Anything else is refused with an error naming its JSON path
// ("tokenizer.json: model.type: WordPiece is not implemented ...").
//
// Implemented (everything that decides ids for byte-level BPE files such as
// GPT-2's, RoBERTa's, Aquila2's, Qwen's and LLaMA-3's):
//   normalizer      null, NFC, or a Sequence of NFC
//   pre_tokenizer   ByteLevel {add_prefix_space, use_regex (GPT-2's regex),
//                   trim_offsets (offsets only)}, Split {pattern: {Regex},
//                   behavior: Isolated, invert: false}, or a Sequence of
//                   those with every Split before the ByteLevel; a ByteLevel
//                   step is required
//   model           BPE over the byte-level alphabet: vocab, merges ("a b"
//                   strings or [a, b] pairs), ignore_merges; dropout null,
//                   no continuing_subword_prefix or end_of_word_suffix;
//                   every single byte must be a token
//   added_tokens    content, special, lstrip, rstrip, normalized (single_word
//                   is refused); ids as the library assigns them on loading
//                   (the model's id for a content in its vocabulary, else the
//                   next free one), which is the file's "id" in consistent files
//   post_processor  null, ByteLevel, RobertaProcessing, TemplateProcessing,
//                   or a Sequence of them: only to learn the BOS/EOS convention
//   decoder         ByteLevel
// Ignored as irrelevant to ids: truncation, padding, version.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::text {

struct HfAddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false;     // absorbs the white space before it
  bool rstrip = false;     // absorbs the white space after it
  bool normalized = true;  // matched in the normalized text (else in the raw text)
};

struct HfPreTokenizerStep {
  enum class Kind { kSplit, kByteLevel } kind = Kind::kByteLevel;
  std::string pattern;            // kSplit: the regex (Oniguruma syntax, read by ICU)
  bool add_prefix_space = false;  // kByteLevel: " " before each piece not starting with one
  bool use_regex = true;          // kByteLevel: split with GPT-2's regex
};

struct HfTokenizerSpec {
  bool nfc = false;
  std::vector<HfPreTokenizerStep> pre_tokenizer;
  // id → token bytes (byte-level alphabet decoded); "" where an id is unused.
  std::vector<std::string> tokens;
  struct Merge {
    int32_t left, right;
  };
  std::vector<Merge> merges;  // by rank
  bool ignore_merges = false;
  std::vector<HfAddedToken> added_tokens;
  // From the post-processor: the special token a single sequence starts or
  // ends with, if any.
  std::optional<int32_t> template_bos, template_eos;
};

// Parses tokenizer.json contents; `origin` names the file in errors.
// Errors: kCorrupt for malformed JSON or inconsistent parts (a merge of
// unknown tokens, a missing byte), kInvalidArgument for parts not implemented.
Result<HfTokenizerSpec> ParseHfTokenizerJson(std::string_view contents, std::string_view origin);

// GPT-2's map of the 256 bytes to printable characters (bytes_to_unicode),
// as UTF-8: ByteLevelChar(b) is the character that stands for byte b.
const std::string& ByteLevelChar(uint8_t byte);

}  // namespace bm::text
