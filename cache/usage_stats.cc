#include "cache/usage_stats.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace bm::cache {
namespace {

struct Field {
  const char* name;
  uint64_t UsageStats::*member;
};

constexpr Field kFields[] = {
    {"local_hits", &UsageStats::local_hits},
    {"local_misses", &UsageStats::local_misses},
    {"remote_hits", &UsageStats::remote_hits},
    {"remote_misses", &UsageStats::remote_misses},
    {"remote_bytes_down", &UsageStats::remote_bytes_down},
    {"remote_bytes_up", &UsageStats::remote_bytes_up},
    {"remote_uploads", &UsageStats::remote_uploads},
    {"remote_failures", &UsageStats::remote_failures},
    {"remote_corrupt", &UsageStats::remote_corrupt},
    {"remote_rejected", &UsageStats::remote_rejected},
};

std::string LogPath(const std::string& root) { return root + "/stats.log"; }

// Opens the log for appending with an exclusive lock, making sure the locked
// file is still the one at `path` (Compact may have renamed a new one over it).
Result<int> OpenLocked(const std::string& path) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errorf(ErrorCode::kIo, "opening {}: {}", path, strerror(errno));
    if (flock(fd, LOCK_EX) != 0) {
      close(fd);
      return Errorf(ErrorCode::kIo, "locking {}: {}", path, strerror(errno));
    }
    struct stat locked, current;
    if (fstat(fd, &locked) == 0 && stat(path.c_str(), &current) == 0 &&
        locked.st_ino == current.st_ino && locked.st_dev == current.st_dev) {
      return fd;
    }
    close(fd);
  }
  return Errorf(ErrorCode::kIo, "{} keeps changing under us", path);
}

Result<std::string> ReadAll(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::string();
  if (fd < 0) return Errorf(ErrorCode::kIo, "opening {}: {}", path, strerror(errno));
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fd);
  return text;
}

UsageStats Sum(const std::string& text) {
  UsageStats total;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    Result<UsageStats> line =
        UsageStats::FromJson(std::string_view(text).substr(start, end - start));
    if (line.ok()) total += *line;
    start = end + 1;
  }
  return total;
}

}  // namespace

UsageStats& UsageStats::operator+=(const UsageStats& o) {
  for (const Field& f : kFields) this->*f.member += o.*f.member;
  return *this;
}

bool UsageStats::IsZero() const {
  for (const Field& f : kFields) {
    if (this->*f.member != 0) return false;
  }
  return true;
}

std::string UsageStats::ToJson() const {
  nlohmann::json j = nlohmann::json::object();
  for (const Field& f : kFields) {
    if (this->*f.member != 0) j[f.name] = this->*f.member;
  }
  return j.dump();
}

Result<UsageStats> UsageStats::FromJson(std::string_view line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Errorf(ErrorCode::kCorrupt, "not a stats line: {}", line);
  }
  UsageStats s;
  for (const Field& f : kFields) {
    auto it = j.find(f.name);
    if (it != j.end() && it->is_number_unsigned()) s.*f.member = it->get<uint64_t>();
  }
  return s;
}

Status AppendUsage(const std::string& root, const UsageStats& stats) {
  if (stats.IsZero()) return Status::Ok();
  std::string path = LogPath(root);
  BM_ASSIGN_OR_RETURN(int fd, OpenLocked(path));
  std::string line = stats.ToJson() + "\n";
  ssize_t n = write(fd, line.data(), line.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(line.size())) {
    return Errorf(ErrorCode::kIo, "appending to {}: {}", path, strerror(err));
  }
  return Status::Ok();
}

Result<UsageStats> LoadUsage(const std::string& root) {
  BM_ASSIGN_OR_RETURN(std::string text, ReadAll(LogPath(root)));
  return Sum(text);
}

Status CompactUsage(const std::string& root) {
  std::string path = LogPath(root);
  BM_ASSIGN_OR_RETURN(int fd, OpenLocked(path));
  Result<std::string> text = ReadAll(path);
  Status s = text.status();
  if (s.ok()) {
    std::string tmp = path + ".compact";
    std::string line = Sum(*text).ToJson() + "\n";
    int out = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || write(out, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        fsync(out) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
      s = Errorf(ErrorCode::kIo, "compacting {}: {}", path, strerror(errno));
      unlink(tmp.c_str());
    }
    if (out >= 0) close(out);
  }
  close(fd);
  return s;
}

}  // namespace bm::cache
