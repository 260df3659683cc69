#include "rules/llava/llava_data.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "base/formats/megatron_dataset.h"
#include "rules/llava/image_set.h"
#include "rules/llava/llava_json.h"
#include "rules/output_file.h"
#include "rules/text/sentencepiece_tokenizer.h"

namespace bm::rules::llava {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kBlock = 8192;  // samples tokenized in parallel before they are written

struct InputFile {
  std::string path;
  std::vector<Sample> samples;
};

void RemoveLlavaOutputs(const std::string& out_dir) {
  std::error_code ec;
  for (const char* side : {"train", "valid"}) {
    for (const char* kind : {"", "_mask", "_images"}) {
      for (const char* ext : {".bin", ".idx"}) {
        fs::remove(fmt::format("{}/{}{}{}", out_dir, side, kind, ext), ec);
      }
    }
  }
  for (const char* name : {kImagesFile, kImagesMetaFile, "stats.json"}) {
    fs::remove(out_dir + "/" + name, ec);
  }
}

// A hard link to src at dst (the cache stores one copy), else a copy.
Status LinkOrCopy(const std::string& src, const std::string& dst) {
  std::error_code ec;
  fs::create_hard_link(src, dst, ec);
  if (!ec) return Status::Ok();
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
  if (ec) return Errorf(ErrorCode::kIo, "cannot copy {} to {}: {}", src, dst, ec.message());
  return Status::Ok();
}

Result<json> Run(const LlavaDataOptions& o, const std::string& out_dir, std::ostream* log) {
  BM_ASSIGN_OR_RETURN(std::vector<std::string> paths, ResolveJsonInputs(o.inputs));
  BM_ASSIGN_OR_RETURN(std::unique_ptr<text::SentencePieceTokenizer> sp,
                      text::SentencePieceTokenizer::Open(o.vocab));
  if (!sp->bos_id() || !sp->eos_id()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: LLaVA's templates need a model with <s> and </s> (a LLaMA tokenizer.model)",
                  o.vocab);
  }
  TemplateOptions tmpl = o.tmpl;
  tmpl.image_token_id = static_cast<int32_t>(sp->vocab_size());

  std::vector<InputFile> files;
  for (const std::string& p : paths) {
    BM_ASSIGN_OR_RETURN(std::vector<Sample> samples, ReadLlavaJson(p));
    if (log != nullptr) *log << "llava_data: " << p << ": " << samples.size() << " samples\n";
    files.push_back({p, std::move(samples)});
  }

