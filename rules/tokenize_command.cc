#include "rules/tokenize_command.h"

#include <charconv>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "rules/text/tokenizer.h"

namespace bm::rules {
namespace {

constexpr char kUsage[] =
    "usage: benchmake tokenize --vocab FILE [--tokenizer KIND] [--threads N] [--bos] [--eot] "
    "[--decode] [INPUT|-]";

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

Status TokenizeCommand(const std::vector<std::string>& args, std::istream& in, std::ostream& out) {
  std::string vocab, kind = "auto", input;
  int threads = 1;
  bool bos = false, eot = false, decode = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> Result<std::string> {
      if (i + 1 >= args.size())
        return Errorf(ErrorCode::kInvalidArgument, "{} needs a value\n{}", a, kUsage);
      return args[++i];
    };
    if ((a == "-C" || a == "-f") && i + 1 < args.size()) {
      ++i;  // global flags the CLI appends; tokenize does not use the workspace
    } else if (a == "--vocab") {
      BM_ASSIGN_OR_RETURN(vocab, value());
    } else if (a == "--tokenizer" || a == "--encoding") {
      BM_ASSIGN_OR_RETURN(kind, value());
    } else if (a == "--threads") {
      BM_ASSIGN_OR_RETURN(std::string n, value());
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), threads);
      if (ec != std::errc() || end != n.data() + n.size() || threads < 0) {
        return Errorf(ErrorCode::kInvalidArgument, "--threads {}: not a count", n);
      }
      if (threads == 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    } else if (a == "--bos") {
      bos = true;
    } else if (a == "--eot") {
      eot = true;
    } else if (a == "--decode") {
      decode = true;
    } else if (a == "-h" || a == "--help") {
      out << kUsage << "\n";
      return Status::Ok();
    } else if (a.starts_with("--")) {
      return Errorf(ErrorCode::kInvalidArgument, "unknown flag {}\n{}", a, kUsage);
    } else if (input.empty()) {
      input = a;
    } else {
      return Errorf(ErrorCode::kInvalidArgument, "one INPUT only\n{}", kUsage);
    }
  }
  if (vocab.empty() && kind != "bytes") {
    return Errorf(ErrorCode::kInvalidArgument, "--vocab is required\n{}", kUsage);
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
      if (!tok->bos_id()) {
        return Errorf(ErrorCode::kInvalidArgument, "--bos: tokenizer {} has no BOS token",
                      tok->name());
      }
      ids.push_back(*tok->bos_id());
    }
    const std::vector<int32_t> text_ids = tok->EncodeParallel(data, threads);
    ids.insert(ids.end(), text_ids.begin(), text_ids.end());
    if (eot) {
      if (!tok->eos_id()) {
        return Errorf(ErrorCode::kInvalidArgument, "--eot: tokenizer {} has no end-of-text token",
                      tok->name());
      }
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

Status TokenizeCommand(const std::vector<std::string>& args) {
  return TokenizeCommand(args, std::cin, std::cout);
}

}  // namespace bm::rules
