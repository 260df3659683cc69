// Cache maintenance: `benchmake cache stats|verify|gc`.
//
// Gc evicts least recently used entries (by mtime, which hits bump) until the
// store holds at most max_bytes, and removes what killed processes left in
// <root>/tmp/: anything there untouched for an hour (ccache's rule), whatever
// max_bytes. Verify re-hashes every blob and re-parses every action record;
// what does not match, or is a directory where an entry belongs, is reported and evicted.
//
// Thread safety: safe to run beside builds (an evicted entry is a miss).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/local_store.h"

namespace bm::cache {

struct StoreStats {
  uint64_t blobs = 0, blob_bytes = 0;
  uint64_t actions = 0, action_bytes = 0;
  uint64_t total_bytes() const { return blob_bytes + action_bytes; }
};

struct VerifyReport {
  uint64_t checked = 0;
  std::vector<std::string> evicted;      // paths, with what was wrong
  std::vector<std::string> not_evicted;  // corrupt too, but removing failed (read-only cache)
};

struct GcReport {
  uint64_t removed = 0, removed_bytes = 0, kept_bytes = 0;
  uint64_t stale_temps = 0, stale_temp_bytes = 0;  // leftovers removed from tmp/
};

Result<StoreStats> ComputeStats(LocalStore& store);
Result<VerifyReport> Verify(LocalStore& store);
// now_ns: the current time on the clock of the store's mtimes (default: the system's).
Result<GcReport> CollectGarbage(LocalStore& store, uint64_t max_bytes, int64_t now_ns = -1);

// "10G", "512M", "1.5GiB", "1000" (bytes) → bytes.
Result<uint64_t> ParseSize(std::string_view text);
std::string FormatSize(uint64_t bytes);

}  // namespace bm::cache