  // The images: an image set given, or made here from the folder.
  std::unordered_map<std::string, int64_t> image_index;
  json images_meta = nullptr;
  const Sample* first_with_image = nullptr;
  std::string first_where;
  for (const InputFile& f : files) {
    for (size_t i = 0; i < f.samples.size() && first_with_image == nullptr; ++i) {
      if (f.samples[i].image) {
        first_with_image = &f.samples[i];
        first_where = SampleWhere(f.path, i, f.samples[i].id);
      }
    }
  }
  if (!o.images_dir.empty()) {
    BM_ASSIGN_OR_RETURN(ImageSet set, ReadImageSet(o.images_dir));
    image_index = std::move(set.index);
    images_meta = std::move(set.meta);
    for (const char* name : {kImagesFile, kImagesMetaFile}) {
      BM_TRY(LinkOrCopy(o.images_dir + "/" + name, out_dir + "/" + name));
    }
  } else if (!o.image_folder.empty()) {
    std::vector<ImageSource> images;
    for (const InputFile& f : files) CollectImages(f.samples, f.path, &images, &image_index);
    BM_ASSIGN_OR_RETURN(images_meta,
                        WriteImageSet(images, o.image_folder, o.clip, o.threads, out_dir, log));
  } else if (first_with_image != nullptr) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{} has an image ({}); set images (a llava_images target) or image_folder",
                  first_where, *first_with_image->image);
  } else {
    // No image anywhere: an empty image set, so that every dataset has the same files.
    BM_ASSIGN_OR_RETURN(images_meta, WriteImageSet({}, "", o.clip, 1, out_dir, nullptr));
  }

  BM_ASSIGN_OR_RETURN(SplitDatasetWriter writer,
                      SplitDatasetWriter::Create(out_dir, formats::DType::kInt32, true, o.split));
  std::optional<formats::IndexedDatasetWriter> image_writers[2];
  for (int side = 0; side < 2; ++side) {
    BM_ASSIGN_OR_RETURN(
        image_writers[side],
        formats::IndexedDatasetWriter::Create(
            out_dir + (side == 0 ? "/train_images" : "/valid_images"), formats::DType::kInt32));
  }
  uint64_t samples = 0, with_image = 0, tokens = 0, labels = 0, mismatched = 0, unused_images = 0;
  uint64_t side_samples[2] = {0, 0};
  for (const InputFile& f : files) {
    for (size_t begin = 0; begin < f.samples.size(); begin += kBlock) {
      const size_t end = std::min(f.samples.size(), begin + kBlock);
      std::vector<std::optional<Result<Tokenized>>> block(end - begin);
      std::atomic<size_t> next{begin};
      auto worker = [&]() {
        for (size_t i; (i = next.fetch_add(1)) < end;) {
          const Sample& s = f.samples[i];
          block[i - begin].emplace(TokenizeSample(*sp, s.conversations, s.image.has_value(), tmpl));
        }
      };
      std::vector<std::thread> pool;
      const int n = std::max(1, std::min<int>(o.threads, static_cast<int>(end - begin)));
      for (int t = 1; t < n; ++t) pool.emplace_back(worker);
      worker();
      for (auto& t : pool) t.join();

      for (size_t i = begin; i < end; ++i) {
        const Sample& s = f.samples[i];
        Result<Tokenized>& r = *block[i - begin];
        if (!r.ok()) {
          return Errorf(r.status().code(), "{}: {}", SampleWhere(f.path, i, s.id),
                        r.status().message());
        }
        std::vector<int32_t> image_ids;
        if (s.image) {
          ++with_image;
          if (r->images > 1) {
            return Errorf(ErrorCode::kInvalidArgument,
                          "{}: {} \"<image>\" placeholders for one image",
                          SampleWhere(f.path, i, s.id), r->images);
          }
          auto it = image_index.find(*s.image);
          if (it == image_index.end()) {
            return Errorf(ErrorCode::kInvalidArgument,
                          "{}: image {} is not in the image set {} (made from other JSON?)",
                          SampleWhere(f.path, i, s.id), *s.image, o.images_dir);
          }
          if (r->images == 1) {
            image_ids.push_back(static_cast<int32_t>(it->second));
          } else {
            ++unused_images;  // no "<image>" in its turns: LLaVA's model ignores the image
          }
        }
        const int side = o.split.IsValid(samples) ? 1 : 0;
        writer.BeginDocument();
        BM_TRY(writer.AddSequence(r->ids, r->mask).WithContext(SampleWhere(f.path, i, s.id)));
        writer.EndDocument();
        BM_TRY(image_writers[side]->AddSequence(image_ids));
        image_writers[side]->EndDocument();
        ++side_samples[side];
        ++samples;
        tokens += r->ids.size();
        labels += static_cast<uint64_t>(std::count(r->mask.begin(), r->mask.end(), 1));
        mismatched += r->mismatch ? 1 : 0;
      }
    }
  }
  BM_TRY(writer.Finish());
  for (auto& w : image_writers) BM_TRY(w->Finish());
  if (log != nullptr && mismatched > 0) {
    *log << fmt::format(
        "llava_data: warning: {} of {} samples fully masked (LLaVA's \"tokenization mismatch\"; "
        "check `legacy`)\n",
        mismatched, samples);
  }
  json stats = {
      {"samples", samples},
      {"samples_with_image", with_image},
      {"images_unused", unused_images},
      {"images", images_meta["count"]},
      {"image_size", images_meta["size"]},
      {"tokens", tokens},
      {"labels", labels},
      {"mismatched", mismatched},
      {"vocab_size", sp->vocab_size()},
      {"image_token_id", tmpl.image_token_id},
      {"image_tokens", o.image_tokens},
      {"bos_id", *sp->bos_id()},
      {"eot_id", *sp->eos_id()},
      {"tokenizer", "sentencepiece"},
      {"template", TemplateName(tmpl.kind)},
      {"legacy", tmpl.legacy},
      {"model_max_length", tmpl.model_max_length},
      {"dtype", "int32"},
      {"train", {{"samples", side_samples[0]}, {"tokens", writer.train().tokens}}},
      {"valid", {{"samples", side_samples[1]}, {"tokens", writer.valid().tokens}}},
      {"split",
       {{"rule", SplitRule::kDescription},
        {"seed", o.split.seed},
        {"valid_fraction", o.split.valid_fraction}}},
  };
  BM_TRY(WriteOutputJson(out_dir + "/stats.json", stats));
  return stats;
}

}  // namespace

Result<std::vector<std::string>> ResolveJsonInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(in, ec)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && !name.starts_with(".") && name.ends_with(".json"))
          found.push_back(e.path().string());
      }
      if (ec) return Errorf(ErrorCode::kIo, "cannot list {}: {}", in, ec.message());
      if (found.empty()) {
        return Errorf(ErrorCode::kInvalidArgument, "input {} holds no .json file", in);
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(in, ec)) {
      out.push_back(in);
    } else {
      return Errorf(ErrorCode::kNotFound, "input {} does not exist", in);
    }
  }
  if (out.empty()) return Errorf(ErrorCode::kInvalidArgument, "no input JSON files");
  return out;
}

Result<json> LlavaDataToDirectory(const LlavaDataOptions& options, const std::string& out_dir,
                                  std::ostream* log) {
  Result<json> r = Run(options, out_dir, log);
  if (!r.ok()) RemoveLlavaOutputs(out_dir);
  return r;
}

}  // namespace bm::rules::llava
