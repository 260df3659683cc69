// FileLock: an exclusive advisory lock (flock) on a lock file, released when
// the object is destroyed or the process dies (so kill -9 never leaves a stale
// lock). Used for the workspace lock and the GPU allocator.
//
// Thread safety: one FileLock per thread; the lock is per open file.
#pragma once

#include <string>

#include "base/result.h"

namespace bm {

class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Takes the lock without waiting; false (and no lock) when another holds it.
  static Result<bool> TryLock(const std::string& path, FileLock* lock);
  // Waits until the lock is free.
  static Result<FileLock> Lock(const std::string& path);

  bool held() const { return fd_ >= 0; }
  void Release();

 private:
  int fd_ = -1;
};

}  // namespace bm
