// `benchmake cache stats|verify|gc` (push and pull: cache_remote_command.cc).
#include <cstdio>

#include "base/real_filesystem.h"
#include "cache/cache.h"
#include "cache/maintenance.h"
#include "cli/cache_remote_command.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/benchfile.h"
#include "engine/workspace.h"

namespace bm::cli {
namespace {

// The workspace's cache dir as kWhichCache says: read from the BENCHFILE and
// the environment now, never from the last build's config.json. A -C or -f
// that names nothing is an error, as for every other command (it was ignored:
// the environment's cache was reported instead).
Result<std::string> CacheDirFor(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  Result<std::string> text = ws.fs->ReadFile(ws.benchfile);
  if (!text.ok() && !args.file().empty())
    return Errorf(ErrorCode::kInvalidArgument, "-f {}: {}", args.file(), text.status().message());
  Result<engine::Benchfile> bf = text.ok() ? engine::ParseBenchfile(*text, ws.benchfile)
                                           : Result<engine::Benchfile>(text.status());
  if (bf.ok()) return engine::CacheDirOf(ws, bf->settings.cache_dir);
  return cache::DefaultCacheDir();
}

constexpr const char* kWhichCache =
    "The cache is the one of the workspace (its BENCHFILE's [benchmake] cache_dir) when there "
    "is one, else $BENCHMAKE_CACHE_DIR, else $XDG_CACHE_HOME/benchmake, else "
    "~/.cache/benchmake.";

}  // namespace

const CommandSpec& CacheStatsSpec() {
  static const CommandSpec kSpec{
      .name = "cache stats",
      .summary = "size of the local cache, hits and misses, remote traffic",
      .description = std::string("Prints the local cache's directory, its blobs and action "
                                 "records with their sizes, and the hit, miss and transfer "
                                 "counters of the local and remote caches.\n\n") +
                     kWhichCache,
      .examples = {{"benchmake cache stats", "how big the cache is and how well it hits"}}};
  return kSpec;
}

Status CacheStatsCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(const std::string dir, CacheDirFor(args));
  cache::LocalStore store(DiskFilesystem(), dir);
  BM_ASSIGN_OR_RETURN(cache::StoreStats s, cache::ComputeStats(store));
  std::printf("cache:   %s\nblobs:   %llu (%s)\nactions: %llu (%s)\ntotal:   %s\n",
              store.root().c_str(), static_cast<unsigned long long>(s.blobs),
              cache::FormatSize(s.blob_bytes).c_str(), static_cast<unsigned long long>(s.actions),
              cache::FormatSize(s.action_bytes).c_str(),
              cache::FormatSize(s.total_bytes()).c_str());
  return PrintUsageStats(store.root());
}

const CommandSpec& CacheVerifySpec() {
  static const CommandSpec kSpec{
      .name = "cache verify",
      .summary = "re-hash every cache entry; evict the corrupt ones",
      .description = std::string("Reads every blob and action record of the local cache and "
                                 "checks it against its digest. A corrupt entry is evicted (the "
                                 "next build reruns or re-fetches it) and listed; the exit "
                                 "status is 1 when there was one.\n\n") +
                     kWhichCache,
      .examples = {{"benchmake cache verify", "check the whole local cache"}}};
  return kSpec;
}

Status CacheVerifyCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(const std::string dir, CacheDirFor(args));
  cache::LocalStore store(DiskFilesystem(), dir);
  BM_ASSIGN_OR_RETURN(cache::VerifyReport r, cache::Verify(store));
  for (const std::string& e : r.evicted) std::printf("corrupt, evicted: %s\n", e.c_str());
  for (const std::string& e : r.not_evicted) std::printf("corrupt, NOT evicted: %s\n", e.c_str());
  size_t corrupt = r.evicted.size() + r.not_evicted.size();
  std::printf("checked %llu entries, %zu corrupt\n", static_cast<unsigned long long>(r.checked),
              corrupt);
  if (!r.not_evicted.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{} corrupt cache entries, {} of them still in place (the cache directory is "
                  "not writable); builds refuse them, but remove them or fix the permissions",
                  corrupt, r.not_evicted.size());
  }
  if (corrupt > 0) return Errorf(ErrorCode::kCorrupt, "{} corrupt cache entries evicted", corrupt);
  return Status::Ok();
}

const CommandSpec& CacheGcSpec() {
  static const CommandSpec kSpec{
      .name = "cache gc",
      .summary = "trim the local cache to a size, least recently used first",
      .description = std::string("Removes the least recently used entries of the local cache "
                                 "until it holds at most SIZE, and the temporaries that killed "
                                 "builds left in its tmp/ (untouched for an hour).\n\n") +
                     kWhichCache,
      .flags = {{.name = "--max-size",
                 .value_name = "SIZE",
                 .kind = ValueKind::kText,
                 .help = "the size to keep, in bytes or with a unit: 500M, 10G, 1T (required)"}},
      .examples = {{"benchmake cache gc --max-size 10G", "keep at most 10 GiB"}}};
  return kSpec;
}

Status CacheGcCommand(const ParsedArgs& args) {
  std::optional<std::string> size = args.Value("--max-size");
  if (!size) {
    return Errorf(ErrorCode::kInvalidArgument, "cache gc needs --max-size SIZE (e.g. 10G)\n{}",
                  UsageLine(CacheGcSpec()));
  }
  BM_ASSIGN_OR_RETURN(uint64_t max, cache::ParseSize(*size));
  BM_ASSIGN_OR_RETURN(const std::string dir, CacheDirFor(args));
  cache::LocalStore store(DiskFilesystem(), dir);
  BM_ASSIGN_OR_RETURN(cache::GcReport r, cache::CollectGarbage(store, max));
  std::printf("removed %llu entries (%s), kept %s\n", static_cast<unsigned long long>(r.removed),
              cache::FormatSize(r.removed_bytes).c_str(), cache::FormatSize(r.kept_bytes).c_str());
  if (r.stale_temps > 0) {
    std::printf("removed %llu temporaries left by killed processes (%s)\n",
                static_cast<unsigned long long>(r.stale_temps),
                cache::FormatSize(r.stale_temp_bytes).c_str());
  }
  return Status::Ok();
}

}  // namespace bm::cli
