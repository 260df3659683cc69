// Workspace: a BENCHFILE's directory and the state benchmake keeps beside it.
//
//   <root>/BENCHFILE.toml
//   <root>/out/NAME/...            materialized outputs (hard links into the cache)
//   <root>/.benchmake/
//     build.ninja                  generated; one edge per target
//     config.json                  resolved settings the steps read (cache dir, remotes)
//     generated                    no-op fast path stamp (engine/generate.h)
//     stat_cache                   source file digests (base/stat_cache.h)
//     platform                     platform facts of this build, for humans
//                                  ("benchmake-platform 2\n" json)
//     locations                    each target's FILE:LINE:COL, for the plan's messages
//                                  (engine/target_state.h)
//     t/NAME.spec                  key material without upstream digests (key_material.h)
//     t/NAME.params                what the step runs: rule, all params, input paths
//     t/NAME.out                   digest of NAME's output manifest (restat stamp)
//     t/NAME.last                  the last materialization: key, material, manifest
//     log/NAME.log                 the last run's log
//     tmp/ resume/ lock
//
// Thread safety: a value; the pointers must outlive it.
#pragma once

#include <string>

#include "base/command_runner.h"
#include "base/filesystem.h"
#include "cache/cache.h"
#include "cache/remote/remote_config.h"
#include "engine/rule.h"

namespace bm::engine {

struct Workspace {
  Filesystem* fs = nullptr;
  CommandRunner* runner = nullptr;
  const RuleRegistry* rules = nullptr;
  std::string root;       // absolute
  std::string benchfile;  // absolute
  std::string tools_dir;  // where benchmake and benchmake-train live
  std::string self_exe;   // the benchmake binary ninja edges call

  std::string StateDir() const { return root + "/.benchmake"; }
  std::string OutRoot() const { return root + "/out"; }
  std::string OutDirOf(std::string_view target) const {
    return OutRoot() + "/" + std::string(target);
  }
  std::string TargetFile(std::string_view target, std::string_view ext) const {
    return StateDir() + "/t/" + std::string(target) + "." + std::string(ext);
  }
  std::string LogOf(std::string_view target) const {
    return StateDir() + "/log/" + std::string(target) + ".log";
  }
};

// Resolves -C DIR and -f FILE (defaults: the current directory, BENCHFILE.toml)
// into absolute paths; tools_dir and self_exe from /proc/self/exe.
Result<Workspace> OpenWorkspace(Filesystem& fs, CommandRunner& runner, const RuleRegistry& rules,
                                const std::string& dir_flag, const std::string& file_flag);

// Settings that the generator resolves and the steps read (.benchmake/config.json).
struct WorkspaceConfig {
  std::string cache_dir;
  cache::RemoteConfig remote;  // [benchmake.cache]; $BENCHMAKE_REMOTE_CACHE applies on open
  int gpus = 0;
};
Status SaveConfig(const Workspace& ws, const WorkspaceConfig& config);
// The local cache of a workspace now: `cache_dir_setting` (its BENCHFILE's
// [benchmake] cache_dir, relative to the workspace) when set, else
// cache::DefaultCacheDir(). What the generator saves in config.json, and what
// `cache stats|verify|gc` use (not config.json: the environment may have changed).
std::string CacheDirOf(const Workspace& ws, const std::string& cache_dir_setting);
Result<WorkspaceConfig> LoadConfig(const Workspace& ws);

// The cache for this workspace: local store plus the configured remote
// (config.remote, then $BENCHMAKE_REMOTE_CACHE on top; created through
// cache::RemoteRegistry::Global()). A remote that cannot be set up is
// reported once per build and left out: it never fails the build.
Result<std::unique_ptr<cache::Cache>> OpenCache(const Workspace& ws, const WorkspaceConfig& config);

std::string BenchmakeVersion();

}  // namespace bm::engine
