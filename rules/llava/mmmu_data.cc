#include "rules/llava/mmmu_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "base/formats/megatron_dataset.h"
#include "rules/input_file.h"
#include "rules/llava/image_set.h"
#include "rules/llava/llava_json.h"
#include "rules/llava/llava_template.h"
#include "rules/output_file.h"
#include "rules/text/sentencepiece_tokenizer.h"
#include "trainer/eval/decode_table.h"
#include "trainer/eval/mmmu_prompt.h"
#include "trainer/eval/mmmu_question.h"

namespace bm::rules::llava {
namespace {

namespace fs = std::filesystem;
using engine::ParamSpec;
using engine::ParamType;
using nlohmann::json;

constexpr const char* kSplit = "mmmu";
constexpr const char* kQuestionsFile = "questions.jsonl";

void RemoveMmmuOutputs(const std::string& out_dir) {
  std::error_code ec;
  for (const char* kind : {"", "_mask", "_images"})
    for (const char* ext : {".bin", ".idx"})
      fs::remove(fmt::format("{}/{}{}{}", out_dir, kSplit, kind, ext), ec);
  for (const char* name :
       {kImagesFile, kImagesMetaFile, kQuestionsFile, train::eval::kDecodeTableFile, "stats.json"})
    fs::remove(out_dir + "/" + name, ec);
}

// The decode table of the tokenizer (trainer/eval/decode_table.h's format).
json DecodeTableJson(const text::SentencePieceTokenizer& sp) {
  json pieces = json::array();
  for (size_t id = 0; id < sp.vocab_size(); ++id) {
    const text::SentencePieceTokenizer::PieceBytes p = sp.Bytes(static_cast<int32_t>(id));
    if (p.kind == text::SentencePieceTokenizer::PieceBytes::kSpecial)
      pieces.push_back(nullptr);
    else if (p.kind == text::SentencePieceTokenizer::PieceBytes::kByte)
      pieces.push_back(static_cast<unsigned char>(p.bytes[0]));
    else
      pieces.push_back(p.bytes);
  }
  return {{"format", train::eval::kDecodeTableFormat},
          {"version", train::eval::kDecodeTableVersion},
          {"tokenizer", "sentencepiece"},
          {"vocab_size", sp.vocab_size()},
          {"eos_id", *sp.eos_id()},
          {"strip_leading_space", sp.adds_dummy_prefix()},
          {"pieces", std::move(pieces)}};
}

Result<json> Run(const MmmuDataOptions& o, const std::string& out_dir, std::ostream* log) {
  Result<std::vector<train::eval::MmmuQuestion>> read = train::eval::ReadMmmuQuestions(o.questions);
  // A malformed line of the user's questions file is the user's mistake (exit 2).
  if (!read.ok() && read.status().code() == ErrorCode::kCorrupt)
    return Status(ErrorCode::kInvalidArgument, read.status().message());
  BM_ASSIGN_OR_RETURN(std::vector<train::eval::MmmuQuestion> questions, std::move(read));
  BM_ASSIGN_OR_RETURN(std::unique_ptr<text::SentencePieceTokenizer> sp,
                      text::SentencePieceTokenizer::Open(o.vocab));
  if (!sp->bos_id() || !sp->eos_id())
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: LLaVA's prompts need a model with <s> and </s> (a LLaMA tokenizer.model)",
                  o.vocab);
  const int32_t image_token_id = static_cast<int32_t>(sp->vocab_size());
  const std::string folder = fs::path(o.questions).parent_path().string();
  const std::string prefix = folder.empty() ? "" : folder + "/";
  auto where = [&](const train::eval::MmmuQuestion& q) {
    return fmt::format("{}:{} ({})", o.questions, q.line, q.id);
  };

