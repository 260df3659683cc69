#include "rules/tokenize.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "base/archive.h"
#include "rules/encode_documents.h"
#include "rules/input_file.h"
#include "rules/output_file.h"
#include "rules/pretokenized_input.h"
#include "rules/text/tokenizer.h"

namespace bm::rules {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct InputFile {
  std::string path;
  Format format;         // for an archive: of its members when the format is not "auto"
  bool archive = false;  // compressed or a tar (base/archive.h): read member by member
  std::string index;     // kPaddle: the PREFIX_idx.npz companion of PREFIX_ids.npy
};

constexpr std::string_view kPaddleIds = "_ids.npy", kPaddleIdx = "_idx.npz";

// The file's FirstNonBlankLine, read line by line.
std::string FirstNonBlankLineOf(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (const std::string_view first = FirstNonBlankLine(line); !first.empty())
      return std::string(first);  // (a file of lone-CR line ends is one getline)
  }
  return "";
}

// Files of the inputs in order: a directory contributes its regular files,
// recursively, sorted by path, hidden names excluded. Paddle index companions
// (PREFIX_idx.npz) are not inputs: each goes with its PREFIX_ids.npy, found
// beside it or, when two download targets hold the pair, among the inputs.
Result<std::vector<InputFile>> ResolveInputs(const TokenizeOptions& options) {
  std::vector<std::string> paths;
  for (const std::string& input : options.inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(input, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.starts_with(".")) {
          if (it->is_directory()) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file()) found.push_back(it->path());
      }
      if (ec) return Errorf(ErrorCode::kIo, "cannot list {}: {}", input, ec.message());
      std::sort(found.begin(), found.end());
      paths.insert(paths.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input, ec)) {
      paths.push_back(input);
    } else {
      return Errorf(ErrorCode::kNotFound, "input {} does not exist", input);
    }
  }
  std::map<std::string, std::string> indexes;  // file name → path
  std::erase_if(paths, [&](const std::string& p) {
    if (!p.ends_with(kPaddleIdx)) return false;
    indexes.emplace(fs::path(p).filename().string(), p);
    return true;
  });
  if (paths.empty()) return Errorf(ErrorCode::kInvalidArgument, "no input files");
  std::vector<InputFile> files;
  for (const std::string& p : paths) {
    const bool archive = IsCompressedOrArchive(p);
    Format f = Format::kText;
    if (options.format != "auto") {
      BM_ASSIGN_OR_RETURN(f, ParseFormat(options.format));
    } else if (!archive) {
      f = DetectFormat(p, p.ends_with(".jsonl") ? FirstNonBlankLineOf(p) : "");
    }
    InputFile file{p, f, archive, ""};
    if (f == Format::kPaddle) {
      if (!p.ends_with(kPaddleIds)) {
        return Errorf(ErrorCode::kInvalidArgument, "{}: paddle input must be named PREFIX{}", p,
                      kPaddleIds);
      }
      const std::string beside =
          p.substr(0, p.size() - kPaddleIds.size()) + std::string(kPaddleIdx);
      auto it = indexes.find(fs::path(beside).filename().string());
      file.index = fs::exists(beside) || it == indexes.end() ? beside : it->second;
    }
    files.push_back(std::move(file));
  }
  return files;
}

// The documents of an archive's members (base/archive.h ForEachMember), each
// member's format detected from its name under "auto".
Status ReadArchiveDocuments(const InputFile& f, const TokenizeOptions& options, bool masks,
                            std::vector<Document>* docs, json* formats) {
  return ForEachMember(f.path, [&](const std::string& name, std::string bytes) -> Status {
    const std::string where = f.path + ":" + name;
    Format format = f.format;
    if (options.format == "auto") {
      format = DetectFormat(name, FirstNonBlankLine(bytes));
    }
    if (format == Format::kNpy || format == Format::kPaddle) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "{}: token ids ({}) are not read from archives; unpack it with the download "
                    "rule's unpack",
                    where, FormatName(format));
    }
    if (!masks && (format == Format::kAlpaca || format == Format::kConversations)) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "{}: {} data inside an archive needs format = \"{}\" set on the target", where,
                    FormatName(format), FormatName(format));
    }
    if (std::find(formats->begin(), formats->end(), FormatName(format)) == formats->end())
      formats->push_back(FormatName(format));
    return ParseDocuments(bytes, where, format, options.read, docs);
  });
}

void RemoveOutputs(const std::string& out_dir) {
  for (const char* name : {"train", "valid", "train_mask", "valid_mask"}) {
    for (const char* ext : {".bin", ".idx"}) fs::remove(out_dir + "/" + name + ext);
  }
  fs::remove(out_dir + "/stats.json");
}

