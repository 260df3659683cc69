// MemoryFilesystem: an in-memory Filesystem for unit tests (leveldb's memenv,
// ninja's VirtualFileSystem). Hard links share one file object (same inode,
// same bytes); mtimes come from a logical clock that ticks on every write or
// touch, and a directory's mtime ticks when entries are added or removed. Counters let tests assert
// how often files were read or hashed.
//
// Failure injection: FailWritesMatching(substring) makes WriteFileAtomic fail
// for matching paths (before the rename: the old file stays intact).
// FailRemovesMatching(substring): Remove of a matching path fails (kIo), as in
// a read-only directory, and the file stays.
// VanishAfterRenameTo(substring): a file renamed to a matching path is gone
// right after the rename succeeds, as if another process (`cache gc`) removed it.
//
// Thread safety: a mutex guards everything.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "base/filesystem.h"

namespace bm::testing {

class MemoryFilesystem : public Filesystem {
 public:
  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::string> ReadFile(const std::string& path) override;
  Status WriteFileAtomic(const std::string& path, std::string_view data, bool read_only = false,
                         bool durable = true) override;
  Status MakeDirs(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status LinkOrCopy(const std::string& from, const std::string& to) override;
  Status CopyReadOnly(const std::string& from, const std::string& to, bool executable) override;
  Result<bool> IsSymlink(const std::string&) override { return false; }  // none here
  Status SetReadOnly(const std::string& path) override;
  Status SetExecutable(const std::string& path) override;
  Status Touch(const std::string& path) override;
  Result<Digest> HashFile(const std::string& path) override;
  Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) override;

  // Test helpers. Write() creates parent directories and replaces in place
  // (same inode) when the file exists, like `echo x > file`.
  void Write(const std::string& path, std::string_view data);
  void CorruptInPlace(const std::string& path, std::string_view data);  // ignores read-only
  bool Exists(const std::string& path);
  std::string Read(const std::string& path);  // "" when missing
  void FailWritesMatching(std::string substring) { fail_writes_ = std::move(substring); }
  void VanishAfterRenameTo(std::string substring) { vanish_ = std::move(substring); }
  void FailRemovesMatching(std::string substring) { fail_removes_ = std::move(substring); }
  int hash_count(const std::string& path);

 private:
  struct File {
    std::string data;
    int64_t mtime = 0;
    uint64_t inode = 0;
    bool read_only = false;
    bool executable = false;
  };
  static std::string Norm(const std::string& path);
  bool IsDirLocked(const std::string& path) const;
  void TouchParentLocked(const std::string& path);
  Status MakeDirsLocked(const std::string& path);
  std::shared_ptr<File> NewFileLocked(std::string data);

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<File>> files_;
  std::map<std::string, int64_t> dirs_;  // path → mtime
  int64_t clock_ = 1000;
  uint64_t next_inode_ = 1;
  int temp_counter_ = 0;
  std::string fail_writes_;
  std::string vanish_;
  std::string fail_removes_;
  std::map<std::string, int> hash_counts_;
};

}  // namespace bm::testing
