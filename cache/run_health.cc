#include "cache/run_health.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>

namespace bm::cache {
namespace {

std::string ReadFd(int fd) {
  std::string text;
  char buf[8192];
  ssize_t n;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

// The reason recorded for (run, url) in `text`, or nullptr-equivalent "".
bool FindLine(const std::string& text, const std::string& run, const std::string& url,
              std::string* reason) {
  std::string prefix = run + "\t" + url + "\t";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (text.compare(start, prefix.size(), prefix) == 0) {
      if (reason) *reason = text.substr(start + prefix.size(), end - start - prefix.size());
      return true;
    }
    start = end + 1;
  }
  return false;
}

std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return s;
}

}  // namespace

RunHealth::RunHealth(std::string path, std::string run_id)
    : path_(std::move(path)), run_id_(std::move(run_id)) {
  if (run_id_.empty()) path_.clear();
}

RunHealth RunHealth::ForWorkspace(const std::string& state_dir) {
  const char* run = std::getenv("BENCHMAKE_RUN_ID");
  return RunHealth(state_dir + "/remote-dead", run != nullptr ? run : "");
}

std::string RunHealth::NewRunId() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::random_device rd;
  return fmt::format("{}-{}-{:08x}", std::chrono::duration_cast<std::chrono::seconds>(now).count(),
                     getpid(), rd());
}

bool RunHealth::IsDead(const std::string& url) { return !Reason(url).empty(); }

std::string RunHealth::Reason(const std::string& url) {
  if (auto it = dead_.find(url); it != dead_.end()) return it->second;
  if (path_.empty()) return "";
  int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text = ReadFd(fd);
  close(fd);
  std::string reason;
  if (!FindLine(text, run_id_, url, &reason)) return "";
  if (reason.empty()) reason = "failed earlier in this run";
  dead_[url] = reason;
  return reason;
}

bool RunHealth::MarkDead(const std::string& url, const std::string& reason) {
  bool first = dead_.emplace(url, reason.empty() ? "failed" : OneLine(reason)).second;
  if (path_.empty()) return first;
  int fd = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return first;
  flock(fd, LOCK_EX);
  std::string text = ReadFd(fd);
  if (FindLine(text, run_id_, url, nullptr)) {
    first = false;
  } else {
    // Keep only this run's lines: earlier runs' verdicts no longer hold.
    std::string kept;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      if (text.compare(start, run_id_.size() + 1, run_id_ + "\t") == 0) {
        kept += text.substr(start, end - start) + "\n";
      }
      start = end + 1;
    }
    kept += run_id_ + "\t" + url + "\t" + OneLine(reason) + "\n";
    if (ftruncate(fd, 0) == 0) {
      lseek(fd, 0, SEEK_SET);
      ssize_t unused = write(fd, kept.data(), kept.size());
      (void)unused;
    }
    first = true;
  }
  flock(fd, LOCK_UN);
  close(fd);
  return first;
}

}  // namespace bm::cache
