#include "engine/platform_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "base/digest.h"

namespace bm::engine {
namespace {

constexpr std::string_view kPlatformCacheMagic = "benchmake-platform-cache 1\n";

std::string ReadOr(Filesystem& fs, const std::string& path, std::string_view absent) {
  Result<std::string> text = fs.ReadFile(path);
  return text.ok() ? *text : std::string(absent);
}

std::vector<std::string> ListOr(Filesystem& fs, const std::string& dir) {
  Result<std::vector<std::string>> names = fs.ListDir(dir);
  if (!names.ok()) return {};
  std::sort(names->begin(), names->end());
  return *names;
}

}  // namespace

Result<std::string> SiteFingerprint(Filesystem& fs, const std::string& trainer,
                                    const ProbeSite& site) {
  BM_ASSIGN_OR_RETURN(FileInfo exe, fs.Stat(trainer));
  Hasher h;
  h.Field("site", site.Key());
  h.Field("trainer", fmt::format("{} {} {} {}", exe.exists, exe.size, exe.mtime_ns, exe.inode));
  h.Field("boot", ReadOr(fs, "/proc/sys/kernel/random/boot_id", "?"));
  h.Field("driver", ReadOr(fs, "/proc/driver/nvidia/version", "none"));
  for (const std::string& gpu : ListOr(fs, "/proc/driver/nvidia/gpus")) h.Field("gpu", gpu);
  for (const std::string& dev : ListOr(fs, "/dev"))
    if (dev.rfind("nvidia", 0) == 0) h.Field("dev", dev);
  for (const char* name :
       {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "OPENBLAS_CORETYPE"}) {
    const char* v = std::getenv(name);
    h.Field(name, v ? v : "\x01unset");
  }
  return h.Finish().Hex();
}

void PlatformCache::Load() {
  entries_ = nlohmann::json::object();
  dirty_ = false;
  Result<std::string> text = fs_.ReadFile(path_);
  if (!text.ok() || text->compare(0, kPlatformCacheMagic.size(), kPlatformCacheMagic) != 0) return;
  nlohmann::json j =
      nlohmann::json::parse(text->substr(kPlatformCacheMagic.size()), nullptr, false);
  if (j.is_object()) entries_ = std::move(j);
}

std::optional<nlohmann::json> PlatformCache::Find(const std::string& site_key,
                                                  const std::string& fingerprint) const {
  auto it = entries_.find(site_key);
  if (it == entries_.end() || !it->is_object() || it->value("fingerprint", "") != fingerprint ||
      !it->contains("facts") || !(*it)["facts"].is_object())
    return std::nullopt;
  return (*it)["facts"];
}

void PlatformCache::Put(const std::string& site_key, const std::string& fingerprint,
                        const nlohmann::json& facts) {
  entries_[site_key] = {{"fingerprint", fingerprint}, {"facts", facts}};
  dirty_ = true;
}

void PlatformCache::Forget(const std::string& site_key) { dirty_ |= entries_.erase(site_key) > 0; }

Status PlatformCache::Save() {
  if (!dirty_) return Status::Ok();
  BM_TRY(fs_.WriteFileAtomic(path_, std::string(kPlatformCacheMagic) + entries_.dump(1) + "\n",
                             false,
                             /*durable=*/false));
  dirty_ = false;
  return Status::Ok();
}

std::string PlatformDrift(const nlohmann::json& keyed, const nlohmann::json& measured) {
  if (!keyed.is_object() || !measured.is_object()) return "";
  std::string drift;
  auto compare = [&](const std::string& what, const nlohmann::json& a, const nlohmann::json& b) {
    if (a.is_null() || b.is_null() || a == b) return;
    drift += fmt::format("{}{} {} → {}", drift.empty() ? "" : ", ", what,
                         a.is_string() ? a.get<std::string>() : a.dump(),
                         b.is_string() ? b.get<std::string>() : b.dump());
  };
  auto at = [](const nlohmann::json& j, const char* a, const char* b = nullptr) {
    if (!j.contains(a)) return nlohmann::json();
    const nlohmann::json& v = j[a];
    if (!b) return v;
    return v.is_object() && v.contains(b) ? v[b] : nlohmann::json();
  };
  compare("trainer", at(keyed, "trainer_build"), at(measured, "trainer_build"));
  compare("driver", at(keyed, "driver"), at(measured, "driver"));
  compare("cpu", at(keyed, "cpu", "model"), at(measured, "cpu", "model"));
  compare("BLAS core", at(keyed, "blas", "core"), at(measured, "blas", "core"));
  return drift;
}

}  // namespace bm::engine
