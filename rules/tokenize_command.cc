#include "rules/tokenize_command.h"

#include <charconv>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "rules/text/encoding.h"

namespace bm::rules {

using engine::cli::CommandSpec;
using engine::cli::ParsedArgs;
using engine::cli::ValueKind;

namespace {

Result<std::string> ReadInput(const std::string& input, std::istream& in) {
  std::ostringstream buf;
  if (input.empty() || input == "-") {
    buf << in.rdbuf();
    return buf.str();
  }
  std::ifstream file(input, std::ios::binary);
  if (!file) return Errorf(ErrorCode::kNotFound, "cannot open {}", input);
  buf << file.rdbuf();
  return buf.str();
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
          "Encodes the bytes of INPUT (stdin for - or none) with a tiktoken vocabulary and "
          "prints the token ids, one per line, as tiktoken's encode_ordinary does. With "
          "--decode, reads whitespace-separated ids and writes their bytes.",
      .flags = {{.name = "--vocab",
                 .value_name = "FILE",
                 .kind = ValueKind::kFile,
                 .help = "the .tiktoken rank file (base64 token, rank)"},
                {.name = "--encoding",
                 .value_name = "NAME",
                 .kind = ValueKind::kChoice,
                 .help = "the pre-tokenizer and special tokens",
                 .default_text = "from the --vocab file's name (gpt2.tiktoken: gpt2)",
                 .choices = {"gpt2", "r50k_base", "p50k_base", "cl100k_base", "o200k_base",
                             "bytes"}},
                {.name = "--threads",
                 .value_name = "N",
                 .kind = ValueKind::kNumber,
                 .help = "encode with N threads; 0: one per core",
                 .default_text = "1"},
                {.name = "--eot", .help = "append the end-of-text id"},
                {.name = "--decode", .help = "turn ids back into bytes"}},
      .examples = {{"benchmake tokenize --vocab data/gpt2.tiktoken README.md", "GPT-2 ids"},
                   {"echo 15496 995 | benchmake tokenize --vocab data/gpt2.tiktoken --decode",
                    "prints \"Hello world\""}}};
  return kSpec;
}

Status TokenizeCommand(const ParsedArgs& args, std::istream& in, std::ostream& out) {
  std::string vocab = args.ValueOr("--vocab", "");
  std::string encoding_name = args.ValueOr("--encoding", "");
  std::string input = args.operands().empty() ? "" : args.operands()[0];
  bool eot = args.Has("--eot"), decode = args.Has("--decode");
  int threads = 1;
  if (std::optional<std::string> n = args.Value("--threads")) {
    BM_ASSIGN_OR_RETURN(threads, engine::cli::ParseIntFlag("--threads", *n));
    if (threads == 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (encoding_name.empty()) {
    if (vocab.empty()) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "tokenize needs --vocab FILE or --encoding NAME\n{}",
                    engine::cli::UsageLine(TokenizeSpec()));
    }
    encoding_name = text::Encoding::NameForRankFile(vocab);
    if (encoding_name.empty()) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "cannot tell the encoding of {} from its name; pass --encoding", vocab);
    }
  }
  BM_ASSIGN_OR_RETURN(text::Encoding enc, text::Encoding::Load(encoding_name, vocab));
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
    BM_ASSIGN_OR_RETURN(std::string bytes, enc.Decode(ids));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  } else {
    std::vector<int32_t> ids = enc.EncodeParallel(data, threads);
    if (eot) ids.push_back(enc.eot_id());
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
  BM_ASSIGN_OR_RETURN(ParsedArgs parsed, engine::cli::ParseCommandLine(TokenizeSpec(), args));
  return TokenizeCommand(parsed, in, out);
}

}  // namespace bm::rules
