// StatCache: path → digest, trusted while the file's (size, mtime, inode) are
// unchanged, so that unchanged multi-GB source files are not re-read.
// Persisted in the workspace (.benchmake/stat_cache); written only when an
// entry changed.
//
// File layout (text, one entry per line):
//   file  := "benchmake-stat-cache 1\n" entry*
//   entry := hex32 ' ' size ' ' mtime_ns ' ' inode ' ' path '\n'
// A file with another magic or a newer version is ignored (it is only a cache).
//
// Thread safety: not thread-safe; one per process.
#pragma once

#include <string>
#include <unordered_map>

#include "base/filesystem.h"

namespace bm {

class StatCache {
 public:
  StatCache(Filesystem& fs, std::string file) : fs_(fs), file_(std::move(file)) {}

  Status Load();  // a missing or unreadable file is an empty cache
  Status Save();  // no-op unless something changed

  // The digest of `path`, hashing it only when its stat differs from the
  // cached one. `info` must be a fresh Stat() of `path`.
  Result<Digest> Hash(const std::string& path, const FileInfo& info);

  int hashed_count() const { return hashed_; }  // files read by this process

 private:
  struct Entry {
    uint64_t size;
    int64_t mtime_ns;
    uint64_t inode;
    Digest digest;
  };
  Filesystem& fs_;
  std::string file_;
  std::unordered_map<std::string, Entry> entries_;
  bool dirty_ = false;
  int hashed_ = 0;
};

}  // namespace bm
