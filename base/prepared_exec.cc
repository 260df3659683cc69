#include "base/prepared_exec.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/subprocess_runner.h"

extern char** environ;

namespace bm {
namespace {

int64_t PreparedExecNowMs() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000;
}

}  // namespace

std::vector<std::string> MergedEnvironment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    std::string key(entry.substr(0, eq));
    if (!extra.count(key)) env.emplace_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::unique_ptr<PreparedExec> PrepareExec(const Command& cmd) {
  if (cmd.on_interrupt.empty()) return nullptr;
  auto p = std::make_unique<PreparedExec>();
  Result<std::string> path = FindOnPath(cmd.on_interrupt[0]);
  p->path = path.ok() ? *path : cmd.on_interrupt[0];  // execve then fails: nothing to cancel
  p->args = cmd.on_interrupt;
  p->env = MergedEnvironment(cmd.env);
  for (std::string& a : p->args) p->argv.push_back(a.data());
  p->argv.push_back(nullptr);
  for (std::string& e : p->env) p->envp.push_back(e.data());
  p->envp.push_back(nullptr);
  return p;
}

bool RunPreparedExec(const PreparedExec& p, const sigset_t* mask, int timeout_ms) {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // benchmake's interrupt handler (base/interrupt_forwarding.h) must not run
    // here before execve resets it; an ignored signal (nohup) stays ignored.
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) ::signal(sig, SIG_DFL);
    }
    if (mask != nullptr) ::sigprocmask(SIG_SETMASK, mask, nullptr);
    ::execve(p.path.c_str(), p.argv.data(), p.envp.data());
    ::_exit(127);
  }
  int wstatus = 0;
  if (timeout_ms < 0) {
    pid_t w;
    while ((w = ::waitpid(pid, &wstatus, 0)) < 0 && errno == EINTR) {
    }
    return w == pid;
  }
  const int64_t deadline = PreparedExecNowMs() + timeout_ms;
  for (;;) {
    const pid_t w = ::waitpid(pid, &wstatus, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) return false;
    if (PreparedExecNowMs() >= deadline) return false;
    timespec tick{0, 10 * 1000 * 1000};
    ::nanosleep(&tick, nullptr);
  }
}

}  // namespace bm