Result<json> Tokenize(const TokenizeOptions& options, const std::string& out_dir,
                      std::ostream* log) {
  BM_ASSIGN_OR_RETURN(std::vector<InputFile> files, ResolveInputs(options));
  BM_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                      text::OpenTokenizer(options.tokenizer, options.vocab));
  if (!tokenizer->eos_id()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "tokenizer {} ({}) has no end-of-text token, which ends every document",
                  tokenizer->name(), options.vocab);
  }
  const int32_t eos = *tokenizer->eos_id();
  bool masks = false;
  json formats = json::array();
  for (const InputFile& f : files) {
    masks |= f.format == Format::kAlpaca || f.format == Format::kConversations;
    if (f.archive && options.format == "auto") continue;  // members' formats, as they are read
    if (std::find(formats.begin(), formats.end(), FormatName(f.format)) == formats.end()) {
      formats.push_back(FormatName(f.format));
    }
  }
  const formats::DType dtype = formats::DTypeForVocab(tokenizer->vocab_size());
  BM_ASSIGN_OR_RETURN(SplitDatasetWriter writer,
                      SplitDatasetWriter::Create(out_dir, dtype, masks, options.split));
  uint64_t documents = 0, tokens = 0, bytes = 0;
  const bool budget = options.max_tokens > 0;
  for (const InputFile& f : files) {
    if (budget && tokens >= options.max_tokens) break;
    if (log != nullptr) {
      *log << "tokenize: " << f.path << " ("
           << (f.archive && options.format == "auto" ? "archive" : FormatName(f.format)) << ")\n";
    }
    if (!f.archive && (f.format == Format::kPaddle || f.format == Format::kNpy)) {
      if (budget) {
        return Errorf(ErrorCode::kInvalidArgument,
                      "{}: max_tokens applies to text inputs; token ids ({}) are copied whole",
                      f.path, FormatName(f.format));
      }
      BM_ASSIGN_OR_RETURN(ConvertedStats c,
                          f.format == Format::kPaddle
                              ? ConvertPaddle(f.path, f.index, tokenizer->vocab_size(), writer)
                              : ConvertNpy(f.path, eos, tokenizer->vocab_size(), writer));
      documents += c.documents;
      tokens += c.tokens;
      continue;
    }
    std::vector<Document> docs;
    if (f.archive) {
      BM_TRY(ReadArchiveDocuments(f, options, masks, &docs, &formats));
    } else {
      BM_TRY(ReadDocuments(f.path, f.format, options.read, &docs));
    }
    const std::vector<EncodedDocument> encoded = EncodeDocuments(*tokenizer, docs, options.threads);
    for (const EncodedDocument& e : encoded) {
      // The document that reaches the budget is kept whole, then input stops.
      if (budget && tokens >= options.max_tokens) break;
      writer.BeginDocument();
      BM_TRY(writer.AddSequence(e.ids, e.mask).WithContext(f.path));
      writer.EndDocument();
      tokens += e.ids.size();
      bytes += e.bytes;
      ++documents;
    }
  }
  BM_TRY(writer.Finish());
  json stats = {
      {"documents", documents},
      {"tokens", tokens},
      {"bytes", bytes},
      {"bytes_per_token", tokens == 0 ? 0.0 : static_cast<double>(bytes) / tokens},
      {"vocab_size", tokenizer->vocab_size()},
      {"eot_id", eos},
      {"tokenizer", tokenizer->name()},
      {"dtype", formats::DTypeName(dtype)},
      {"formats", formats},
      {"masks", masks},
      {"train", {{"documents", writer.train().documents}, {"tokens", writer.train().tokens}}},
      {"valid", {{"documents", writer.valid().documents}, {"tokens", writer.valid().tokens}}},
      {"split",
       {{"rule", SplitRule::kDescription},
        {"seed", options.split.seed},
        {"valid_fraction", options.split.valid_fraction},
        {"train_documents", writer.train().documents},
        {"valid_documents", writer.valid().documents}}},
  };
  if (tokenizer->adds_bos()) stats["bos_id"] = *tokenizer->bos_id();
  if (log != nullptr && options.split.valid_fraction > 0 && writer.valid().documents == 0) {
    *log << "tokenize: warning: valid_fraction " << options.split.valid_fraction
         << " put no document in valid (" << documents << " documents)\n";
  }
  BM_TRY(WriteOutputJson(out_dir + "/stats.json", stats));
  return stats;
}

}  // namespace

Result<json> TokenizeToDirectory(const TokenizeOptions& options, const std::string& out_dir,
                                 std::ostream* log) {
  Result<json> r = Tokenize(options, out_dir, log);
  if (!r.ok()) RemoveOutputs(out_dir);
  return r;
}

namespace {

class TokenizeRule final : public engine::Rule {
 public:
  std::string_view name() const override { return "tokenize"; }
  int version() const override { return 1; }

