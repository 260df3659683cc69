#include "trainer/dist/heartbeat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace bm::train::dist {

std::string HeartbeatPath(const std::string& rendezvous, int rank) {
  return rendezvous + "/heartbeat/rank-" + std::to_string(rank);
}

Heartbeat::Heartbeat(const std::string& rendezvous, int rank) {
  const std::string path = HeartbeatPath(rendezvous, rank);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::write(fd_, pid.data(), pid.size()) < 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  thread_ = std::thread([this] { Beat(); });
}

Heartbeat::~Heartbeat() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  if (fd_ >= 0) ::close(fd_);
}

void Heartbeat::Beat() {
  const auto interval = std::chrono::duration<double>(kHeartbeatIntervalS);
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, interval, [this] { return stop_; }))
    (void)::futimens(fd_, nullptr);  // mtime := now
}

}  // namespace bm::train::dist
