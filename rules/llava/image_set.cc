#include "rules/llava/image_set.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "base/image/image.h"
#include "base/real_filesystem.h"

namespace bm::rules::llava {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kLayout = "[count, size, size, 3] uint8, RGB, rows top-down";

Status WriteAll(int fd, const uint8_t* data, size_t n, uint64_t offset, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, data, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return Errorf(ErrorCode::kIo, "cannot write {}: {}", path, std::strerror(errno));
    }
    data += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out) return Errorf(ErrorCode::kIo, "cannot write {}", path);
  return Status::Ok();
}

}  // namespace

void CollectImages(const std::vector<Sample>& samples, const std::string& file,
                   std::vector<ImageSource>* images,
                   std::unordered_map<std::string, int64_t>* index) {
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!samples[i].image) continue;
    const auto [it, added] =
        index->emplace(*samples[i].image, static_cast<int64_t>(images->size()));
    if (added) images->push_back({*samples[i].image, SampleWhere(file, i, samples[i].id)});
  }
}

Result<json> WriteImageSet(const std::vector<ImageSource>& images, const std::string& folder,
                           const vision::ClipImageOptions& options, int threads,
                           const std::string& out_dir, std::ostream* log) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t bytes = static_cast<size_t>(options.size) * options.size * 3;
  const std::string path = out_dir + "/" + kImagesFile;
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errorf(ErrorCode::kIo, "cannot create {}: {}", tmp, std::strerror(errno));
  auto fail = [&](Status s) -> Result<json> {
    ::close(fd);
    fs::remove(tmp);
    return s;
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes * images.size())) != 0) {
    return fail(Errorf(ErrorCode::kIo, "cannot size {} to {} bytes: {}", tmp, bytes * images.size(),
                       std::strerror(errno)));
  }
  // Workers take images in order; the first failure (by index) is reported.
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::optional<std::pair<size_t, Status>> error;
  // A progress line every 5% of a large set (10,000 images at least), in the step log.
  std::atomic<size_t> completed{0};
  const size_t every = std::max<size_t>(10000, images.size() / 20);
  auto worker = [&]() {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= images.size() || stop.load()) return;
      const std::string file = folder + "/" + images[i].path;
      Status s = [&]() -> Status {
        BM_ASSIGN_OR_RETURN(image::Image decoded, image::DecodeImageFile(file));
        BM_ASSIGN_OR_RETURN(image::Image square, vision::ClipResizedImage(decoded, options));
        if (square.rgb.size() != bytes) {
          return Errorf(ErrorCode::kInternal, "{}: preprocessed to {} bytes, not {}", file,
                        square.rgb.size(), bytes);
        }
        return WriteAll(fd, square.rgb.data(), bytes, static_cast<uint64_t>(i) * bytes, tmp);
      }();
      if (s.ok()) {
        const size_t done = completed.fetch_add(1) + 1;
        if (log != nullptr && done % every == 0) {
          const double seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          std::lock_guard<std::mutex> lock(mu);
          *log << fmt::format("llava images: {} of {} ({:.1f} images/s)\n", done, images.size(),
                              seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
          log->flush();
        }
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!error || i < error->first) {
          error.emplace(i, s.WithContext(fmt::format("image {} of {}", file, images[i].where)));
        }
        stop.store(true);
        return;
      }
    }
  };
  const int n = std::max(1, std::min<int>(threads, static_cast<int>(images.size())));
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (error) return fail(error->second);
  if (::fsync(fd) != 0) {
    return fail(Errorf(ErrorCode::kIo, "cannot sync {}: {}", tmp, std::strerror(errno)));
  }
  ::close(fd);

  const std::array<uint8_t, 3> pad = vision::ClipPadColour(options);
  json meta = {
      {"size", options.size},
      {"pad_to_square", options.pad_to_square},
      {"pad_colour", {pad[0], pad[1], pad[2]}},
      {"mean", {options.mean[0], options.mean[1], options.mean[2]}},
      {"std", {options.std[0], options.std[1], options.std[2]}},
      {"count", images.size()},
      {"bytes_per_image", bytes},
      {"layout", kLayout},
      {"sources", json::array()},
  };
  for (const ImageSource& s : images) meta["sources"].push_back(s.path);
  const std::string meta_path = out_dir + "/" + kImagesMetaFile;
  Status s = WriteText(meta_path + ".tmp", meta.dump(2) + "\n");
  std::error_code ec;
  if (s.ok()) {
    fs::rename(tmp, path, ec);
    if (!ec) fs::rename(meta_path + ".tmp", meta_path, ec);
    if (ec) s = Errorf(ErrorCode::kIo, "cannot publish {}: {}", path, ec.message());
  }
  if (!s.ok()) {
    for (const std::string& p : {tmp, path, meta_path + ".tmp", meta_path}) fs::remove(p, ec);
    return s;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (log != nullptr) {
    *log << fmt::format(
        "llava images: {} images of {}x{} in {:.2f} s ({:.1f} images/s, {} threads)\n",
        images.size(), options.size, options.size, seconds,
        seconds > 0 ? static_cast<double>(images.size()) / seconds : 0.0, n);
  }
  json result = meta;
  result.erase("sources");
  result["seconds"] = seconds;
  result["images_per_second"] = seconds > 0 ? static_cast<double>(images.size()) / seconds : 0.0;
  return result;
}

Result<ImageSet> ReadImageSet(const std::string& dir) {
  const std::string meta_path = dir + "/" + kImagesMetaFile;
  BM_ASSIGN_OR_RETURN(std::string text, DiskFilesystem().ReadFile(meta_path));
  ImageSet set;
  set.meta = json::parse(text, nullptr, false);
  if (set.meta.is_discarded() || !set.meta.is_object() || !set.meta.contains("sources") ||
      !set.meta["sources"].is_array() || !set.meta.contains("bytes_per_image")) {
    return Errorf(ErrorCode::kCorrupt, "{}: not an image set's images.json", meta_path);
  }
  const json& sources = set.meta["sources"];
  for (size_t i = 0; i < sources.size(); ++i) {
    set.index.emplace(sources[i].get<std::string>(), static_cast<int64_t>(i));
  }
  std::error_code ec;
  const uint64_t want = set.meta["bytes_per_image"].get<uint64_t>() * sources.size();
  const uint64_t have = fs::file_size(dir + "/" + kImagesFile, ec);
  if (ec || have != want) {
    return Errorf(ErrorCode::kCorrupt, "{}/{}: {} bytes where images.json says {}", dir,
                  kImagesFile, ec ? 0 : have, want);
  }
  return set;
}

}  // namespace bm::rules::llava
