// The llava_data and llava_images rules (docs/DATA.md): parameters, checks,
// and the glue from a step's context to llava_data.h / image_set.h.
#include <chrono>
#include <filesystem>
#include <thread>

#include "rules/input_file.h"
#include "rules/llava/image_set.h"
#include "rules/llava/llava_data.h"

namespace bm::rules::llava {
namespace {

namespace fs = std::filesystem;
using engine::ParamSpec;
using engine::ParamType;
using nlohmann::json;

int Threads(const json& p) {
  const auto t = static_cast<int>(p.at("threads").get<int64_t>());
  return t > 0 ? t : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

vision::ClipImageOptions ClipOptions(const json& p) {
  vision::ClipImageOptions c;
  c.size = static_cast<int>(p.at("image_size").get<int64_t>());
  c.pad_to_square = p.at("pad_to_square").get<bool>();
  return c;
}

const ParamSpec kThreads = engine::WithRange(
    {"threads", ParamType::kInt, json(0), "decoding and tokenizing threads (0: all cores)", false},
    0);
const ParamSpec kImageSize =
    engine::WithRange({"image_size", ParamType::kInt, json(336),
                       "square side of the preprocessed images (CLIP's crop size)"},
                      1);
const ParamSpec kImageTokens =
    engine::WithRange({"image_tokens", ParamType::kInt, json(576),
                       "positions each image takes in the sequence (CLIP ViT-L/14 at 336: 576)"},
                      1);
const ParamSpec kPad{"pad_to_square", ParamType::kBool, json(true),
                     "pad to a square with CLIP's mean colour first (LLaVA's image_aspect_ratio "
                     "\"pad\")"};

class LlavaImagesRule final : public engine::Rule {
 public:
  std::string_view name() const override { return "llava_images"; }
  int version() const override { return 1; }
  const std::vector<ParamSpec>& params() const override {
    static const std::vector<ParamSpec> specs = {
        {"input", ParamType::kInputList, std::nullopt,
         "LLaVA JSON files or targets; their distinct \"image\" paths, in order of first use"},
        {"image_folder", ParamType::kInput, std::nullopt,
         "the folder the \"image\" paths are relative to (a directory or a target)"},
        kImageSize,
        kPad,
        kThreads,
    };
    return specs;
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    const json& p = ctx.params;
    std::vector<std::string> inputs;
    for (const auto& in : p.at("input")) inputs.push_back(InputPath(ctx, in.get<std::string>()));
    BM_ASSIGN_OR_RETURN(std::vector<std::string> paths, ResolveJsonInputs(inputs));
    std::vector<ImageSource> images;
    std::unordered_map<std::string, int64_t> index;
    for (const std::string& path : paths) {
      BM_ASSIGN_OR_RETURN(std::vector<Sample> samples, ReadLlavaJson(path));
      CollectImages(samples, path, &images, &index);
    }
    BM_ASSIGN_OR_RETURN(json meta, WriteImageSet(images, InputPath(ctx, p.at("image_folder")),
                                                 ClipOptions(p), Threads(p), ctx.out_dir, ctx.log));
    engine::StepResult result;
    result.metrics = meta;
    result.metrics["threads"] = Threads(p);
    return result;
  }
};

class LlavaDataRule final : public engine::Rule {
 public:
  std::string_view name() const override { return "llava_data"; }
  int version() const override { return 1; }
  const std::vector<ParamSpec>& params() const override {
    static const std::vector<ParamSpec> specs = {
        {"input", ParamType::kInputList, std::nullopt,
         "LLaVA JSON files or targets (blip_laion_cc_sbu_558k.json, llava_v1_5_mix665k.json)"},
        {"vocab", ParamType::kInput, std::nullopt,
         "the language model's SentencePiece tokenizer.model (a file, or a target holding one)"},
        {"template", ParamType::kString, json("vicuna_v1"),
         "plain (pretraining: image + caption) or vicuna_v1 (finetuning: USER/ASSISTANT turns)"},
        {"legacy", ParamType::kBool, json(false),
         "the tokenizer's `legacy` (Vicuna-v1.5: false): no \"▁\" after </s>, and LLaVA's "
         "one-token correction of later rounds"},
        engine::WithRange({"model_max_length", ParamType::kInt, json(2048),
                           "LLaVA's model_max_length: its mismatch check applies below it"},
                          1),
        {"images", ParamType::kInputList, json::array(),
         "a llava_images target made from the same JSON (at most one)"},
        {"image_folder", ParamType::kInputList, json::array(),
         "without images: the image folder, preprocessed in this step (at most one)"},
        kImageSize,
        kPad,
        kImageTokens,
        {"valid_fraction", ParamType::kFloat, json(0.0),
         "share of samples held out for validation"},
        engine::WithRange({"seed", ParamType::kInt, json(1234), "seed of the train/valid split"},
                          engine::kInt64ParamMin, engine::kInt64ParamMax),
        kThreads,
    };
    return specs;
  }
  std::vector<engine::ParamError> Check(const json& p) const override {
    std::vector<engine::ParamError> errors;
    if (p.contains("template")) {
      auto t = ParseTemplate(p["template"].get<std::string>());
      if (!t.ok()) errors.push_back({"template", t.status().message()});
    }
    if (p.contains("valid_fraction")) {
      const double f = p["valid_fraction"].get<double>();
      if (!(f >= 0 && f < 1)) errors.push_back({"valid_fraction", "must be in [0, 1)"});
    }
    for (const char* list : {"images", "image_folder"}) {
      if (p.contains(list) && p[list].size() > 1) errors.push_back({list, "at most one"});
    }
    if (p.contains("images") && p.contains("image_folder") && !p["images"].empty() &&
        !p["image_folder"].empty()) {
      errors.push_back(
          {"image_folder", "set images (a llava_images target) or image_folder, not both"});
    }
    return errors;
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    const json& p = ctx.params;
    LlavaDataOptions o;
    for (const auto& in : p.at("input")) o.inputs.push_back(InputPath(ctx, in.get<std::string>()));
    BM_ASSIGN_OR_RETURN(o.vocab, OneFileIn(InputPath(ctx, p.at("vocab")), "vocab"));
    BM_ASSIGN_OR_RETURN(o.tmpl.kind, ParseTemplate(p.at("template").get<std::string>()));
    o.tmpl.legacy = p.at("legacy").get<bool>();
    o.tmpl.model_max_length = p.at("model_max_length").get<int64_t>();
    if (!p.at("images").empty()) o.images_dir = InputPath(ctx, p.at("images")[0]);
    if (!p.at("image_folder").empty()) o.image_folder = InputPath(ctx, p.at("image_folder")[0]);
    o.clip = ClipOptions(p);
    o.image_tokens = static_cast<int>(p.at("image_tokens").get<int64_t>());
    o.split.valid_fraction = p.at("valid_fraction");
    o.split.seed = static_cast<uint64_t>(p.at("seed").get<int64_t>());
    o.threads = Threads(p);
    const auto t0 = std::chrono::steady_clock::now();
    BM_ASSIGN_OR_RETURN(json stats, LlavaDataToDirectory(o, ctx.out_dir, ctx.log));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (ctx.log != nullptr) {
      *ctx.log << fmt::format(
          "llava_data: {} samples ({} with an image), {} tokens, {} labels, "
          "{:.2f} s\n",
          stats["samples"].get<uint64_t>(), stats["samples_with_image"].get<uint64_t>(),
          stats["tokens"].get<uint64_t>(), stats["labels"].get<uint64_t>(), seconds);
    }
    engine::StepResult result;
    result.metrics = stats;
    result.metrics["time_s"] = seconds;
    result.metrics["threads"] = o.threads;
    return result;
  }
};

}  // namespace

std::unique_ptr<engine::Rule> MakeLlavaDataRule() { return std::make_unique<LlavaDataRule>(); }
std::unique_ptr<engine::Rule> MakeLlavaImagesRule() { return std::make_unique<LlavaImagesRule>(); }

}  // namespace bm::rules::llava
