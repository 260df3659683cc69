// UsageStats: how the cache served this user — local and remote hits, misses,
// bytes and failures — summed over every benchmake process. `benchmake build`
// runs each step as its own process, so each Cache counts in memory and
// appends one line to <cache root>/stats.log when it goes away; `cache stats`
// sums the lines.
//
//   stats.log := line*        line := json-object "\n"   (the fields below; missing = 0)
//
// Appends take an flock on the file and are a single write(2), so concurrent
// processes never interleave; Compact() folds the lines into one under the same
// lock (a writer that raced with the rename re-opens the new file).
//
// Thread safety: UsageStats is a value; the functions are safe across processes.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace bm::cache {

struct UsageStats {
  uint64_t local_hits = 0;  // action records found in the local cache
  uint64_t local_misses = 0;
  uint64_t remote_hits = 0;    // action records or blobs fetched from a remote
  uint64_t remote_misses = 0;  // asked a remote, it had nothing
  uint64_t remote_bytes_down = 0;
  uint64_t remote_bytes_up = 0;
  uint64_t remote_uploads = 0;   // values pushed
  uint64_t remote_failures = 0;  // errors and timeouts (each marks the remote dead)
  uint64_t remote_corrupt = 0;   // blobs whose bytes did not match their digest
  uint64_t remote_rejected = 0;  // action records refused (unsigned, forged)

  UsageStats& operator+=(const UsageStats& o);
  bool IsZero() const;
  std::string ToJson() const;
  static Result<UsageStats> FromJson(std::string_view line);
};

// Appends `stats` (when not zero) to <root>/stats.log.
Status AppendUsage(const std::string& root, const UsageStats& stats);
// The sum of <root>/stats.log (zero when there is none); malformed lines are skipped.
Result<UsageStats> LoadUsage(const std::string& root);
// Rewrites <root>/stats.log as one line with the sum.
Status CompactUsage(const std::string& root);

}  // namespace bm::cache
