// RealFilesystem: the Filesystem interface on the local disk (POSIX).
//
// WriteFileAtomic: temp file in the same directory (name.tmp.PID.N), fsync,
// rename, fsync of the directory is skipped (durability of the name is not
// needed for a cache: a lost entry is a miss). HashFile reads in 64 KiB blocks
// with POSIX_FADV_SEQUENTIAL (XXH3 with AVX2 when the CPU has it).
//
// Thread safety: stateless apart from an atomic counter for temp names.
#pragma once

#include <string>

#include "base/filesystem.h"

namespace bm {

class RealFilesystem : public Filesystem {
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
  Result<bool> IsSymlink(const std::string& path) override;
  Status SetReadOnly(const std::string& path) override;
  Status SetExecutable(const std::string& path) override;
  Status Touch(const std::string& path) override;
  Result<Digest> HashFile(const std::string& path) override;
  Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) override;
};

// A file written under a temporary name beside `path` (name.tmp.PID.N) and renamed over it
// by Commit; the temporary is removed if Commit is never reached or fails. For contents
// written piece by piece (WriteFileAtomic's, or a file too large to hold in memory).
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  Status Open();
  Status Write(const void* data, size_t bytes);
  // fsync first when durable, mode 0444 when read_only, then the rename.
  Status Commit(bool read_only = false, bool durable = true);

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The process-wide real filesystem.
Filesystem& DiskFilesystem();

// Hashes an open file descriptor from its current offset to the end.
Result<Digest> HashFd(int fd, const std::string& name_for_errors);

}  // namespace bm
