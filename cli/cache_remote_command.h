// The part of `benchmake cache stats` that prints the hit/miss/bytes/failure
// counters (cache/usage_stats.h); `cache push` and `cache pull` are declared in
// cli/commands.h.
#pragma once

#include <string>

#include "base/result.h"

namespace bm::cli {

// The summed counters of <cache_root>/stats.log.
Status PrintUsageStats(const std::string& cache_root);

}  // namespace bm::cli
