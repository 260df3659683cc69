#include "base/subprocess_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

extern char** environ;

namespace bm {
namespace {

using Clock = std::chrono::steady_clock;

// The process groups of every running child, for the handler that forwards
// SIGINT, SIGTERM and SIGHUP to them. A fixed table of atomics: a signal handler may
// only read memory it cannot see half-written. A child beyond the table still
// runs; it just misses the forwarded signal.
constexpr int kMaxForwarded = 256;
std::atomic<pid_t> g_groups[kMaxForwarded];
// Command::interrupt_grace_seconds of the command in the same slot, in ms.
std::atomic<int> g_grace_ms[kMaxForwarded];

// A Command::on_interrupt made ready for execve in a signal handler: every
// string and pointer array built before, nothing allocated after.
struct PreparedExec {
  std::string path;
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
};
std::atomic<const PreparedExec*> g_cancels[kMaxForwarded];
std::mutex g_forward_mu;
int g_forward_users = 0;  // guarded by g_forward_mu
struct sigaction g_old_int {};
struct sigaction g_old_term {};
struct sigaction g_old_hup {};

int64_t MonotonicMs() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000;
}

// After the forwarded signal: each command has its grace to end, then what
// is left of its group is SIGKILLed. A shell's background job ignores SIGINT
// and a command may ignore both signals; without this they outlive the
// interrupted step, on GPUs the allocator has handed back. The command is
// not reaped (WNOWAIT): a thread running it still sees how it ended.
// clock_gettime, waitid, nanosleep and kill are async-signal-safe.
void KillWhatIsLeft() {
  const int64_t start = MonotonicMs();
  for (int i = 0; i < kMaxForwarded; ++i) {
    const pid_t g = g_groups[i].load();
    if (g <= 0) continue;
    const int64_t deadline = start + g_grace_ms[i].load();
    for (;;) {
      siginfo_t info{};
      int w = ::waitid(P_PID, static_cast<id_t>(g), &info, WEXITED | WNOHANG | WNOWAIT);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 || info.si_pid == g || MonotonicMs() >= deadline) break;
      timespec tick{0, 10 * 1000 * 1000};
      ::nanosleep(&tick, nullptr);
    }
    ::kill(-g, SIGKILL);
  }
}

