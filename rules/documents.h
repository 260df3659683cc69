// Documents: what the tokenize rule reads from its inputs before encoding.
//
// A document is a list of segments; each segment is text plus whether the
// model is trained on it (the loss mask). Pretraining text is one trained
// segment; an instruction or a conversation alternates untrained prompt
// segments and trained response segments. The rule encodes each segment on
// its own, concatenates them, and ends the document with end-of-text.
//
// Input formats (Format):
//   kText           plain UTF-8 text. Without a document_start pattern the
//                   whole file is one document; with one, a line matching it
//                   (a regex search on ICU's engine, rules/text/line_regex.h)
//                   starts a new document. The documents' bytes concatenate to the file.
//   kJsonl          one JSON object per line with a string field (text_field)
//   kAlpaca         a JSON list of {instruction, input, output} (Stanford
//                   Alpaca), or the same objects one per line (.jsonl)
//   kConversations  JSONL {conversations: [{from: human|gpt, value}], and an
//                   optional instruction or system} (FlagScale's Aquila data), or
//                   a JSON list of the same objects (LLaVA's llava_v1_5_mix665k.json)
// Blank JSONL lines are skipped; a UTF-8 byte order mark opening a JSON file is
// ignored (RFC 8259 8.1). Errors name the file and line (a list: the item); text that
// is not JSON (a syntax error, invalid UTF-8, a lone surrogate escape) also the
// column and the parser's reason, kInvalidArgument.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::rules {

struct Segment {
  std::string text;
  bool trained = true;
};

struct Document {
  std::vector<Segment> segments;
};

enum class Format { kText, kJsonl, kAlpaca, kConversations, kNpy, kPaddle };

// "text", "jsonl", "alpaca", "conversations", "npy", "paddle".
std::string_view FormatName(Format format);
Result<Format> ParseFormat(std::string_view name);
// Format by file name: *_ids.npy → kPaddle, *.npy → kNpy, *.json → kAlpaca,
// *.jsonl → kConversations when the first object has "conversations",
// kAlpaca when it has "instruction" and "output", kJsonl otherwise; anything
// else → kText. first_line: the file's FirstNonBlankLine.
Format DetectFormat(const std::string& path, std::string_view first_line);
// The first line of contents that is not blank (spaces, tabs and '\r' only),
// without its '\n'; "" when there is none. Blank JSONL lines are skipped, so
// format detection skips them too.
std::string_view FirstNonBlankLine(std::string_view contents);

// How instructions and conversations become prompt and response text.
// Placeholders: {instruction} {input} {value} {system}.
struct PromptTemplates {
  std::string prompt;        // Alpaca, empty input
  std::string prompt_input;  // Alpaca, with input
  std::string system;        // conversation prefix when it has instruction/system
  std::string human;         // a human turn (untrained)
  std::string gpt;           // a gpt turn (trained)
};
PromptTemplates DefaultPromptTemplates();  // Stanford Alpaca's, "### Human:" turns

struct ReadOptions {
  std::string text_field = "text";
  std::string document_start;  // kText only; "" = one document per file
  PromptTemplates templates = DefaultPromptTemplates();
};

// Reads one file of a text format (not kNpy/kPaddle), appending documents.
Status ReadDocuments(const std::string& path, Format format, const ReadOptions& options,
                     std::vector<Document>* out);

// Parses contents as if read from `origin` (for tests and the CLI's stdin).
Status ParseDocuments(std::string_view contents, std::string_view origin, Format format,
                      const ReadOptions& options, std::vector<Document>* out);

// Replaces each {name} of vars in text.
std::string RenderTemplate(std::string_view text,
                           const std::vector<std::pair<std::string, std::string>>& vars);

}  // namespace bm::rules
