// LLaVA-1.5's conversation templates and label masks, as LLaVA's own
// training code computes them (github.com/haotian-liu/LLaVA, llava/train/train.py:
// preprocess_multimodal, preprocess_plain, preprocess_v1; llava/mm_utils.py:
// tokenizer_image_token; llava/conversation.py: conv_llava_plain, conv_vicuna_v1),
// with the text tokenized by a LLaMA SentencePiece model the way Hugging Face's
// LlamaTokenizer does it.
//
// The tokenizer, as LLaVA calls it (`tokenizer(text).input_ids`):
//   BOS, then the text cut at the special tokens' texts (<unk>, <s>, </s>: each
//   becomes its id), each piece between them encoded by SentencePiece. With
//   legacy = true every piece gets the model's dummy "▁" prefix; with legacy =
//   false (Vicuna-v1.5's tokenizer_config.json) only a piece at the start of
//   the text does, pieces after a special token are encoded without it.
// tokenizer_image_token(prompt): the prompt cut at each "<image>", each chunk
//   tokenized as above (a call of its own, so each chunk starts afresh), the
//   chunks' BOS dropped but the first's, one image placeholder between chunks.
//
// Templates (`template` of the llava_data rule):
//   plain (pretraining, LCS-558K): exactly two turns, the first holding
//     "<image>"; the first turn becomes "<image>" alone; the text is
//     "<image>" + caption + "\n" (conv_llava_plain's sep), no EOS. Masked: BOS
//     and the placeholder (the length of tokenizer_image_token("<image>")).
//   vicuna_v1 (finetuning, mix665k): a first turn not from "human" is dropped;
//     turns alternate human/gpt (else an error); the text is
//     SYSTEM + " " + for each turn "ROLE: value" + (" " after a human turn,
//     "</s>" after a gpt turn), ROLE USER/ASSISTANT (an empty value gives
//     "ROLE:" and no separator). Masks by LLaVA's round arithmetic: position 0
//     (BOS) masked; the text is cut at "</s>" into rounds; a round that does not
//     split into exactly two parts at " ASSISTANT: " ends the walk; for round i,
//     round_len = |tok(round)| and instruction_len = |tok(part0 + sep)| - 2
//     (tok = tokenizer_image_token when the sample has an image, else the plain
//     tokenizer), both minus 1 when i > 0 and legacy is false (LLaVA's check for
//     tokenizers >= 0.14, true of LLaVA-1.5's pinned 0.15.1); instruction_len
//     positions from cur_len are masked, cur_len += round_len; everything from
//     the final cur_len on is masked. If cur_len < model_max_length and
//     cur_len != total_len (the number of ids that are not the pad id, <unk>
//     in LLaVA v1), the whole sample is masked (LLaVA's "tokenization
//     mismatch").
// Images: a sample with an image first goes through preprocess_multimodal —
//   every turn holding "<image>" loses every occurrence, is stripped, and gets
//   "<image>\n" in front (then stripped again). A sample without an image keeps
//   "<image>" as ordinary text.
//
// Masks here are 1 = a label (trained on), 0 = IGNORE_INDEX. The image
// placeholder is `image_token_id` (the text vocabulary size, outside it).
// Text-only samples are not cut at model_max_length here (the trainer cuts
// sequences); the mismatch rule above gives the masks LLaVA gives either way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rules/text/sentencepiece_tokenizer.h"

namespace bm::rules::llava {

enum class Template { kPlain, kVicunaV1 };

// "plain" or "vicuna_v1" (LLaVA's names; "v1" is accepted for vicuna_v1).
Result<Template> ParseTemplate(std::string_view name);
std::string_view TemplateName(Template t);

// conv_vicuna_v1's system prompt.
inline constexpr std::string_view kVicunaSystem =
    "A chat between a curious user and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the user's questions.";
inline constexpr std::string_view kImageTag = "<image>";

struct Turn {
  std::string from;  // "human" or "gpt"
  std::string value;
};

struct TemplateOptions {
  Template kind = Template::kVicunaV1;
  bool legacy = false;              // the tokenizer's `legacy` (see above)
  int64_t model_max_length = 2048;  // LLaVA-1.5's --model_max_length
  int32_t image_token_id = -1;      // the placeholder's id (>= the vocabulary size)
};

struct Tokenized {
  std::vector<int32_t> ids;
  std::vector<uint8_t> mask;  // 1 = label
  int images = 0;             // placeholders in ids
  bool mismatch = false;      // LLaVA's tokenization mismatch: every label masked
};

// LlamaTokenizer(text).input_ids (BOS first), and tokenizer_image_token(text).
std::vector<int32_t> LlamaTokenize(const text::SentencePieceTokenizer& sp, std::string_view text,
                                   bool legacy);
std::vector<int32_t> TokenizeWithImages(const text::SentencePieceTokenizer& sp,
                                        std::string_view prompt, bool legacy,
                                        int32_t image_token_id);

// preprocess_multimodal on the turns of a sample that has an image.
void MoveImageTagToFront(std::vector<Turn>* turns);

// The prompt text of the vicuna_v1 template (after dropping a first turn that
// is not from human). Errors (kInvalidArgument): a role other than
// human/gpt, or turns that do not alternate (the turn's index in the message).
Result<std::string> VicunaPrompt(const std::vector<Turn>& turns);

// One sample: ids and masks as LLaVA's preprocess gives them. has_image says
// whether the sample has an image (then preprocess_multimodal applies and the
// prompt is tokenized with image placeholders). Errors (kInvalidArgument): the
// template's requirements above, with what is wrong.
Result<Tokenized> TokenizeSample(const text::SentencePieceTokenizer& sp, std::vector<Turn> turns,
                                 bool has_image, const TemplateOptions& options);

}  // namespace bm::rules::llava