void ForwardSignal(int sig) {
  for (std::atomic<pid_t>& group : g_groups) {
    pid_t g = group.load();
    if (g > 0) ::kill(-g, sig);
  }
  // Then the cancellations (scancel ...), each waited for: what they cancel
  // outlives us otherwise. fork, execve, waitpid and _exit are async-signal-safe.
  for (std::atomic<const PreparedExec*>& slot : g_cancels) {
    const PreparedExec* c = slot.load();
    if (c == nullptr) continue;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execve(c->path.c_str(), c->argv.data(), c->envp.data());
      ::_exit(127);
    }
    int wstatus = 0;
    while (pid > 0 && ::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  KillWhatIsLeft();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// While alive: SIGINT, SIGTERM and SIGHUP sent to benchmake are forwarded to
// the groups added. The first scope installs the handler, the last restores
// the previous one (several threads may run commands at once). SIGHUP (the
// terminal closed) stops the commands as it stops ninja, unless benchmake was
// told to ignore it (nohup): killed by it, benchmake left them running.
class ForwardingScope {
 public:
  ForwardingScope() {
    std::lock_guard lock(g_forward_mu);
    if (g_forward_users++ > 0) return;
    struct sigaction sa {};
    sa.sa_handler = ForwardSignal;
    ::sigaction(SIGINT, &sa, &g_old_int);
    ::sigaction(SIGTERM, &sa, &g_old_term);
    ::sigaction(SIGHUP, nullptr, &g_old_hup);
    if (g_old_hup.sa_handler != SIG_IGN) ::sigaction(SIGHUP, &sa, nullptr);
  }
  ~ForwardingScope() {
    for (std::atomic<pid_t>* slot : slots_) slot->store(0);
    for (std::atomic<const PreparedExec*>* slot : cancel_slots_) slot->store(nullptr);
    std::lock_guard lock(g_forward_mu);
    if (--g_forward_users > 0) return;
    ::sigaction(SIGINT, &g_old_int, nullptr);
    ::sigaction(SIGTERM, &g_old_term, nullptr);
    ::sigaction(SIGHUP, &g_old_hup, nullptr);
  }
  ForwardingScope(const ForwardingScope&) = delete;
  ForwardingScope& operator=(const ForwardingScope&) = delete;

  void Add(pid_t group, double grace_seconds) {
    for (int i = 0; i < kMaxForwarded; ++i) {
      pid_t free = 0;
      if (g_groups[i].compare_exchange_strong(free, group)) {
        g_grace_ms[i].store(static_cast<int>(std::max(grace_seconds, 0.0) * 1000));
        slots_.push_back(&g_groups[i]);
        return;
      }
    }
  }
  // `cancel` (kept alive by the caller for the scope's life) runs when a
  // signal is forwarded.
  void AddCancel(const PreparedExec* cancel) {
    for (std::atomic<const PreparedExec*>& slot : g_cancels) {
      const PreparedExec* free = nullptr;
      if (slot.compare_exchange_strong(free, cancel)) {
        cancel_slots_.push_back(&slot);
        return;
      }
    }
  }

 private:
  std::vector<std::atomic<pid_t>*> slots_;
  std::vector<std::atomic<const PreparedExec*>*> cancel_slots_;
};

sigset_t InterruptSignals() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaddset(&set, sig);
  return set;
}

// Holds SIGINT, SIGTERM and SIGHUP back (in this thread) while children start
// and are added to the forwarding scope: one that arrives in between is
// handled once they are known to the handler, which otherwise forwarded it to
// no one and left the new child running. Spawn unblocks them in the child.
class HoldInterrupts {
 public:
  HoldInterrupts() {
    sigset_t set = InterruptSignals();
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~HoldInterrupts() { Release(); }
  HoldInterrupts(const HoldInterrupts&) = delete;
  HoldInterrupts& operator=(const HoldInterrupts&) = delete;
  void Release() {
    if (released_) return;
    released_ = true;
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_{};
  bool released_ = false;
};

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

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// One started command and what is known about it.
struct Child {
  const Command* cmd = nullptr;
  pid_t pid = -1;   // also its process group
  int log_fd = -1;  // Command::log_path, or -1
  int tee_fd = -1;  // read end of the output pipe when echoing to the terminal
  Clock::time_point start;
  bool ended = false;
  int wstatus = 0;
  bool timed_out = false;
  bool stopped = false;
  std::optional<Clock::time_point> kill_at;  // SIGKILL due (a SIGTERM was sent)

  ~Child() {
    CloseFd(log_fd);
    CloseFd(tee_fd);
  }
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool running() const { return !ended; }
  bool failed() const {
    return timed_out || (ended && (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0));
  }
  // SIGTERM to the whole group now, SIGKILL `grace` seconds later.
  void Terminate(double grace) {
    ::kill(-pid, SIGTERM);
    kill_at = Clock::now() +
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
  }
  CommandResult Result() const {
    CommandResult r;
    r.timed_out = timed_out;
    r.stopped = stopped;
    if (WIFEXITED(wstatus)) r.exit_code = WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) r.term_signal = WTERMSIG(wstatus);
    return r;
  }
};

// Forks and execs `cmd` in its own process group. With die_with_parent the
// child is SIGKILLed when this thread's process dies (PR_SET_PDEATHSIG), so
// that no rank outlives a killed step and keeps a GPU the allocator has
// already handed back. A program that cannot be started is a Status, after
// the failed child was reaped.
Status Spawn(const Command& cmd, bool die_with_parent, Child* child) {
  if (cmd.argv.empty()) return Errorf(ErrorCode::kInvalidArgument, "empty command");
  child->cmd = &cmd;
  if (!cmd.log_path.empty()) {
    child->log_fd = ::open(cmd.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (child->log_fd < 0)
      return Errorf(ErrorCode::kIo, "opening log {}: {}", cmd.log_path, std::strerror(errno));
  }
  const bool tee = child->log_fd >= 0 && cmd.echo_to_terminal;
  int out_pipe[2] = {-1, -1};
  if (tee && ::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Errorf(ErrorCode::kIo, "pipe: {}", std::strerror(errno));
  child->tee_fd = out_pipe[0];
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    CloseFd(out_pipe[1]);
    return Errorf(ErrorCode::kIo, "pipe: {}", std::strerror(errno));
  }

  std::vector<std::string> env = MergedEnvironment(cmd.env);
  std::vector<char*> envp, argv;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = cmd.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    CloseFd(out_pipe[1]);
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    return Errorf(ErrorCode::kIo, "fork: {}", std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    sigset_t held = InterruptSignals();  // HoldInterrupts' mask, which exec would keep
    ::sigprocmask(SIG_UNBLOCK, &held, nullptr);
    if (die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    }
    int out = tee ? out_pipe[1] : child->log_fd;
    if (out >= 0) {
      ::dup2(out, 1);
      ::dup2(out, 2);
    }
    if (!cmd.cwd.empty() && ::chdir(cmd.cwd.c_str()) != 0) {
      int e = errno;
      (void)!::write(err_pipe[1], &e, sizeof e);
      ::_exit(127);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  child->pid = pid;
  child->start = Clock::now();
  ::close(err_pipe[1]);
  CloseFd(out_pipe[1]);
  int exec_errno = 0;
  ssize_t got = ::read(err_pipe[0], &exec_errno, sizeof exec_errno);
  ::close(err_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    while (::waitpid(pid, &child->wstatus, 0) < 0 && errno == EINTR) {
    }
    child->ended = true;
    ErrorCode code = exec_errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    return Errorf(code, "cannot run '{}': {}", cmd.argv[0], std::strerror(exec_errno));
  }
  return Status::Ok();
}

// Copies what is waiting on the children's output pipes to their logs and to
// our stderr, waiting at most `wait_ms` for something to arrive. A pipe at
// end of file is closed.
void PumpOutput(std::vector<std::unique_ptr<Child>>& children, int wait_ms) {
  std::vector<pollfd> fds;
  std::vector<Child*> owners;
  for (auto& c : children) {
    if (c->tee_fd < 0) continue;
    fds.push_back({c->tee_fd, POLLIN, 0});
    owners.push_back(c.get());
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    return;
  }
  if (::poll(fds.data(), fds.size(), wait_ms) <= 0) return;
  char buf[65536];
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
    if (n > 0) {
      (void)!::write(owners[i]->log_fd, buf, static_cast<size_t>(n));
      (void)!::write(2, buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      CloseFd(owners[i]->tee_fd);
    }
  }
}

// Waits until every child has ended and its output is copied. With `group`,
// the first failure stops the others and `stragglers` bounds how long the
// rest may run after one succeeded (RunGroup's contract); a timeout sends
// SIGTERM and, `grace` seconds later, SIGKILL. Returns the first failed
// member in group mode, else -1.
int Supervise(std::vector<std::unique_ptr<Child>>& children, bool group, double grace,
              std::optional<double> stragglers = std::nullopt) {
  int first_failure = -1;
  auto fail = [&](size_t i) {
    if (!group || first_failure >= 0) return;
    first_failure = static_cast<int>(i);
    for (size_t j = 0; j < children.size(); ++j) {
      Child& other = *children[j];
      if (j == i || !other.running()) continue;
      // One already gone (within the same poll) ended by itself: not stopped.
      if (::waitpid(other.pid, &other.wstatus, WNOHANG) == other.pid) {
        other.ended = true;
        if (other.failed()) ::kill(-other.pid, SIGKILL);
        continue;
      }
      other.stopped = true;
      other.Terminate(grace);
    }
  };
  // One command without a timeout and without echo: nothing to do but wait.
  if (children.size() == 1 && children[0]->tee_fd < 0 && !children[0]->cmd->timeout_seconds) {
    Child& c = *children[0];
    while (::waitpid(c.pid, &c.wstatus, 0) < 0 && errno == EINTR) {
    }
    c.ended = true;
    return -1;
  }
  std::optional<Clock::time_point> first_success;
  int wait_ms = 1;  // short commands end fast; long ones are polled at 50 Hz
  for (;;) {
    bool busy = false;
    for (size_t i = 0; i < children.size(); ++i) {
      Child& c = *children[i];
      busy |= c.tee_fd >= 0;
      if (!c.running()) continue;
      pid_t w = ::waitpid(c.pid, &c.wstatus, WNOHANG);
      if (w == c.pid || (w < 0 && errno != EINTR)) {
        c.ended = true;
        // Told to stop, but dead of a SIGKILL before ours was due: killed from
        // outside (kill -9, the OOM killer) while its end was on its way — its
        // sockets already closed, a peer already seen failing on them. It
        // failed by itself; it was not stopped.
        if (c.stopped && c.kill_at && WIFSIGNALED(c.wstatus) && WTERMSIG(c.wstatus) == SIGKILL)
          c.stopped = false;
        if (c.failed()) {
          if (group) ::kill(-c.pid, SIGKILL);  // what the failed member left behind
          fail(i);
        } else if (!first_success) {
          first_success = Clock::now();
        }
        continue;
      }
      busy = true;
      const std::optional<double>& timeout = c.cmd->timeout_seconds;
      const bool straggling =
          group && stragglers && first_success && SecondsSince(*first_success) > *stragglers;
      if (!c.timed_out && ((timeout && SecondsSince(c.start) > *timeout) || straggling)) {
        c.timed_out = true;
        c.Terminate(grace);
        fail(i);
      }
      if (c.kill_at && Clock::now() >= *c.kill_at) {
        ::kill(-c.pid, SIGKILL);
        c.kill_at.reset();
      }
    }
    if (!busy) return first_failure;
    PumpOutput(children, wait_ms);
    wait_ms = std::min(wait_ms * 2, 20);
  }
}

}  // namespace

Result<std::string> FindOnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest.remove_prefix(colon == std::string_view::npos ? rest.size() : colon + 1);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return Errorf(ErrorCode::kNotFound, "'{}' is not on PATH", program);
}

Result<CommandResult> SubprocessRunner::Run(const Command& cmd) {
  std::vector<std::unique_ptr<Child>> children;
  children.push_back(std::make_unique<Child>());
  std::unique_ptr<PreparedExec> cancel = PrepareExec(cmd);  // outlives `forwarding`
  ForwardingScope forwarding;
  HoldInterrupts hold;
  BM_TRY(Spawn(cmd, /*die_with_parent=*/false, children[0].get()));
  forwarding.Add(children[0]->pid, cmd.interrupt_grace_seconds);
  if (cancel) forwarding.AddCancel(cancel.get());
  hold.Release();
  Supervise(children, /*group=*/false, /*grace=*/5);
  return children[0]->Result();
}

Result<GroupResult> SubprocessRunner::RunGroup(const std::vector<Command>& commands,
                                               const GroupOptions& options) {
  std::vector<std::unique_ptr<Child>> children;
  std::vector<std::unique_ptr<PreparedExec>> cancels;  // outlive `forwarding`
  for (const Command& cmd : commands)
    if (std::unique_ptr<PreparedExec> c = PrepareExec(cmd)) cancels.push_back(std::move(c));
  ForwardingScope forwarding;
  HoldInterrupts hold;
  for (const std::unique_ptr<PreparedExec>& c : cancels) forwarding.AddCancel(c.get());
  for (const Command& cmd : commands) {
    children.push_back(std::make_unique<Child>());
    Status started = Spawn(cmd, /*die_with_parent=*/true, children.back().get());
    if (!started.ok()) {
      children.pop_back();
      for (auto& c : children) {
        ::kill(-c->pid, SIGKILL);
        c->stopped = true;
      }
      Supervise(children, /*group=*/false, options.grace_seconds);
      return started;
    }
    forwarding.Add(children.back()->pid, cmd.interrupt_grace_seconds);
  }
  hold.Release();
  GroupResult result;
  result.first_failure =
      Supervise(children, /*group=*/true, options.grace_seconds, options.straggler_seconds);
  for (auto& c : children) result.results.push_back(c->Result());
  return result;
}

}  // namespace bm
