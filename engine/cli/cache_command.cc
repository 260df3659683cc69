// `benchmake cache stats|verify|gc --max-size SIZE`.
#include <cstdio>

#include "base/real_filesystem.h"
#include "cache/cache.h"
#include "cache/maintenance.h"
#include "engine/cli/cache_remote_command.h"
#include "engine/cli/commands.h"
#include "engine/cli/flags.h"
#include "engine/generate.h"

namespace bm::engine::cli {
namespace {

// The workspace's cache dir when there is a BENCHFILE here, else the default.
std::string CacheDirFor(const CommonFlags& flags) {
  Result<Workspace> ws = OpenWorkspaceFromFlags(flags);
  if (ws.ok()) {
    Result<WorkspaceConfig> config = LoadConfig(*ws);
    if (config.ok() && !config->cache_dir.empty()) return config->cache_dir;
    Result<TargetGraph> graph = LoadWorkspaceGraph(*ws);
    if (graph.ok() && !graph->settings.cache_dir.empty())
      return JoinPath(ws->root, graph->settings.cache_dir);
  }
  return cache::DefaultCacheDir();
}

}  // namespace

Status CacheCommand(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(CommonFlags flags, ParseCommonFlags(args));
  const std::vector<std::string>& a = flags.rest;
  if (a.empty())
    return Errorf(
        ErrorCode::kInvalidArgument,
        "usage: benchmake cache stats|verify|gc --max-size SIZE|push [TARGET...]|pull [TARGET...]");
  cache::LocalStore store(DiskFilesystem(), CacheDirFor(flags));
  if (a[0] == "stats") {
    BM_ASSIGN_OR_RETURN(cache::StoreStats s, cache::ComputeStats(store));
    std::printf("cache:   %s\nblobs:   %llu (%s)\nactions: %llu (%s)\ntotal:   %s\n",
                store.root().c_str(), static_cast<unsigned long long>(s.blobs),
                cache::FormatSize(s.blob_bytes).c_str(), static_cast<unsigned long long>(s.actions),
                cache::FormatSize(s.action_bytes).c_str(),
                cache::FormatSize(s.total_bytes()).c_str());
    return PrintUsageStats(store.root());
  }
  if (a[0] == "push") return CachePushCommand(flags);
  if (a[0] == "pull") return CachePullCommand(flags);
  if (a[0] == "verify") {
    BM_ASSIGN_OR_RETURN(cache::VerifyReport r, cache::Verify(store));
    for (const std::string& e : r.evicted) std::printf("corrupt, evicted: %s\n", e.c_str());
    std::printf("checked %llu entries, %zu corrupt\n", static_cast<unsigned long long>(r.checked),
                r.evicted.size());
    if (!r.evicted.empty())
      return Errorf(ErrorCode::kCorrupt, "{} corrupt cache entries evicted", r.evicted.size());
    return Status::Ok();
  }
  if (a[0] == "gc") {
    if (a.size() != 3 || a[1] != "--max-size") {
      return Errorf(ErrorCode::kInvalidArgument,
                    "usage: benchmake cache gc --max-size SIZE (e.g. 10G)");
    }
    BM_ASSIGN_OR_RETURN(uint64_t max, cache::ParseSize(a[2]));
    BM_ASSIGN_OR_RETURN(cache::GcReport r, cache::CollectGarbage(store, max));
    std::printf("removed %llu entries (%s), kept %s\n", static_cast<unsigned long long>(r.removed),
                cache::FormatSize(r.removed_bytes).c_str(),
                cache::FormatSize(r.kept_bytes).c_str());
    return Status::Ok();
  }
  return Errorf(ErrorCode::kInvalidArgument,
                "unknown cache command '{}' (stats, verify, gc, push, pull)", a[0]);
}

}  // namespace bm::engine::cli
