#include "cache/cache.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace bm::cache {

std::string DefaultCacheDir() {
  if (const char* dir = std::getenv("BENCHMAKE_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/benchmake";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/benchmake";
}

Cache::Cache(Filesystem& fs, std::string root) : fs_(fs), local_(fs, std::move(root)) {}

Cache::~Cache() {
  // Statistics are best effort: a read-only cache dir must not fail anything.
  if (!usage_.IsZero()) (void)AppendUsage(local_.root(), usage_);
}

void Cache::AddRemote(std::unique_ptr<RemoteBackend> remote, bool read_only) {
  remotes_.push_back(Remote{std::move(remote), read_only, false, {}});
}

void Cache::ReportRemoteProblem(const std::string& what, const Status& why) {
  setup_problem_ = why;
  ++usage_.remote_failures;
  if (health_.MarkDead(what, why.message())) {
    // A message that already names `what` (its context) is not prefixed twice.
    std::string text =
        why.message().starts_with(what + ": ") ? why.message() : what + ": " + why.message();
    std::fprintf(stderr, "benchmake: warning: remote cache %s; using the local cache only\n",
                 text.c_str());
  }
}

void Cache::MarkDead(Remote& remote, const Status& why) {
  remote.dead = true;
  ++usage_.remote_failures;
  if (health_.MarkDead(remote.backend->url(), why.message())) {
    std::fprintf(stderr,
                 "benchmake: warning: remote cache %s %s (%s); using the local cache only for the "
                 "rest of this build\n",
                 remote.backend->url().c_str(),
                 why.code() == ErrorCode::kTimeout ? "timed out" : "failed", why.message().c_str());
  }
}

bool Cache::Usable(Remote& remote) {
  if (remote.dead) return false;
  if (health_.IsDead(remote.backend->url())) remote.dead = true;  // an earlier step found it dead
  return !remote.dead;
}

bool Cache::HasLiveRemote() {
  for (Remote& r : remotes_) {
    if (Usable(r)) return true;
  }
  return false;
}

void Cache::Reject(Remote& remote, Namespace ns, const Digest& key, const Status& why) {
  remote.refused.insert({ns, key});
  bool rejected_record = why.message().rfind("rejected", 0) == 0;
  ++(rejected_record ? usage_.remote_rejected : usage_.remote_corrupt);
  std::fprintf(stderr, "benchmake: warning: remote cache %s: %s %s refused: %s\n",
               remote.backend->url().c_str(), std::string(NamespaceName(ns)).c_str(),
               key.Hex().c_str(), why.message().c_str());
}

Status Cache::CheckFetched(Namespace ns, const Digest& key, const std::string& path) {
  if (ns == Namespace::kCas) {
    // Backends verify blobs while downloading; check again before trusting
    // any backend's word, since a bad blob here would spread to every build.
    Result<Digest> d = fs_.HashFile(path);
    if (d.ok() && *d == key) return Status::Ok();
    return Status(ErrorCode::kCorrupt, "its bytes do not match the digest; not installed");
  }
  // A record is checked before it is installed: cut short by a server that
  // sent no length, or written by a newer benchmake, it is a miss, not an error.
  Result<std::string> bytes = fs_.ReadFile(path);
  Result<ActionRecord> record = bytes.ok() ? ParseRecord(*bytes) : bytes.status();
  if (!record.ok()) {
    return Status(ErrorCode::kCorrupt, record.status().message() + "; not installed");
  }
  if (!(record->key == key)) {
    return Errorf(ErrorCode::kCorrupt, "it is the record of key {}; not installed",
                  record->key.Hex());
  }
  return Status::Ok();
}

Status Cache::FetchFromRemotes(Namespace ns, const Digest& key, std::string* origin) {
  for (Remote& r : remotes_) {
    if (!Usable(r) || r.refused.count({ns, key})) continue;
    BM_TRY(fs_.MakeDirs(local_.TempDir()));
    BM_ASSIGN_OR_RETURN(std::string dir, fs_.MakeTempDir(local_.TempDir(), "fetch."));
    std::string tmp = dir + "/value";
    Result<bool> got = r.backend->Get(ns, key, tmp);
    if (!got.ok() && got.status().code() == ErrorCode::kCorrupt) {
      Reject(r, ns, key, got.status());
    } else if (!got.ok()) {
      MarkDead(r, got.status());
    } else if (!*got) {
      ++usage_.remote_misses;
    } else {
      Status valid = CheckFetched(ns, key, tmp);
      if (!valid.ok()) {
        Reject(r, ns, key, valid);
        (void)fs_.RemoveAll(dir);
        continue;
      }
      Result<FileInfo> info = fs_.Stat(tmp);
      ++usage_.remote_hits;
      if (info.ok()) usage_.remote_bytes_down += info->size;
      Status s = local_.Install(ns, key, tmp);
      (void)fs_.RemoveAll(dir);
      if (s.ok() && origin != nullptr) *origin = r.backend->url();
      return s;
    }
    (void)fs_.RemoveAll(dir);
  }
  return Errorf(ErrorCode::kNotFound, "{} {} not in cache", NamespaceName(ns), key.Hex());
}

void Cache::Prefetch(const std::vector<Digest>& digests) {
  std::vector<Digest> missing;
  for (const Digest& d : digests) {
    Result<bool> have = local_.Exists(Namespace::kCas, d);
    if (have.ok() && !*have && std::find(missing.begin(), missing.end(), d) == missing.end()) {
      missing.push_back(d);
    }
  }
  for (Remote& r : remotes_) {
    if (missing.empty()) return;
    if (!Usable(r)) continue;
    if (!fs_.MakeDirs(local_.TempDir()).ok()) return;
    Result<std::string> dir = fs_.MakeTempDir(local_.TempDir(), "prefetch.");
    if (!dir.ok()) return;
    std::vector<RemoteFetch> fetches;
    std::vector<Digest> still_missing;
    for (size_t i = 0; i < missing.size(); ++i) {
      if (r.refused.count({Namespace::kCas, missing[i]})) {
        still_missing.push_back(missing[i]);
      } else {
        fetches.push_back({Namespace::kCas, missing[i], *dir + "/" + std::to_string(i)});
      }
    }
    std::vector<Result<bool>> got = r.backend->GetMany(fetches, remote_parallel_);
    for (size_t i = 0; i < fetches.size(); ++i) {
      const Digest& d = fetches[i].key;
      if (!got[i].ok() && got[i].status().code() == ErrorCode::kCorrupt) {
        Reject(r, Namespace::kCas, d, got[i].status());
        still_missing.push_back(d);
      } else if (!got[i].ok()) {
        if (!r.dead) MarkDead(r, got[i].status());
        still_missing.push_back(d);
      } else if (!*got[i]) {
        ++usage_.remote_misses;
        still_missing.push_back(d);
      } else {
        Status valid = CheckFetched(Namespace::kCas, d, fetches[i].dest_path);
        Result<FileInfo> info = fs_.Stat(fetches[i].dest_path);
        if (!valid.ok()) {
          Reject(r, Namespace::kCas, d, valid);
          still_missing.push_back(d);
          continue;
        }
        ++usage_.remote_hits;
        if (info.ok()) usage_.remote_bytes_down += info->size;
        if (!local_.Install(Namespace::kCas, d, fetches[i].dest_path).ok())
          still_missing.push_back(d);
      }
    }
    (void)fs_.RemoveAll(*dir);
    missing = std::move(still_missing);
  }
}

void Cache::PushToRemotes(Namespace ns, const Digest& key) {
  for (Remote& r : remotes_) {
    if (r.read_only || !Usable(r)) continue;
    Result<bool> exists = r.backend->Exists(ns, key);
    if (!exists.ok()) {
      MarkDead(r, exists.status());
      continue;
    }
    if (*exists) continue;
    std::string path = local_.PathOf(ns, key);
    Status s = r.backend->Put(ns, key, path);
    if (!s.ok()) {
      MarkDead(r, s);
      continue;
    }
    ++usage_.remote_uploads;
    Result<FileInfo> info = fs_.Stat(path);
    if (info.ok()) usage_.remote_bytes_up += info->size;
  }
}

Status Cache::PushRecord(const ActionRecord& record, uint64_t* uploaded) {
  std::vector<Digest> blobs;
  for (const OutputFile& f : record.outputs) blobs.push_back(f.digest);
  if (Result<Digest> log = Digest::FromHex(record.log_digest); log.ok()) blobs.push_back(*log);
  bool any = false;
  for (Remote& r : remotes_) {
    if (r.read_only || !Usable(r)) continue;
    any = true;
    std::vector<RemotePush> pushes;
    for (const Digest& d : blobs) {
      Result<bool> exists = r.backend->Exists(Namespace::kCas, d);
      if (!exists.ok()) {
        MarkDead(r, exists.status());
        return exists.status();
      }
      if (!*exists) pushes.push_back({Namespace::kCas, d, local_.PathOf(Namespace::kCas, d)});
    }
    for (const RemotePush& p : pushes) {
      BM_ASSIGN_OR_RETURN(FileInfo info, local_.StatEntry(p.ns, p.key));
      if (!info.exists) {
        return Errorf(ErrorCode::kNotFound, "blob {} of {} is not in the local cache", p.key.Hex(),
                      record.target);
      }
      usage_.remote_bytes_up += info.size;
    }
    std::vector<Status> put = r.backend->PutMany(pushes, remote_parallel_);
    for (const Status& s : put) {
      if (!s.ok()) {
        MarkDead(r, s);
        return s;
      }
    }
    std::string ac = local_.PathOf(Namespace::kAc, record.key);
    Result<bool> have = r.backend->Exists(Namespace::kAc, record.key);
    if (!have.ok()) {
      MarkDead(r, have.status());
      return have.status();
    }
    size_t sent = pushes.size();
    if (!*have) {
      Status s = r.backend->Put(Namespace::kAc, record.key, ac);
      if (!s.ok()) {
        MarkDead(r, s);
        return s;
      }
      ++sent;
    }
    usage_.remote_uploads += sent;
    if (uploaded != nullptr) *uploaded += sent;
  }
  if (!any && remotes_.empty() && !setup_problem_.ok()) {
    return Status(setup_problem_.code(),
                  "the remote cache could not be set up: " + setup_problem_.message());
  }
  if (!any) {
    return Status(ErrorCode::kUnavailable,
                  remotes_.empty() ? "no remote cache is configured ([benchmake.cache] remote, or "
                                     "BENCHMAKE_REMOTE_CACHE)"
                                   : "no writable remote cache (read-only, or failed earlier)");
  }
  return Status::Ok();
}

Result<Digest> Cache::PutFile(const std::string& path) {
  BM_ASSIGN_OR_RETURN(Digest d, fs_.HashFile(path));
  BM_ASSIGN_OR_RETURN(bool have, local_.Exists(Namespace::kCas, d));
  if (!have)
    BM_TRY(local_.Install(Namespace::kCas, d, path));
  else
    local_.MarkUsed(Namespace::kCas, d);
  PushToRemotes(Namespace::kCas, d);
  return d;
}

Result<Digest> Cache::PutBytes(std::string_view bytes) {
  Digest d = DigestOf(bytes);
  BM_ASSIGN_OR_RETURN(bool have, local_.Exists(Namespace::kCas, d));
  if (!have) BM_TRY(local_.InstallBytes(Namespace::kCas, d, bytes));
  PushToRemotes(Namespace::kCas, d);
  return d;
}

Result<bool> Cache::HasBlob(const Digest& digest) {
  BM_ASSIGN_OR_RETURN(bool have, local_.Exists(Namespace::kCas, digest));
  if (have) return true;
  for (Remote& r : remotes_) {
    if (!Usable(r)) continue;
    Result<bool> e = r.backend->Exists(Namespace::kCas, digest);
    if (!e.ok())
      MarkDead(r, e.status());
    else if (*e)
      return true;
  }
  return false;
}

Status Cache::Materialize(const Digest& digest, const std::string& dest, bool executable) {
  std::string path = local_.PathOf(Namespace::kCas, digest);
  BM_ASSIGN_OR_RETURN(FileInfo info, local_.StatEntry(Namespace::kCas, digest));
  if (!info.exists) {
    BM_TRY(FetchFromRemotes(Namespace::kCas, digest));
    BM_ASSIGN_OR_RETURN(info, fs_.Stat(path));
  }
  BM_ASSIGN_OR_RETURN(Digest actual, fs_.HashFile(path));
  if (!(actual == digest)) {
    (void)local_.Evict(Namespace::kCas, digest);
    return Errorf(ErrorCode::kCorrupt, "corrupt blob {} (its bytes hash to {}); evicted", path,
                  actual.Hex());
  }
  local_.MarkUsed(Namespace::kCas, digest);
  BM_TRY(fs_.Remove(dest));
  if (info.executable != executable) return fs_.CopyReadOnly(path, dest, executable);
  return fs_.LinkOrCopy(path, dest);
}

Result<std::string> Cache::ReadBlob(const Digest& digest) {
  std::string path = local_.PathOf(Namespace::kCas, digest);
  BM_ASSIGN_OR_RETURN(FileInfo info, local_.StatEntry(Namespace::kCas, digest));
  if (!info.exists) BM_TRY(FetchFromRemotes(Namespace::kCas, digest));
  BM_ASSIGN_OR_RETURN(std::string bytes, fs_.ReadFile(path));
  if (!(DigestOf(bytes) == digest)) {
    (void)local_.Evict(Namespace::kCas, digest);
    return Errorf(ErrorCode::kCorrupt, "corrupt blob {}; evicted", path);
  }
  return bytes;
}

Result<std::optional<ActionRecord>> Cache::GetAction(const Digest& key) {
  std::string path = local_.PathOf(Namespace::kAc, key);
  BM_ASSIGN_OR_RETURN(FileInfo info, local_.StatEntry(Namespace::kAc, key));
  std::string origin;
  if (info.exists) {
    ++usage_.local_hits;
  } else {
    ++usage_.local_misses;
    Status s = FetchFromRemotes(Namespace::kAc, key, &origin);
    if (s.code() == ErrorCode::kNotFound) return std::optional<ActionRecord>();
    BM_TRY(s);
  }
  BM_ASSIGN_OR_RETURN(std::string bytes, fs_.ReadFile(path));
  Result<ActionRecord> record = ParseRecord(bytes);
  if (!record.ok() || !(record->key == key)) {
    if (record.ok() || record.status().code() == ErrorCode::kCorrupt) {
      std::fprintf(stderr, "benchmake: warning: corrupt action record %s; evicted\n", path.c_str());
      (void)local_.Evict(Namespace::kAc, key);
      return std::optional<ActionRecord>();
    }
    return record.status();
  }
  local_.MarkUsed(Namespace::kAc, key);
  record->origin = origin;
  return std::optional<ActionRecord>(std::move(*record));
}

Status Cache::PutAction(const ActionRecord& record) {
  BM_TRY(local_.InstallBytes(Namespace::kAc, record.key, SerializeRecord(record)));
  PushToRemotes(Namespace::kAc, record.key);
  return Status::Ok();
}

}  // namespace bm::cache
