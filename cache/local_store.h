// LocalStore: the cache directory on this machine, shared by every workspace
// of the user.
//
// Layout:
//   <root>/cas/<hex[0:2]>/<hex>   blob bytes, mode 0444, XXH3-128(bytes) == hex
//   <root>/ac/<hex[0:2]>/<hex>    action record (cache/action_record.h), key == hex
//   <root>/tmp/                   temporaries, renamed into place (atomic)
//   <root>/CACHEDIR.TAG           marks the directory as a cache for backup tools
// Entries are only ever created by rename, so concurrent writers (several
// builds, several workspaces) are safe: the last rename wins with equal bytes.
// A hit bumps the entry's mtime; gc evicts the least recently used first.
//
// Thread safety: safe across threads and processes (no in-memory state).
#pragma once

#include <string>

#include "base/filesystem.h"
#include "cache/remote_backend.h"

namespace bm::cache {

class LocalStore {
 public:
  LocalStore(Filesystem& fs, std::string root) : fs_(fs), root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string PathOf(Namespace ns, const Digest& key) const;
  std::string TempDir() const { return root_ + "/tmp"; }

  Status Init();  // creates the layout; cheap when it exists

  // The entry's file. A directory where an entry belongs (the store renames only files into
  // place, so one is damage: a hand's, a restore's) is removed, with a warning, and the entry
  // reads as missing: a miss, fetched or built again (and installed past, as rename(2) cannot).
  Result<FileInfo> StatEntry(Namespace ns, const Digest& key);
  Result<bool> Exists(Namespace ns, const Digest& key);
  // Installs the file at src as the entry `key` (a hard link when src has no
  // other name, else a copy; then rename); src is left in place. Blobs become
  // read-only.
  Status Install(Namespace ns, const Digest& key, const std::string& src);
  Status InstallBytes(Namespace ns, const Digest& key, std::string_view bytes);
  Status Evict(Namespace ns, const Digest& key);
  void MarkUsed(Namespace ns, const Digest& key);  // best effort

  Filesystem& fs() { return fs_; }

 private:
  // Install and InstallBytes, whose errors those two name the cache directory in.
  Status InstallFile(Namespace ns, const Digest& key, const std::string& src);
  Status WriteBytes(Namespace ns, const Digest& key, std::string_view bytes);

  Filesystem& fs_;
  std::string root_;
};

}  // namespace bm::cache
