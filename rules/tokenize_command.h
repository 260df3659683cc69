// `benchmake tokenize`: the tokenizer for people and scripts.
//
//   benchmake tokenize --vocab FILE [--tokenizer KIND] [--threads N] [--bos] [--eot] [INPUT|-]
//   benchmake tokenize --vocab FILE [--tokenizer KIND] --decode [INPUT|-]
//
// Encoding prints the ids of INPUT's bytes (stdin for "-" or no INPUT), one
// per line, as the tokenizer's Encode (rules/text/tokenizer.h: no BOS, no
// EOS); --bos prepends the beginning-of-document id, --eot appends the
// end-of-text id. --decode reads whitespace-separated ids and writes their
// text. The kind comes from --tokenizer (auto, sentencepiece, huggingface,
// gpt2, r50k_base, p50k_base, cl100k_base, o200k_base, bytes; --encoding is
// the same flag's old name), default auto: by the file's name
// (tokenizer.model → sentencepiece, tokenizer.json → huggingface,
// gpt2.tiktoken → gpt2).
// Its flags, help and completion: TokenizeSpec() (base/cli/flag_table.h).
// Errors: kInvalidArgument for bad flags or ids (exit 2), kNotFound/kIo for
// files.
#pragma once

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "base/cli/flag_table.h"
#include "base/result.h"

namespace bm::rules {

const cli::CommandSpec& TokenizeSpec();

// args: parsed with TokenizeSpec(). Reads stdin, writes stdout.
Status TokenizeCommand(const cli::ParsedArgs& args);

// The same with explicit streams, and from the words after "tokenize" (tests).
Status TokenizeCommand(const cli::ParsedArgs& args, std::istream& in, std::ostream& out);
Status TokenizeCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out);

}  // namespace bm::rules
