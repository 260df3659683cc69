// Filesystem: every file access of the engine and the cache goes through this
// interface, so that whole build scenarios run in unit tests on an in-memory
// fake (tests/support/memory_filesystem.h) with no disk.
//
// Paths are plain strings; implementations do not resolve '..' or symlinks.
// Missing files: Stat() returns an OK FileInfo with exists == false; the other
// calls return kNotFound.
//
// Thread safety: implementations are safe to call from several threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/digest.h"
#include "base/result.h"

namespace bm {

struct FileInfo {
  bool exists = false;
  bool is_dir = false;
  bool executable = false;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  uint64_t links = 1;  // hard links to the file (names of its inode)
};

class Filesystem {
 public:
  virtual ~Filesystem() = default;

  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  virtual Result<std::string> ReadFile(const std::string& path) = 0;

  // Atomic replace: writes a temporary file beside `path`, fsyncs it and renames
  // it over `path`; on failure the temporary is removed and `path` is untouched.
  // The parent directory must exist. read_only: the file ends up mode 0444.
  // durable: fsync before the rename (cache entries); state that can be
  // rebuilt (.benchmake/) passes false and skips the fsync (~8 ms each).
  virtual Status WriteFileAtomic(const std::string& path, std::string_view data,
                                 bool read_only = false, bool durable = true) = 0;

  virtual Status MakeDirs(const std::string& path) = 0;  // like mkdir -p
  // Names (not paths) of the entries of a directory, sorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  virtual Status Remove(const std::string& path) = 0;     // a file; OK when missing
  virtual Status RemoveAll(const std::string& path) = 0;  // a tree; OK when missing
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // Hard link `from` at `to`; copies when linking is impossible (another
  // filesystem) and when `from` is a symbolic link (its target's bytes: the
  // target is never linked, so never changed through `to`). `to` must not exist.
  virtual Status LinkOrCopy(const std::string& from, const std::string& to) = 0;
  // Copies the bytes of `from` into a new file `to` (never a link) of mode
  // 0444, or 0555 when `executable`: an output whose mode differs from the
  // cached blob's. `to` must not exist; on failure nothing is left at `to`.
  virtual Status CopyReadOnly(const std::string& from, const std::string& to, bool executable) = 0;
  // True when `path` itself is a symbolic link (Stat() follows links).
  virtual Result<bool> IsSymlink(const std::string& path) = 0;
  virtual Status SetReadOnly(const std::string& path) = 0;
  virtual Status SetExecutable(const std::string& path) = 0;
  virtual Status Touch(const std::string& path) = 0;  // mtime := now (LRU bookkeeping)

  // XXH3-128 of the file's bytes (large sequential reads on disk).
  virtual Result<Digest> HashFile(const std::string& path) = 0;

  // A fresh empty directory below `parent`, named prefix + something unique.
  virtual Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) = 0;
};

// Writes only when the bytes differ (keeps mtimes stable for ninja's restat).
// Returns true when it wrote. Not durable: for rebuildable state.
Result<bool> WriteFileIfChanged(Filesystem& fs, const std::string& path, std::string_view data);

// Every regular file below `dir`, as paths relative to `dir`, sorted, links
// followed; with `subdirs`, every directory below `dir` too (relative, parents
// first); with `linked`, the files reached through a symbolic link below `dir`
// (the file, or a directory on its way, is one), sorted.
Result<std::vector<std::string>> ListFilesRecursive(Filesystem& fs, const std::string& dir,
                                                    std::vector<std::string>* subdirs = nullptr,
                                                    std::vector<std::string>* linked = nullptr);

std::string JoinPath(std::string_view a, std::string_view b);
std::string DirName(std::string_view path);  // "a/b/c" -> "a/b"; "c" -> "."

}  // namespace bm
