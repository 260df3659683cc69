// The BENCHFILE.toml parser: TOML text → targets with their raw parameters and
// the source location of every key and value. The only file of benchmake that
// sees toml++ is benchfile.cc. Validation against rules: target_graph.h.
//
// Format (docs/BENCHFILE.md):
//   [benchmake]            workspace settings: cache_dir, jobs, gpus, executor, launcher
//   [benchmake.cache]      the remote cache (cache/remote/remote_config.h)
//   [benchmake.slurm]      the Slurm executor's settings (engine/placement.h)
//   [benchmake.mpirun]     the mpirun launcher's settings (engine/placement.h)
//   [target.NAME]          rule = "exec", then the rule's parameters
// Nothing else: any other top-level key or table is an error ([targets.x], a
// typo of [target.x], would otherwise declare no target without a word).
// Values become nlohmann::json: integers int64, floats double, dates strings.
//
// Errors: kInvalidArgument, message "FILE:LINE:COL: what is wrong" (TOML
// syntax, unknown top-level key or [benchmake] setting, duplicate target, bad
// target name, missing or non-string rule).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "cache/remote/remote_config.h"
#include "engine/placement.h"

namespace bm::engine {

struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
  std::string ToString() const;  // "file:line:col"
};

// "FILE:LINE:COL: message" as a kInvalidArgument Status.
Status LocatedError(const SourceLocation& loc, std::string_view message);

struct RawParam {
  std::string name;
  nlohmann::json value;
  SourceLocation key_loc;
  SourceLocation value_loc;
  std::vector<SourceLocation> element_locs;  // for arrays: one per element
};

struct RawTarget {
  std::string name;
  SourceLocation loc;  // the NAME in [target.NAME]
  std::string rule;
  SourceLocation rule_loc;
  std::vector<RawParam> params;  // in file order, `rule` excluded
};

struct Settings {
  std::string cache_dir;       // "" = default (cache/cache.h DefaultCacheDir)
  int jobs = 0;                // 0 = ninja's default
  int gpus = -1;               // -1 = detect
  cache::RemoteConfig remote;  // [benchmake.cache]
  Placement placement;         // executor, launcher, [benchmake.slurm], [benchmake.mpirun]
};

struct Benchfile {
  std::string path;
  Settings settings;
  std::vector<RawTarget> targets;  // in file order
};

Result<Benchfile> ParseBenchfile(std::string_view text, const std::string& path);

bool IsValidTargetName(std::string_view name);  // [a-z0-9_.-]+

}  // namespace bm::engine
