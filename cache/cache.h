// Cache: the one facade the engine talks to — a local store in front of
// optional remote backends (ccache's model). Blobs (CAS) by content digest,
// action records (AC) by action key.
//
// Reads verify: a blob whose bytes no longer match its digest is reported
// (kCorrupt, with the path), evicted, and the caller treats the action as a
// miss and rebuilds. Remote failures never fail a call: the remote is marked
// dead for the process (warning on stderr once) and the call counts as a miss.
//
// Thread safety: one Cache per thread (remotes must be thread-safe themselves).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/filesystem.h"
#include "cache/action_record.h"
#include "cache/local_store.h"
#include "cache/remote_backend.h"

namespace bm::cache {

// $BENCHMAKE_CACHE_DIR, else $XDG_CACHE_HOME/benchmake, else ~/.cache/benchmake.
std::string DefaultCacheDir();

class Cache {
 public:
  Cache(Filesystem& fs, std::string root);

  LocalStore& local() { return local_; }
  const std::string& root() const { return local_.root(); }
  void AddRemote(std::unique_ptr<RemoteBackend> remote, bool read_only);

  Status Init() { return local_.Init(); }

  // Ingests a file: hashes it and installs it as a blob (link when possible).
  Result<Digest> PutFile(const std::string& path);
  Result<Digest> PutBytes(std::string_view bytes);
  // Links (or copies) the verified blob to dest, fetching it from a remote
  // when it is not local. kNotFound: nowhere; kCorrupt: evicted, rebuild.
  Status Materialize(const Digest& digest, const std::string& dest);
  Result<std::string> ReadBlob(const Digest& digest);  // verified
  Result<bool> HasBlob(const Digest& digest);

  // The record for `key`, or nullopt. A malformed record is evicted (nullopt).
  Result<std::optional<ActionRecord>> GetAction(const Digest& key);
  Status PutAction(const ActionRecord& record);

 private:
  Status FetchFromRemotes(Namespace ns, const Digest& key);
  void PushToRemotes(Namespace ns, const Digest& key);
  struct Remote {
    std::unique_ptr<RemoteBackend> backend;
    bool read_only = false;
    bool dead = false;
  };
  void MarkDead(Remote& remote, const Status& why);

  Filesystem& fs_;
  LocalStore local_;
  std::vector<Remote> remotes_;
};

}  // namespace bm::cache