  // image_1 of each question, each distinct file once, in order of first use.
  std::vector<ImageSource> images;
  std::unordered_map<std::string, int64_t> image_index;
  std::vector<int32_t> image_of;
  for (const train::eval::MmmuQuestion& q : questions) {
    std::string rel = q.images[0];
    if (!prefix.empty() && rel.starts_with(prefix)) rel = rel.substr(prefix.size());
    if (Status s = CheckImagePath(rel); !s.ok())
      return Errorf(ErrorCode::kInvalidArgument, "{}: image_1 {}", where(q), s.message());
    auto [it, fresh] = image_index.emplace(rel, static_cast<int64_t>(images.size()));
    if (fresh) images.push_back({rel, where(q)});
    image_of.push_back(static_cast<int32_t>(it->second));
  }
  BM_ASSIGN_OR_RETURN(json images_meta, WriteImageSet(images, folder.empty() ? "." : folder, o.clip,
                                                      o.threads, out_dir, log));

  BM_ASSIGN_OR_RETURN(
      formats::IndexedDatasetWriter ids_out,
      formats::IndexedDatasetWriter::Create(out_dir + "/" + kSplit, formats::DType::kInt32));
  BM_ASSIGN_OR_RETURN(formats::IndexedDatasetWriter mask_out,
                      formats::IndexedDatasetWriter::Create(out_dir + "/" + kSplit + "_mask",
                                                            formats::DType::kUInt8));
  BM_ASSIGN_OR_RETURN(formats::IndexedDatasetWriter images_out,
                      formats::IndexedDatasetWriter::Create(out_dir + "/" + kSplit + "_images",
                                                            formats::DType::kInt32));
  int64_t max_tokens = 0, total_tokens = 0, multiple_choice = 0;
  for (size_t i = 0; i < questions.size(); ++i) {
    const train::eval::MmmuQuestion& q = questions[i];
    const std::string prompt = train::eval::LlavaMmmuPrompt(q);
    const std::vector<int32_t> ids = TokenizeWithImages(*sp, prompt, o.legacy, image_token_id);
    const auto placeholders = std::count(ids.begin(), ids.end(), image_token_id);
    if (placeholders != 1)
      return Errorf(ErrorCode::kInvalidArgument,
                    "{}: the prompt holds {} \"<image>\" placeholders; LLaVA's MMMU prompt has "
                    "exactly one (image_1's; does the question spell \"<image>\"?)",
                    where(q), placeholders);
    BM_TRY(ids_out.AddSequence(ids));
    ids_out.EndDocument();
    BM_TRY(mask_out.AddSequence(std::vector<int32_t>(ids.size(), 0)));
    mask_out.EndDocument();
    BM_TRY(images_out.AddSequence(std::vector<int32_t>{image_of[i]}));
    images_out.EndDocument();
    const int64_t n = static_cast<int64_t>(ids.size()) - 1 + o.image_tokens;
    max_tokens = std::max(max_tokens, n);
    total_tokens += n;
    multiple_choice += q.multiple_choice ? 1 : 0;
  }
  BM_TRY(ids_out.Finish());
  BM_TRY(mask_out.Finish());
  BM_TRY(images_out.Finish());

