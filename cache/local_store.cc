#include "cache/local_store.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace bm::cache {
namespace {

std::atomic<uint64_t> g_counter{0};

std::string UniqueName(std::string_view hex) {
  return fmt::format("{}.{}.{}", hex, getpid(), g_counter.fetch_add(1));
}

// A store error names the cache directory: a read-only, full or misplaced cache shows as such.
Status InCache(const std::string& root, Status s) {
  if (s.ok()) return s;
  return Errorf(s.code(), "cache directory {}: {}", root, s.message());
}

}  // namespace

std::string LocalStore::PathOf(Namespace ns, const Digest& key) const {
  std::string hex = key.Hex();
  return fmt::format("{}/{}/{}/{}", root_, NamespaceName(ns), hex.substr(0, 2), hex);
}

Status LocalStore::Init() {
  return InCache(root_, [&]() -> Status {
    BM_ASSIGN_OR_RETURN(FileInfo tag, fs_.Stat(root_ + "/CACHEDIR.TAG"));
    if (tag.exists) return Status::Ok();
    BM_TRY(fs_.MakeDirs(root_ + "/tmp"));
    BM_TRY(fs_.MakeDirs(root_ + "/cas"));
    BM_TRY(fs_.MakeDirs(root_ + "/ac"));
    return fs_.WriteFileAtomic(
        root_ + "/CACHEDIR.TAG",
        "Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This directory is a cache of benchmake (build outputs by content).\n");
  }());
}

Result<FileInfo> LocalStore::StatEntry(Namespace ns, const Digest& key) {
  std::string path = PathOf(ns, key);
  BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(path));
  if (!info.is_dir) return info;
  BM_TRY(InCache(root_, fs_.RemoveAll(path)));
  std::fprintf(stderr, "benchmake: warning: cache entry %s was a directory, not a file; removed\n",
               path.c_str());
  return FileInfo{};
}

Result<bool> LocalStore::Exists(Namespace ns, const Digest& key) {
  BM_ASSIGN_OR_RETURN(FileInfo info, StatEntry(ns, key));
  return info.exists;
}

Status LocalStore::Install(Namespace ns, const Digest& key, const std::string& src) {
  return InCache(root_, InstallFile(ns, key, src));
}

Status LocalStore::InstallFile(Namespace ns, const Digest& key, const std::string& src) {
  std::string dest = PathOf(ns, key);
  BM_TRY(fs_.MakeDirs(DirName(dest)));
  BM_TRY(fs_.MakeDirs(TempDir()));
  std::string tmp = TempDir() + "/" + UniqueName(key.Hex());
  // A file with other names (a step's `ln /data/x {out}/x`) is not the
  // caller's alone: linking it would make those read-only and share the entry.
  BM_ASSIGN_OR_RETURN(FileInfo info, fs_.Stat(src));
  BM_TRY(info.links > 1 ? fs_.CopyReadOnly(src, tmp, info.executable) : fs_.LinkOrCopy(src, tmp));
  Status s = fs_.SetReadOnly(tmp);
  if (s.ok()) s = fs_.Rename(tmp, dest);
  if (!s.ok()) (void)fs_.Remove(tmp);
  return s;
}

Status LocalStore::InstallBytes(Namespace ns, const Digest& key, std::string_view bytes) {
  return InCache(root_, WriteBytes(ns, key, bytes));
}

Status LocalStore::WriteBytes(Namespace ns, const Digest& key, std::string_view bytes) {
  std::string dest = PathOf(ns, key);
  BM_TRY(fs_.MakeDirs(DirName(dest)));
  BM_TRY(fs_.MakeDirs(TempDir()));
  std::string tmp = TempDir() + "/" + UniqueName(key.Hex());
  BM_TRY(fs_.WriteFileAtomic(tmp, bytes, /*read_only=*/true));
  Status s = fs_.Rename(tmp, dest);
  if (!s.ok()) (void)fs_.Remove(tmp);
  return s;
}

Status LocalStore::Evict(Namespace ns, const Digest& key) { return fs_.Remove(PathOf(ns, key)); }

void LocalStore::MarkUsed(Namespace ns, const Digest& key) { (void)fs_.Touch(PathOf(ns, key)); }

}  // namespace bm::cache
