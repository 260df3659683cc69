// The remote-cache parts of `benchmake cache` (engine/cli/cache_command.cc
// dispatches here): push, pull, and the hit/miss/bytes/failure counters that
// `cache stats` prints (cache/usage_stats.h).
#pragma once

#include <string>

#include "base/result.h"
#include "engine/cli/flags.h"

namespace bm::engine::cli {

// flags.rest = {"push", TARGET...}: uploads what this workspace last
// materialized for the targets (all by default). kUnavailable without a
// writable remote; a failed upload is an error here (unlike during a build).
Status CachePushCommand(const CommonFlags& flags);
// flags.rest = {"pull", TARGET...}: restores the targets and their upstreams
// from the caches (local, then remote), running nothing.
Status CachePullCommand(const CommonFlags& flags);
// The summed counters of <cache_root>/stats.log.
Status PrintUsageStats(const std::string& cache_root);

}  // namespace bm::engine::cli
