#include "cache/cache.h"

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

void Cache::AddRemote(std::unique_ptr<RemoteBackend> remote, bool read_only) {
  remotes_.push_back(Remote{std::move(remote), read_only, false});
}

void Cache::MarkDead(Remote& remote, const Status& why) {
  remote.dead = true;
  std::fprintf(stderr, "benchmake: warning: remote cache %s %s (%s); using the local cache only\n",
               remote.backend->url().c_str(),
               why.code() == ErrorCode::kTimeout ? "timed out" : "failed", why.message().c_str());
}

Status Cache::FetchFromRemotes(Namespace ns, const Digest& key) {
  for (Remote& r : remotes_) {
    if (r.dead) continue;
    BM_TRY(fs_.MakeDirs(local_.TempDir()));
    BM_ASSIGN_OR_RETURN(std::string dir, fs_.MakeTempDir(local_.TempDir(), "fetch."));
    std::string tmp = dir + "/value";
    Result<bool> got = r.backend->Get(ns, key, tmp);
    Status s;
    if (!got.ok()) {
      MarkDead(r, got.status());
    } else if (*got) {
      if (ns == Namespace::kCas) {
        Result<Digest> d = fs_.HashFile(tmp);
        if (!d.ok() || !(*d == key)) {
          std::fprintf(stderr, "benchmake: warning: remote %s sent a corrupt blob %s; ignored\n",
                       r.backend->url().c_str(), key.Hex().c_str());
          (void)fs_.RemoveAll(dir);
          continue;
        }
      }
      s = local_.Install(ns, key, tmp);
      (void)fs_.RemoveAll(dir);
      return s;
    }
    (void)fs_.RemoveAll(dir);
  }
  return Errorf(ErrorCode::kNotFound, "{} {} not in cache", NamespaceName(ns), key.Hex());
}

void Cache::PushToRemotes(Namespace ns, const Digest& key) {
  for (Remote& r : remotes_) {
    if (r.dead || r.read_only) continue;
    Result<bool> exists = r.backend->Exists(ns, key);
    if (!exists.ok()) {
      MarkDead(r, exists.status());
      continue;
    }
    if (*exists) continue;
    Status s = r.backend->Put(ns, key, local_.PathOf(ns, key));
    if (!s.ok()) MarkDead(r, s);
  }
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
    if (r.dead) continue;
    Result<bool> e = r.backend->Exists(Namespace::kCas, digest);
    if (!e.ok())
      MarkDead(r, e.status());
    else if (*e)
      return true;
  }
  return false;
}

Status Cache::Materialize(const Digest& digest, const std::string& dest) {
  std::string path = local_.PathOf(Namespace::kCas, digest);
  BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(path));
  if (!info.exists) BM_TRY(FetchFromRemotes(Namespace::kCas, digest));
  BM_ASSIGN_OR_RETURN(Digest actual, fs_.HashFile(path));
  if (!(actual == digest)) {
    (void)local_.Evict(Namespace::kCas, digest);
    return Errorf(ErrorCode::kCorrupt, "corrupt blob {} (its bytes hash to {}); evicted", path,
                  actual.Hex());
  }
  local_.MarkUsed(Namespace::kCas, digest);
  BM_TRY(fs_.Remove(dest));
  return fs_.LinkOrCopy(path, dest);
}

Result<std::string> Cache::ReadBlob(const Digest& digest) {
  std::string path = local_.PathOf(Namespace::kCas, digest);
  BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(path));
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
  BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(path));
  if (!info.exists) {
    Status s = FetchFromRemotes(Namespace::kAc, key);
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
  return std::optional<ActionRecord>(std::move(*record));
}

Status Cache::PutAction(const ActionRecord& record) {
  BM_TRY(local_.InstallBytes(Namespace::kAc, record.key, SerializeRecord(record)));
  PushToRemotes(Namespace::kAc, record.key);
  return Status::Ok();
}

}  // namespace bm::cache
