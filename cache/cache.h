// Cache: the one facade the engine talks to — a local store in front of
// optional remote backends (ccache's model). Blobs (CAS) by content digest,
// action records (AC) by action key.
//
// Reads verify: a blob whose bytes no longer match its digest is reported
// (kCorrupt, with the path), evicted, and the caller treats the action as a
// miss and rebuilds. Remote failures (errors, timeouts) never fail a call: the
// remote is marked dead for the run (RunHealth: every step process of one
// build shares the verdict; one warning on stderr) and the call counts as a
// miss. A remote value that is corrupt (bytes do not match the digest) or a
// rejected action record (unsigned, forged) is a miss too, counted, and never
// installed locally; the remote stays in use, but is not asked for that value
// again by this Cache (one download, one warning). Read-only remotes get no pushes.
// Hits, misses, bytes and failures are counted in usage() and appended to
// <root>/stats.log when the Cache goes away (cache/usage_stats.h).
//
// Thread safety: one Cache per thread (remotes must be thread-safe themselves).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/filesystem.h"
#include "cache/action_record.h"
#include "cache/local_store.h"
#include "cache/remote_backend.h"
#include "cache/run_health.h"
#include "cache/usage_stats.h"

namespace bm::cache {

// $BENCHMAKE_CACHE_DIR, else $XDG_CACHE_HOME/benchmake, else ~/.cache/benchmake.
std::string DefaultCacheDir();

class Cache {
 public:
  Cache(Filesystem& fs, std::string root);
  ~Cache();
  Cache(const Cache&) = delete;
  Cache& operator=(const Cache&) = delete;

  LocalStore& local() { return local_; }
  const std::string& root() const { return local_.root(); }
  void AddRemote(std::unique_ptr<RemoteBackend> remote, bool read_only);
  // Where "dead for the run" is recorded (default: this process only).
  void SetRunHealth(RunHealth health) { health_ = std::move(health); }
  void SetRemoteParallel(int n) { remote_parallel_ = n; }
  // Warns once per run that a remote (named `what`) could not be set up;
  // PushRecord then fails with `why` (its code: 2 for a malformed setting).
  void ReportRemoteProblem(const std::string& what, const Status& why);
  const UsageStats& usage() const { return usage_; }
  bool HasLiveRemote();

  // Fetches, in parallel, the blobs among `digests` that are not local from
  // the first live remote that has them; verified, then installed. Blobs no
  // remote has are left for Materialize to report. Never fails the caller.
  void Prefetch(const std::vector<Digest>& digests);

  Status Init() { return local_.Init(); }

  // Ingests a file: hashes it and installs it as a blob (link when possible).
  Result<Digest> PutFile(const std::string& path);
  Result<Digest> PutBytes(std::string_view bytes);
  // Links (or copies) the verified blob to dest, fetching it from a remote
  // when it is not local. kNotFound: nowhere; kCorrupt: evicted, rebuild.
  // dest is read-only, and executable exactly when `executable` (the record's
  // word, not the blob's: a blob takes the mode of the output that stored it
  // first, and a blob from a remote has none), so dest is a copy when the
  // blob's mode differs.
  Status Materialize(const Digest& digest, const std::string& dest, bool executable = false);
  Result<std::string> ReadBlob(const Digest& digest);  // verified
  Result<bool> HasBlob(const Digest& digest);

  // `benchmake cache push`: sends the record's blobs (outputs and log; HEAD
  // first, missing ones in parallel) and then the record itself to every
  // writable live remote, so a remote never holds a record whose blobs it
  // lacks. Unlike the build path, failures are returned: kUnavailable when no
  // remote can be written, else the first error. `uploaded` counts values sent.
  Status PushRecord(const ActionRecord& record, uint64_t* uploaded = nullptr);

  // The record for `key`, or nullopt. A malformed record is evicted (nullopt).
  // A record fetched from a remote has `origin` set to the remote's URL.
  Result<std::optional<ActionRecord>> GetAction(const Digest& key);
  Status PutAction(const ActionRecord& record);

 private:
  Status FetchFromRemotes(Namespace ns, const Digest& key, std::string* origin = nullptr);
  // kCorrupt unless the value a remote sent is fit to install: a blob that
  // hashes to its key, a record this benchmake reads whose key is `key`.
  Status CheckFetched(Namespace ns, const Digest& key, const std::string& path);
  void PushToRemotes(Namespace ns, const Digest& key);
  struct Remote {
    std::unique_ptr<RemoteBackend> backend;
    bool read_only = false;
    bool dead = false;
    // What this remote sent that we refused: not asked for again in this run.
    std::set<std::pair<Namespace, Digest>> refused;
  };
  void MarkDead(Remote& remote, const Status& why);
  bool Usable(Remote& remote);
  // Counts and reports a value a remote sent that we refuse (kCorrupt).
  void Reject(Remote& remote, Namespace ns, const Digest& key, const Status& why);

  Filesystem& fs_;
  LocalStore local_;
  std::vector<Remote> remotes_;
  RunHealth health_{"", ""};
  Status setup_problem_;  // why the configured remote is missing, if it is
  UsageStats usage_;
  int remote_parallel_ = 16;
};

}  // namespace bm::cache
