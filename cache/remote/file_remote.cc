#include "cache/remote/file_remote.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <vector>

#include "cache/remote/blob_sink.h"

namespace bm::cache {
namespace {

constexpr size_t kChunk = 1 << 20;

// Reads `fd` to the end, handing each chunk to `write`.
template <typename WriteFn>
Status CopyFd(int fd, const std::string& what, WriteFn write) {
  std::vector<char> buf(kChunk);
  while (true) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errorf(ErrorCode::kIo, "reading {}: {}", what, strerror(errno));
    if (n == 0) return Status::Ok();
    BM_TRY(write(buf.data(), static_cast<size_t>(n)));
  }
}

Status WriteAll(int fd, const char* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errorf(ErrorCode::kIo, "writing {}: {}", what, strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{:016x}", rng());
}

// A file URL's path decoded as RFC 3986 says ("%20" is a space), as curl and
// Python's url2pathname read it; nullopt for a '%' not followed by two hex digits.
std::optional<std::string> PercentDecode(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') {
      out += path[i];
      continue;
    }
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    int hi = i + 2 < path.size() ? hex(path[i + 1]) : -1;
    int lo = i + 2 < path.size() ? hex(path[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<FileRemote>> FileRemote::Create(const std::string& url) {
  std::string path;
  if (url.rfind("file:///", 0) == 0) {
    path = url.substr(7);
  } else if (url.rfind("file://localhost/", 0) == 0) {
    path = url.substr(16);
  } else {
    return Errorf(ErrorCode::kInvalidArgument,
                  "remote cache URL '{}': a file remote is file:///absolute/path", url);
  }
  std::optional<std::string> decoded = PercentDecode(path);
  if (!decoded) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "remote cache URL '{}': '%' must start an escape such as %20 (a space) or %25 "
                  "(a '%')",
                  url);
  }
  path = std::move(*decoded);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return std::unique_ptr<FileRemote>(new FileRemote(path));
}

std::string FileRemote::PathOf(Namespace ns, const Digest& key) const {
  return root_ + "/" + std::string(NamespaceName(ns)) + "/" + key.Hex();
}

Result<bool> FileRemote::Get(Namespace ns, const Digest& key, const std::string& dest_path) {
  std::string src = PathOf(ns, key);
  int fd = open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return false;
  if (fd < 0) return Errorf(ErrorCode::kUnavailable, "opening {}: {}", src, strerror(errno));
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  BlobSink sink(ns, key, dest_path);
  Status s = sink.Open();
  if (s.ok()) s = CopyFd(fd, src, [&](const char* p, size_t n) { return sink.Write(p, n); });
  close(fd);
  if (!s.ok()) return s;
  BM_TRY(sink.Finish());
  return true;
}

Status FileRemote::Put(Namespace ns, const Digest& key, const std::string& src_path) {
  std::string dest = PathOf(ns, key);
  std::string dir = root_ + "/" + std::string(NamespaceName(ns));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Errorf(ErrorCode::kUnavailable, "creating {}: {}", dir, ec.message());
  int in = open(src_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Errorf(ErrorCode::kIo, "opening {}: {}", src_path, strerror(errno));
  std::string tmp = dir + "/.tmp-" + key.Hex() + "-" + RandomSuffix();
  int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (out < 0) {
    close(in);
    return Errorf(ErrorCode::kUnavailable, "creating {}: {}", tmp, strerror(errno));
  }
  Status s =
      CopyFd(in, src_path, [&](const char* p, size_t n) { return WriteAll(out, p, n, tmp); });
  close(in);
  if (s.ok() && fsync(out) != 0) s = Errorf(ErrorCode::kIo, "fsync {}: {}", tmp, strerror(errno));
  if (close(out) != 0 && s.ok()) s = Errorf(ErrorCode::kIo, "closing {}: {}", tmp, strerror(errno));
  if (s.ok() && rename(tmp.c_str(), dest.c_str()) != 0) {
    s = Errorf(ErrorCode::kIo, "renaming {} to {}: {}", tmp, dest, strerror(errno));
  }
  if (!s.ok()) unlink(tmp.c_str());
  return s;
}

Result<bool> FileRemote::Exists(Namespace ns, const Digest& key) {
  struct stat st;
  std::string path = PathOf(ns, key);
  if (stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return Errorf(ErrorCode::kUnavailable, "stat {}: {}", path, strerror(errno));
}

}  // namespace bm::cache