  const std::vector<engine::ParamSpec>& params() const override {
    using engine::ParamType;
    static const PromptTemplates t = DefaultPromptTemplates();
    static const std::vector<engine::ParamSpec> specs = {
        {"input", ParamType::kInputList, std::nullopt,
         "files or targets to tokenize (a target's whole output directory)"},
        {"format", ParamType::kString, json("auto"),
         "auto, text, jsonl, alpaca, conversations, npy, paddle (auto: by file name)"},
        {"tokenizer", ParamType::kString, json("auto"),
         "auto (by the vocab file), sentencepiece, huggingface, or a tiktoken encoding: "
         "gpt2 (= r50k_base), p50k_base, cl100k_base, o200k_base, bytes"},
        {"vocab", ParamType::kInput, json("data/gpt2.tiktoken"),
         "the tokenizer's file: a tiktoken rank file, a SentencePiece tokenizer.model or a "
         "Hugging Face tokenizer.json (ignored by tokenizer = \"bytes\")"},
        {"text_field", ParamType::kString, json("text"), "the JSONL field holding the text"},
        {"document_start", ParamType::kString, json(""),
         "plain text: a line matching this regex starts a new document (\"\": one per file)"},
        {"prompt_template", ParamType::kString, json(t.prompt),
         "Alpaca prompt without input ({instruction})"},
        {"prompt_template_input", ParamType::kString, json(t.prompt_input),
         "Alpaca prompt with input ({instruction}, {input})"},
        {"system_template", ParamType::kString, json(t.system),
         "conversation prefix when a record has system or instruction ({system})"},
        {"human_template", ParamType::kString, json(t.human),
         "a human turn ({value}), not trained on"},
        {"gpt_template", ParamType::kString, json(t.gpt), "a gpt turn ({value}), trained on"},
        engine::WithRange({"max_tokens", ParamType::kInt, json(0),
                           "stop after the document that brings the total to this many tokens "
                           "(0: all input)"},
                          0, engine::kInt64ParamMax),
        {"valid_fraction", ParamType::kFloat, json(0.05),
         "share of documents held out for validation, by whole documents"},
        engine::WithRange({"seed", ParamType::kInt, json(1234), "seed of the train/valid split"},
                          engine::kInt64ParamMin, engine::kInt64ParamMax),
        engine::WithRange(
            {"threads", ParamType::kInt, json(0), "encoding threads (0: all cores)", false}, 0),
    };
    return specs;
  }

  std::vector<engine::ParamError> Check(const json& p) const override {
    std::vector<engine::ParamError> errors;
    if (p.contains("format") && p["format"] != "auto" &&
        !ParseFormat(p["format"].get<std::string>()).ok()) {
      errors.push_back({"format", ParseFormat(p["format"].get<std::string>()).status().message()});
    }
    if (p.contains("valid_fraction")) {
      const double f = p["valid_fraction"].get<double>();
      if (!(f >= 0 && f < 1)) errors.push_back({"valid_fraction", "must be in [0, 1)"});
    }
    // Kind and file, by name (the file may be a target's output, not built yet).
    if (p.contains("tokenizer")) {
      const std::string kind = p["tokenizer"].get<std::string>();
      const std::string vocab = p.contains("vocab") ? p["vocab"].get<std::string>() : "";
      const Status s = text::CheckTokenizerFile(kind, vocab);
      if (!s.ok()) {
        const bool kind_known = text::CheckTokenizerFile(kind, "").ok();
        errors.push_back({kind_known ? "vocab" : "tokenizer", s.message()});
      }
    }
    return errors;
  }

  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    const json& p = ctx.params;
    TokenizeOptions o;
    for (const auto& in : p.at("input")) o.inputs.push_back(InputPath(ctx, in.get<std::string>()));
    o.format = p.at("format");
    o.tokenizer = p.at("tokenizer");
    BM_ASSIGN_OR_RETURN(o.vocab, OneFileIn(InputPath(ctx, p.at("vocab")), "vocab"));
    o.max_tokens = static_cast<uint64_t>(p.at("max_tokens").get<int64_t>());
    o.read.text_field = p.at("text_field");
    o.read.document_start = p.at("document_start");
    o.read.templates.prompt = p.at("prompt_template");
    o.read.templates.prompt_input = p.at("prompt_template_input");
    o.read.templates.system = p.at("system_template");
    o.read.templates.human = p.at("human_template");
    o.read.templates.gpt = p.at("gpt_template");
    o.split.valid_fraction = p.at("valid_fraction");
    o.split.seed = static_cast<uint64_t>(p.at("seed").get<int64_t>());
    o.threads = static_cast<int>(p.at("threads").get<int64_t>());
    if (o.threads == 0)
      o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

    const auto t0 = std::chrono::steady_clock::now();
    BM_ASSIGN_OR_RETURN(json stats, TokenizeToDirectory(o, ctx.out_dir, ctx.log));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    engine::StepResult result;
    result.metrics = stats;
    result.metrics["time_s"] = seconds;
    result.metrics["threads"] = o.threads;
    if (ctx.log != nullptr) {
      *ctx.log << fmt::format("tokenize: {} documents, {} tokens, {:.2f} bytes/token, {:.2f} s\n",
                              stats["documents"].get<uint64_t>(), stats["tokens"].get<uint64_t>(),
                              stats["bytes_per_token"].get<double>(), seconds);
    }
    return result;
  }
};

}  // namespace

std::unique_ptr<engine::Rule> MakeTokenizeRule() { return std::make_unique<TokenizeRule>(); }

}  // namespace bm::rules
