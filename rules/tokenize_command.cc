#include "rules/tokenize_command.h"

#include <charconv>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "base/real_filesystem.h"
#include "rules/text/tokenizer.h"

namespace bm::rules {

using cli::CommandSpec;
using cli::ParsedArgs;
using cli::ValueKind;

namespace {

Result<std::string> ReadInput(const std::string& input, std::istream& in) {
  if (input.empty() || input == "-") {
    std::ostringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }
  // Not an ifstream: one opens a directory and reads it as empty.
  return DiskFilesystem().ReadFile(input);
}

}  // namespace

const CommandSpec& TokenizeSpec() {
  static const CommandSpec kSpec{
      .name = "tokenize",
      .operands = "[INPUT|-]",
      .operand_kind = ValueKind::kFile,
      .max_operands = 1,
      .summary = "token ids of a text, one per line (or --decode ids to bytes)",
      .description =
          "Encodes the bytes of INPUT (stdin for - or none) with a tokenizer and prints the "
          "token ids, one per line, as the reference does for plain text (tiktoken's "
          "encode_ordinary, SentencePiece's EncodeAsIds, Hugging Face's encode without "
          "special tokens added). With --decode, reads whitespace-separated ids and writes "
          "their text.",
      .flags = {{.name = "--vocab",
                 .value_name = "FILE",
                 .kind = ValueKind::kFile,
                 .help = "the tokenizer file: a .tiktoken rank file, a SentencePiece "
                         "tokenizer.model or a Hugging Face tokenizer.json"},
                {.name = "--tokenizer",
                 .value_name = "KIND",
                 .kind = ValueKind::kChoice,
                 .help = "the kind of tokenizer (rules/text/tokenizer.h)",
                 .default_text = "auto: from the --vocab file's name (tokenizer.model: "
                                 "sentencepiece, tokenizer.json: huggingface, gpt2.tiktoken: "
                                 "gpt2)",
                 .choices = {"auto", "sentencepiece", "huggingface", "gpt2", "r50k_base",
                             "p50k_base", "cl100k_base", "o200k_base", "bytes"}},
                {.name = "--encoding",
                 .value_name = "KIND",
                 .kind = ValueKind::kChoice,
                 .help = "the old name of --tokenizer",
                 .choices = {"auto", "sentencepiece", "huggingface", "gpt2", "r50k_base",
                             "p50k_base", "cl100k_base", "o200k_base", "bytes"}},
                {.name = "--threads",
                 .value_name = "N",
                 .kind = ValueKind::kNumber,
                 .help = "encode with N threads; 0: one per core",
                 .default_text = "1"},
                {.name = "--bos", .help = "prepend the beginning-of-document id (LLaMA's <s>)"},
                {.name = "--eot", .help = "append the end-of-text id"},
                {.name = "--decode", .help = "turn ids back into bytes"}},
      .examples = {{"benchmake tokenize --vocab data/gpt2.tiktoken README.md", "GPT-2 ids"},
                   {"benchmake tokenize --vocab data/kjv_sp.model --bos README.md",
                    "SentencePiece ids as LLaMA's documents start"},
                   {"echo 15496 995 | benchmake tokenize --vocab data/gpt2.tiktoken --decode",
                    "prints \"Hello world\""}}};
  return kSpec;
}

Status TokenizeCommand(const ParsedArgs& args, std::istream& in, std::ostream& out) {
  std::string vocab = args.ValueOr("--vocab", "");
  if (args.Has("--tokenizer") && args.Has("--encoding"))
    return Status(ErrorCode::kInvalidArgument,
                  "--encoding is the old name of --tokenizer: give one of them");
  std::string kind = args.ValueOr("--tokenizer", args.ValueOr("--encoding", "auto"));
  std::string input = args.operands().empty() ? "" : args.operands()[0];
  bool bos = args.Has("--bos"), eot = args.Has("--eot"), decode = args.Has("--decode");
  int threads = 1;
  if (std::optional<std::string> n = args.Value("--threads")) {
    BM_ASSIGN_OR_RETURN(threads, cli::ParseIntFlag("--threads", *n));
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (vocab.empty() && kind != "bytes") {
    return Errorf(ErrorCode::kInvalidArgument, "tokenize needs --vocab FILE\n{}",
                  cli::UsageLine(TokenizeSpec()));
  }
  BM_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tok, text::OpenTokenizer(kind, vocab));
  BM_ASSIGN_OR_RETURN(std::string data, ReadInput(input, in));
  if (decode) {
    std::vector<int32_t> ids;
    std::istringstream words(data);
    for (std::string w; words >> w;) {
      int32_t id = 0;
      auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), id);
      if (ec != std::errc() || end != w.data() + w.size()) {
        return Errorf(ErrorCode::kInvalidArgument, "'{}' is not a token id", w);
      }
      ids.push_back(id);
    }
    BM_ASSIGN_OR_RETURN(std::string bytes, tok->Decode(ids));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  } else {
    std::vector<int32_t> ids;
    if (bos) {
      if (!tok->bos_id())
        return Errorf(ErrorCode::kInvalidArgument, "--bos: tokenizer {} has no BOS token",
                      tok->name());
      ids.push_back(*tok->bos_id());
    }
    const std::vector<int32_t> text_ids = tok->EncodeParallel(data, threads);
    ids.insert(ids.end(), text_ids.begin(), text_ids.end());
    if (eot) {
      if (!tok->eos_id())
        return Errorf(ErrorCode::kInvalidArgument, "--eot: tokenizer {} has no end-of-text token",
                      tok->name());
      ids.push_back(*tok->eos_id());
    }
    std::string text;
    text.reserve(ids.size() * 6);
    for (int32_t id : ids) {
      text += std::to_string(id);
      text += '\n';
    }
    out << text;
  }
  out.flush();
  if (!out) return Errorf(ErrorCode::kIo, "cannot write the output");
  return Status::Ok();
}

Status TokenizeCommand(const ParsedArgs& args) {
  return TokenizeCommand(args, std::cin, std::cout);
}

Status TokenizeCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out) {
  BM_ASSIGN_OR_RETURN(ParsedArgs parsed, cli::ParseCommandLine(TokenizeSpec(), args));
  return TokenizeCommand(parsed, in, out);
}

}  // namespace bm::rules
