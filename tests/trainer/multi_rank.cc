#include "tests/trainer/multi_rank.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace bm::train::dist::testing {
namespace {

// The child's report on its pipe: three length-prefixed strings.
void WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void WriteString(int fd, const std::string& s) {
  const uint64_t n = s.size();
  WriteAll(fd, &n, sizeof n);
  WriteAll(fd, s.data(), s.size());
}

bool ReadString(const std::string& bytes, size_t* pos, std::string* out) {
  uint64_t n = 0;
  if (bytes.size() - *pos < sizeof n) return false;
  std::memcpy(&n, bytes.data() + *pos, sizeof n);
  *pos += sizeof n;
  if (bytes.size() - *pos < n) return false;
  *out = bytes.substr(*pos, n);
  *pos += n;
  return true;
}

}  // namespace

std::string RankOutcome::Describe() const {
  if (!returned) {
    if (WIFSIGNALED(wait_status))
      return fmt::format("killed by signal {} before returning", WTERMSIG(wait_status));
    return fmt::format("exited with status {} before returning", WEXITSTATUS(wait_status));
  }
  return result.error.empty() ? "passed" : result.error;
}

std::vector<RankOutcome> RunRanks(int n, double timeout_s,
                                  const std::function<RankResult(int rank)>& body) {
  std::fflush(nullptr);  // nothing buffered twice
  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  std::vector<int> fds(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) break;
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      for (int fd : fds)
        if (fd >= 0) close(fd);
      RankResult result;
      try {
        result = body(r);
      } catch (const std::exception& e) {
        result.error = std::string("exception: ") + e.what();
      }
      WriteString(p[1], result.error);
      WriteString(p[1], result.output);
      WriteString(p[1], result.skip);
      close(p[1]);
      _exit(0);  // no gtest teardown, no atexit handlers of the parent's
    }
    close(p[1]);
    pids[static_cast<size_t>(r)] = pid;
    fds[static_cast<size_t>(r)] = p[0];
  }

  // Read every pipe to its end, or until the deadline.
  std::vector<std::string> bytes(static_cast<size_t>(n));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(timeout_s * 1000));
  int open_fds = 0;
  for (int fd : fds) open_fds += fd >= 0;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::vector<pollfd> polls;
    for (int fd : fds)
      if (fd >= 0) polls.push_back({fd, POLLIN, 0});
    if (poll(polls.data(), polls.size(), static_cast<int>(left.count())) <= 0) continue;
    for (const pollfd& q : polls) {
      if (!(q.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const size_t r = static_cast<size_t>(std::find(fds.begin(), fds.end(), q.fd) - fds.begin());
      char buf[4096];
      const ssize_t got = read(q.fd, buf, sizeof buf);
      if (got > 0) {
        bytes[r].append(buf, static_cast<size_t>(got));
      } else {
        close(q.fd);
        fds[r] = -1;
        --open_fds;
      }
    }
  }

  std::vector<RankOutcome> outcomes(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const size_t i = static_cast<size_t>(r);
    if (fds[i] >= 0) {  // past the deadline
      kill(pids[i], SIGKILL);
      close(fds[i]);
    }
    if (pids[i] > 0) waitpid(pids[i], &outcomes[i].wait_status, 0);
    size_t pos = 0;
    RankResult& res = outcomes[i].result;
    outcomes[i].returned = ReadString(bytes[i], &pos, &res.error) &&
                           ReadString(bytes[i], &pos, &res.output) &&
                           ReadString(bytes[i], &pos, &res.skip);
  }
  return outcomes;
}

bool AllRanksPassed(const std::vector<RankOutcome>& outcomes) {
  bool ok = true;
  for (size_t r = 0; r < outcomes.size(); ++r) {
    if (outcomes[r].returned && outcomes[r].result.error.empty()) continue;
    ADD_FAILURE() << "rank " << r << ": " << outcomes[r].Describe();
    ok = false;
  }
  return ok;
}

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/bm-comm-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

RankEnv EnvOf(int rank, int world, const std::string& rendezvous, double timeout_s) {
  RankEnv env;
  env.rank = rank;
  env.world_size = world;
  env.local_rank = rank;
  env.local_world_size = world;
  env.rendezvous = rendezvous;
  env.timeout_s = timeout_s;
  return env;
}

}  // namespace bm::train::dist::testing
