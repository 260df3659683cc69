#include "rules/tokenize_command.h"

#include <charconv>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <thread>

#include "rules/text/encoding.h"

namespace bm::rules {
namespace {

constexpr char kUsage[] =
    "usage: benchmake tokenize --vocab FILE [--encoding NAME] [--threads N] [--eot] [--decode] "
    "[INPUT|-]";

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
  std::string vocab, encoding_name, input;
  int threads = 1;
  bool eot = false, decode = false;
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
    } else if (a == "--encoding") {
      BM_ASSIGN_OR_RETURN(encoding_name, value());
    } else if (a == "--threads") {
      BM_ASSIGN_OR_RETURN(std::string n, value());
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), threads);
      if (ec != std::errc() || end != n.data() + n.size() || threads < 0) {
        return Errorf(ErrorCode::kInvalidArgument, "--threads {}: not a count", n);
      }
      if (threads == 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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
  if (encoding_name.empty()) {
    if (vocab.empty())
      return Errorf(ErrorCode::kInvalidArgument, "--vocab is required\n{}", kUsage);
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

Status TokenizeCommand(const std::vector<std::string>& args) {
  return TokenizeCommand(args, std::cin, std::cout);
}

}  // namespace bm::rules
