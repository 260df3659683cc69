// The platform facts of each probe site (engine/platform.h), kept between
// builds so that a build whose keys need them starts no process: a site is
// probed again only when its fingerprint changes, or when a measured step that
// ran there reported other facts than its key holds (Forget()).
//
// The fingerprint of a site is what can change its facts, read with a few
// stat()s and reads of /proc: the trainer binary (size, mtime, inode), the
// boot (/proc/sys/kernel/random/boot_id), the NVIDIA driver
// (/proc/driver/nvidia/version), the GPUs (/proc/driver/nvidia/gpus, the
// /dev/nvidiaN nodes), the variables the probe reads (CUDA_VISIBLE_DEVICES,
// NVIDIA_VISIBLE_DEVICES, LD_LIBRARY_PATH, OPENBLAS_CORETYPE), and the site
// itself. A Slurm site's nodes are not visible from here: their facts are
// re-probed when the trainer binary or this machine's boot changes, and when a
// step measured there saw a different driver, trainer or BLAS core.
//
// File (.benchmake/platform_cache, written atomically):
//   file := "benchmake-platform-cache 1\n" json
//   json := {"SITE-KEY": {"fingerprint": HEX, "facts": {...}}, ...}
// A file with another first line is an empty cache (and is replaced).
//
// Thread safety: none; one per build (the workspace lock).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/filesystem.h"
#include "engine/platform.h"

namespace bm::engine {

// What can change `site`'s facts when probed with `trainer` (see above).
Result<std::string> SiteFingerprint(Filesystem& fs, const std::string& trainer,
                                    const ProbeSite& site);

class PlatformCache {
 public:
  PlatformCache(Filesystem& fs, std::string path) : fs_(fs), path_(std::move(path)) {}

  // Reads the file; a missing or unreadable one is an empty cache.
  void Load();
  // The facts of `site_key` if they were probed under `fingerprint`.
  std::optional<nlohmann::json> Find(const std::string& site_key,
                                     const std::string& fingerprint) const;
  void Put(const std::string& site_key, const std::string& fingerprint,
           const nlohmann::json& facts);
  void Forget(const std::string& site_key);
  // Writes the file when something changed since Load().
  Status Save();

 private:
  Filesystem& fs_;
  std::string path_;
  nlohmann::json entries_ = nlohmann::json::object();
  bool dirty_ = false;
};

// The facts a measured run reported (metrics.json's "platform") that should
// equal those in its key: "" when they agree, else what differs ("driver
// 580.65 → 590.10"). Fields a run of that device does not load (cuBLASLt on a
// CPU run) and the visible GPUs (the step's own subset) are not compared.
std::string PlatformDrift(const nlohmann::json& keyed, const nlohmann::json& measured);

}  // namespace bm::engine
