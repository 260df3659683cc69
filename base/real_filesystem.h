// RealFilesystem: the Filesystem interface on the local disk (POSIX).
//
// WriteFileAtomic: temp file in the same directory (name.tmp.PID.N), fsync,
// rename, fsync of the directory is skipped (durability of the name is not
// needed for a cache: a lost entry is a miss). HashFile reads in 64 KiB blocks
// with POSIX_FADV_SEQUENTIAL (XXH3 with AVX2 when the CPU has it).
//
// Thread safety: stateless apart from an atomic counter for temp names.
#pragma once

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
  Status SetReadOnly(const std::string& path) override;
  Status SetExecutable(const std::string& path) override;
  Status Touch(const std::string& path) override;
  Result<Digest> HashFile(const std::string& path) override;
  Result<std::string> MakeTempDir(const std::string& parent, const std::string& prefix) override;
};

// The process-wide real filesystem.
Filesystem& DiskFilesystem();

// Hashes an open file descriptor from its current offset to the end.
Result<Digest> HashFd(int fd, const std::string& name_for_errors);

}  // namespace bm
