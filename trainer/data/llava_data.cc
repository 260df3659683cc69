#include "trainer/data/llava_data.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "trainer/data/token_data.h"

namespace bm::train {
namespace {

Result<nlohmann::json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Errorf(ErrorCode::kNotFound, "{} is missing", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return Errorf(ErrorCode::kCorrupt, "{} is not a JSON object", path);
  return j;
}

Result<int64_t> IntField(const nlohmann::json& j, const char* key, const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{} has no \"{}\" (a non-negative integer); a llava_data step writes it", path,
                  key);
  return it->get<int64_t>();
}

Result<std::array<float, 3>> Triple(const nlohmann::json& j, const char* key,
                                    const std::string& path) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 3)
    return Errorf(ErrorCode::kInvalidArgument, "{}: \"{}\" must be 3 numbers (R, G, B)", path, key);
  std::array<float, 3> v{};
  for (int c = 0; c < 3; ++c) {
    if (!(*it)[c].is_number())
      return Errorf(ErrorCode::kInvalidArgument, "{}: \"{}\" must be 3 numbers", path, key);
    v[c] = (*it)[c].get<float>();
  }
  return v;
}

bool SameSizes(const formats::IndexedDataset& a, const formats::IndexedDataset& b) {
  return a.num_sequences() == b.num_sequences() &&
         std::equal(a.sizes().begin(), a.sizes().end(), b.sizes().begin());
}

}  // namespace

Result<LlavaData> LlavaData::Open(const std::string& dir, const std::string& split) {
  const std::string prefix = dir + "/" + split;
  if (!std::filesystem::exists(prefix + ".idx"))
    return Errorf(ErrorCode::kNotFound, "no {} split in {} ({}.idx is missing)", split, dir, split);
  BM_ASSIGN_OR_RETURN(formats::IndexedDataset tokens, formats::IndexedDataset::Open(prefix));
  BM_ASSIGN_OR_RETURN(formats::IndexedDataset labels,
                      formats::IndexedDataset::Open(prefix + "_mask"));
  BM_ASSIGN_OR_RETURN(formats::IndexedDataset images,
                      formats::IndexedDataset::Open(prefix + "_images"));
  if (!SameSizes(tokens, labels))
    return Errorf(ErrorCode::kCorrupt, "{}_mask does not match {}: different sample sizes", prefix,
                  prefix);
  if (images.num_sequences() != tokens.num_sequences())
    return Errorf(ErrorCode::kCorrupt, "{}_images has {} samples, {} has {}", prefix,
                  images.num_sequences(), prefix, tokens.num_sequences());
  LlavaData d(std::move(tokens), std::move(labels), std::move(images));
  d.dir_ = dir;
  d.split_ = split;
  const std::string stats_path = dir + "/stats.json", images_path = dir + "/images.json";
  BM_ASSIGN_OR_RETURN(nlohmann::json stats, ReadJson(stats_path));
  BM_ASSIGN_OR_RETURN(d.vocab_size_, IntField(stats, "vocab_size", stats_path));
  BM_ASSIGN_OR_RETURN(d.image_token_id_, IntField(stats, "image_token_id", stats_path));
  BM_ASSIGN_OR_RETURN(d.image_tokens_, IntField(stats, "image_tokens", stats_path));
  if (d.image_token_id_ < d.vocab_size_)
    return Errorf(ErrorCode::kCorrupt,
                  "{}: image_token_id {} lies inside the text vocabulary ({}); the placeholder "
                  "must be an id of its own",
                  stats_path, d.image_token_id_, d.vocab_size_);
  BM_ASSIGN_OR_RETURN(nlohmann::json info, ReadJson(images_path));
  BM_ASSIGN_OR_RETURN(d.image_size_, IntField(info, "size", images_path));
  BM_ASSIGN_OR_RETURN(d.num_images_, IntField(info, "count", images_path));
  BM_ASSIGN_OR_RETURN(d.mean_, Triple(info, "mean", images_path));
  BM_ASSIGN_OR_RETURN(d.std_, Triple(info, "std", images_path));
  for (float s : d.std_)
    if (!(s > 0))
      return Errorf(ErrorCode::kInvalidArgument, "{}: every \"std\" must be > 0", images_path);
  d.pixels_path_ = dir + "/images.u8";
  std::error_code ec;
  const uint64_t bytes = std::filesystem::file_size(d.pixels_path_, ec);
  if (ec) return Errorf(ErrorCode::kNotFound, "{} is missing", d.pixels_path_);
  const uint64_t want = static_cast<uint64_t>(d.num_images_) * d.image_size_ * d.image_size_ * 3;
  if (bytes != want)
    return Errorf(ErrorCode::kCorrupt,
                  "{} holds {} bytes; images.json says {} images of {}x{}x3 = {} bytes",
                  d.pixels_path_, bytes, d.num_images_, d.image_size_, d.image_size_, want);
  return d;
}

Result<LlavaSample> LlavaData::Sample(int64_t i) const {
  if (i < 0 || i >= num_samples())
    return Errorf(ErrorCode::kInvalidArgument, "{}/{}: sample {} of {}", dir_, split_, i,
                  num_samples());
  LlavaSample s;
  BM_ASSIGN_OR_RETURN(s.tokens, tokens_.ReadSequence(i));
  BM_ASSIGN_OR_RETURN(std::vector<int32_t> labels, labels_.ReadSequence(i));
  BM_ASSIGN_OR_RETURN(s.images, images_.ReadSequence(i));
  s.labels.resize(labels.size());
  for (size_t k = 0; k < labels.size(); ++k) s.labels[k] = labels[k] != 0;
  const int64_t placeholders =
      std::count(s.tokens.begin(), s.tokens.end(), static_cast<int32_t>(image_token_id_));
  if (placeholders != static_cast<int64_t>(s.images.size()))
    return Errorf(ErrorCode::kCorrupt,
                  "{}/{}: sample {} has {} <image> placeholders (id {}) but {} images in {}_images",
                  dir_, split_, i, placeholders, image_token_id_, s.images.size(), split_);
  for (int32_t k : s.images)
    if (k < 0 || k >= num_images_)
      return Errorf(ErrorCode::kCorrupt, "{}/{}: sample {} names image {}, images.u8 has {}", dir_,
                    split_, i, k, num_images_);
  for (int32_t t : s.tokens)
    if (t < 0 || (t >= vocab_size_ && t != image_token_id_))
      return Errorf(ErrorCode::kCorrupt, "{}/{}: sample {} has token id {} outside [0, {})", dir_,
                    split_, i, t, vocab_size_);
  return s;
}

Status LlavaData::Pixels(int64_t image, float* chw) const {
  if (image < 0 || image >= num_images_)
    return Errorf(ErrorCode::kInvalidArgument, "{}: image {} of {}", pixels_path_, image,
                  num_images_);
  const int64_t S = image_size_, plane = S * S;
  std::vector<uint8_t> hwc(plane * 3);
  std::ifstream in(pixels_path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(image * plane * 3));
  in.read(reinterpret_cast<char*>(hwc.data()), static_cast<std::streamsize>(hwc.size()));
  if (!in) return Errorf(ErrorCode::kIo, "{}: cannot read image {}", pixels_path_, image);
  for (int c = 0; c < 3; ++c)
    for (int64_t p = 0; p < plane; ++p)
      chw[c * plane + p] = (static_cast<float>(hwc[p * 3 + c]) / 255.0f - mean_[c]) / std_[c];
  return Status::Ok();
}

}  // namespace bm::train
