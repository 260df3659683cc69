#include "cache/remote/blob_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bm::cache {

BlobSink::BlobSink(Namespace ns, const Digest& key, std::string dest_path)
    : ns_(ns), key_(key), path_(std::move(dest_path)) {}

BlobSink::~BlobSink() {
  if (!finished_) Discard();
}

Status BlobSink::Open() {
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return Errorf(ErrorCode::kIo, "creating {}: {}", path_, strerror(errno));
  bytes_ = 0;
  if (ns_ == Namespace::kCas) hasher_ = std::make_unique<Hasher>();
  return Status::Ok();
}

Status BlobSink::Write(const char* data, size_t size) {
  if (hasher_) hasher_->Update(data, size);
  bytes_ += size;
  while (size > 0) {
    ssize_t n = write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errorf(ErrorCode::kIo, "writing {}: {}", path_, strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status BlobSink::Restart() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  return Open();
}

Status BlobSink::Finish() {
  finished_ = true;
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && close(fd) != 0) {
    Discard();
    return Errorf(ErrorCode::kIo, "writing {}: {}", path_, strerror(errno));
  }
  if (hasher_) {
    Digest actual = hasher_->Finish();
    if (!(actual == key_)) {
      Discard();
      return Errorf(ErrorCode::kCorrupt, "blob {} arrived with bytes that hash to {} ({} bytes)",
                    key_.Hex(), actual.Hex(), bytes_);
    }
  }
  return Status::Ok();
}

void BlobSink::Discard() {
  finished_ = true;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  unlink(path_.c_str());
}

}  // namespace bm::cache
