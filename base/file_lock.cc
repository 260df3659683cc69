#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bm {
namespace {

Result<int> OpenLockFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Errorf(ErrorCode::kIo, "opening lock {}: {}", path, std::strerror(errno));
  return fd;
}

}  // namespace

FileLock::~FileLock() { Release(); }

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    Release();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void FileLock::Release() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
  fd_ = -1;
}

Result<FileLock> FileLock::Inheritable() const {
  int fd = ::dup(fd_);  // no FD_CLOEXEC: the point
  if (fd < 0) return Errorf(ErrorCode::kIo, "duplicating a lock: {}", std::strerror(errno));
  FileLock copy;
  copy.fd_ = fd;
  return copy;
}

void FileLock::KeepFromChildren(int fd) {
  int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) (void)::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

Result<bool> FileLock::TryLock(const std::string& path, FileLock* lock) {
  BM_ASSIGN_OR_RETURN(int fd, OpenLockFile(path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) return false;
    return Errorf(ErrorCode::kIo, "locking {}: {}", path, std::strerror(err));
  }
  lock->Release();
  lock->fd_ = fd;
  return true;
}

Result<FileLock> FileLock::Lock(const std::string& path) {
  BM_ASSIGN_OR_RETURN(int fd, OpenLockFile(path));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd);
    return Errorf(ErrorCode::kIo, "locking {}: {}", path, std::strerror(err));
  }
  FileLock lock;
  lock.fd_ = fd;
  return lock;
}

}  // namespace bm
