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

  // A second holder of the same lock whose descriptor, unlike this one's,
  // processes started while it lives inherit (fd() names it to them): the
  // lock then lasts until they have all ended too, even when this process is
  // killed. Precondition: held().
  Result<FileLock> Inheritable() const;
  // Keeps the inherited lock descriptor `fd` from the processes this one
  // starts (sets FD_CLOEXEC); a descriptor that is not open is ignored.
  static void KeepFromChildren(int fd);

  bool held() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Release();

 private:
  int fd_ = -1;
};

}  // namespace bm