  // The question lines, verbatim, in the order of the prompts.
  std::ifstream in(o.questions);
  std::string text, kept;
  size_t next = 0;
  for (int line = 1; std::getline(in, text) && next < questions.size(); ++line) {
    if (line != questions[next].line) continue;
    kept += text + "\n";
    ++next;
  }
  if (next != questions.size())
    return Errorf(ErrorCode::kIo, "{}: changed while it was read", o.questions);
  BM_TRY(WriteOutputFile(out_dir + "/" + kQuestionsFile, kept));
  BM_TRY(WriteOutputFile(out_dir + "/" + train::eval::kDecodeTableFile,
                         DecodeTableJson(*sp).dump() + "\n"));
  json stats = {{"task", "mmmu"},
                {"questions", questions.size()},
                {"multiple_choice", multiple_choice},
                {"open", static_cast<int64_t>(questions.size()) - multiple_choice},
                {"vocab_size", sp->vocab_size()},
                {"image_token_id", image_token_id},
                {"image_tokens", o.image_tokens},
                {"image_size", images_meta["size"]},
                {"pad_to_square", o.clip.pad_to_square},
                {"images", images_meta["count"]},
                {"bos_id", *sp->bos_id()},
                {"eot_id", *sp->eos_id()},
                {"tokenizer", "sentencepiece"},
                {"template", "vicuna_v1"},
                {"legacy", o.legacy},
                {"prompt_tokens", {{"max", max_tokens}, {"total", total_tokens}}},
                {"dtype", "int32"}};
  BM_TRY(WriteOutputJson(out_dir + "/stats.json", stats));
  if (log != nullptr)
    *log << fmt::format(
        "mmmu_data: {} questions ({} multiple choice), {} images, prompts of up "
        "to {} tokens\n",
        questions.size(), multiple_choice, images_meta["count"].get<int64_t>(), max_tokens);
  return stats;
}

class MmmuDataRule final : public engine::Rule {
 public:
  std::string_view name() const override { return "mmmu_data"; }
  int version() const override { return 1; }
  const std::vector<ParamSpec>& params() const override {
    static const std::vector<ParamSpec> specs = {
        {"input", ParamType::kInput, std::nullopt,
         "MMMU's questions as examples/tools/mmmu_to_jsonl.py writes them: a directory holding "
         "<split>.jsonl and its images (all of it in the key), or the .jsonl file"},
        {"split", ParamType::kString, json("validation"),
         "with a directory input: the file <split>.jsonl in it"},
        {"vocab", ParamType::kInput, std::nullopt,
         "the language model's SentencePiece tokenizer.model (a file, or a target holding one)"},
        {"legacy", ParamType::kBool, json(false),
         "the tokenizer's `legacy` (Vicuna-v1.5: false), as llava_data's"},
        engine::WithRange({"image_size", ParamType::kInt, json(336),
                           "square side of the preprocessed images (CLIP's crop size)"},
                          1),
        {"pad_to_square", ParamType::kBool, json(false),
         "pad to a square with CLIP's mean colour first; MMMU's LLaVA run does not (it calls "
         "the CLIP image processor directly)"},
        engine::WithRange({"image_tokens", ParamType::kInt, json(576),
                           "positions each image takes in the sequence (CLIP ViT-L/14 at 336: "
                           "576)"},
                          1),
        engine::WithRange(
            {"threads", ParamType::kInt, json(0), "image decoding threads (0: all cores)", false},
            0),
    };
    return specs;
  }
  std::vector<engine::ParamError> Check(const json& p) const override {
    std::vector<engine::ParamError> errors;
    if (p.contains("split") && (p["split"].get<std::string>().empty() ||
                                p["split"].get<std::string>().find('/') != std::string::npos))
      errors.push_back({"split", "a file name without '/' (validation, test, dev)"});
    return errors;
  }
  nlohmann::json OutputFacts(const json& p,
                             const std::vector<engine::UpstreamInput>&) const override {
    return {{"mmmu", true},
            {"image_size", p.value("image_size", int64_t{336})},
            {"image_tokens", p.value("image_tokens", int64_t{576})}};
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    const json& p = ctx.params;
    MmmuDataOptions o;
    o.questions = InputPath(ctx, p.at("input"));
    std::error_code ec;
    if (fs::is_directory(o.questions, ec))
      o.questions += "/" + p.at("split").get<std::string>() + ".jsonl";
    BM_ASSIGN_OR_RETURN(o.vocab, OneFileIn(InputPath(ctx, p.at("vocab")), "vocab"));
    o.legacy = p.at("legacy").get<bool>();
    o.clip.size = static_cast<int>(p.at("image_size").get<int64_t>());
    o.clip.pad_to_square = p.at("pad_to_square").get<bool>();
    o.image_tokens = static_cast<int>(p.at("image_tokens").get<int64_t>());
    const auto t = static_cast<int>(p.at("threads").get<int64_t>());
    o.threads = t > 0 ? t : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    BM_ASSIGN_OR_RETURN(json stats, MmmuDataToDirectory(o, ctx.out_dir, ctx.log));
    engine::StepResult result;
    result.metrics = stats;
    return result;
  }
};

}  // namespace

Result<json> MmmuDataToDirectory(const MmmuDataOptions& options, const std::string& out_dir,
                                 std::ostream* log) {
  Result<json> r = Run(options, out_dir, log);
  if (!r.ok()) RemoveMmmuOutputs(out_dir);
  return r;
}

std::unique_ptr<engine::Rule> MakeMmmuDataRule() { return std::make_unique<MmmuDataRule>(); }

}  // namespace bm::rules::llava
