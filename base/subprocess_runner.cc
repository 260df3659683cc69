#include "base/subprocess_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "base/guardian.h"
#include "base/interrupt_forwarding.h"
#include "base/prepared_exec.h"

extern char** environ;

namespace bm {
namespace {

using Clock = std::chrono::steady_clock;

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
  pid_t pid = -1;      // the process waited for: the command's guardian
  pid_t group = -1;    // the command's pid, also its process group
  int report_fd = -1;  // read end of the guardian's report pipe
  int log_fd = -1;     // Command::log_path, or -1
  int tee_fd = -1;     // read end of the output pipe when echoing to the terminal
  Clock::time_point start;
  bool ended = false;
  int wstatus = 0;                    // the command's
  std::optional<int> command_status;  // reported by its guardian
  bool exit_seen = false;             // Supervise has acted on command_status
  int abandoned = 0;                  // processes of its tree SIGKILL did not end
  int left_running = 0;               // processes the command left behind, stopped by its guardian
  bool timed_out = false;
  bool stopped = false;
  std::optional<Clock::time_point> kill_at;  // SIGKILL due (a SIGTERM was sent)

  ~Child() {
    CloseFd(log_fd);
    CloseFd(tee_fd);
    CloseFd(report_fd);
  }
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  bool running() const { return !ended; }
  // Timed out, or its command ended unsuccessfully (known from its guardian
  // before the guardian has ended).
  bool failed() const {
    std::optional<int> st = ended ? std::optional<int>(wstatus) : command_status;
    return timed_out || (st && (!WIFEXITED(*st) || WEXITSTATUS(*st) != 0));
  }
  // Waits for `pid` (blocking or not); true once it has ended and is reaped.
  bool Wait(bool block) {
    int st = 0;
    pid_t w;
    while ((w = ::waitpid(pid, &st, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
    }
    if (w == 0) return false;
    Reaped(w == pid ? st : 0);
    return true;
  }
  // `pid` has ended with `st`. A guardian has reported how the command ended;
  // one killed before it could (kill -9 by hand) ended the command with it.
  void Reaped(int st) {
    ended = true;
    wstatus = st;
    ReadReports();
    if (command_status) wstatus = *command_status;
    CloseFd(report_fd);
  }
  // Whether the command has ended, though its guardian may still be stopping
  // what it left running.
  bool CommandExited() {
    ReadReports();
    return ended || command_status.has_value();
  }
  // Whether the kernel says the command has ended (a zombie its guardian has
  // not reaped yet, or gone), before its guardian could say so: the same fact
  // a waitpid on the command gives, as early.
  bool CommandGone() const {
    if (group <= 0) return true;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(group));
    char buf[512] = {};
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    // "PID (COMM) STATE PPID PGRP SESSION TTY TPGID FLAGS ...": a zombie, or
    // one already exiting (PF_EXITING: its files are closed, so a peer it
    // fed has seen end of file, before it is a zombie).
    const char* paren = n > 0 ? std::strrchr(buf, ')') : nullptr;
    if (paren == nullptr || paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X') return true;
    unsigned long flags = 0;
    if (std::sscanf(paren + 2, "%*c %*d %*d %*d %*d %*d %lu", &flags) != 1) return false;
    constexpr unsigned long kPfExiting = 0x4;  // include/linux/sched.h
    return (flags & kPfExiting) != 0;
  }
  // What the guardian has written so far (the report pipe does not block).
  void ReadReports() {
    if (report_fd < 0) return;
    GuardianReport r;
    while (::read(report_fd, &r, sizeof r) == static_cast<ssize_t>(sizeof r)) {
      if (r.kind == GuardianReport::kExited || r.kind == GuardianReport::kEnded)
        command_status = r.value;
      if (r.kind == GuardianReport::kEnded) left_running = r.extra;
      if (r.kind == GuardianReport::kAbandoned) abandoned = r.value;
    }
  }
  // Told to stop, but dead of a SIGKILL before ours was due: killed from
  // outside (kill -9, the OOM killer) while its end was on its way — its
  // sockets already closed, a peer already seen failing on them. It failed by
  // itself; it was not stopped.
  void ForgetStopIfKilledFromOutside() {
    const std::optional<int> st = ended ? std::optional<int>(wstatus) : command_status;
    if (stopped && kill_at && st && WIFSIGNALED(*st) && WTERMSIG(*st) == SIGKILL) stopped = false;
  }
  // SIGTERM to the command's group now, SIGKILL `grace` seconds later.
  void Terminate(double grace) {
    if (group > 0) ::kill(-group, SIGTERM);
    kill_at = Clock::now() +
              std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
  }
  // SIGKILL to the command's group and, through its guardian, to every
  // process it started.
  void Kill() {
    if (group > 0) ::kill(-group, SIGKILL);
    if (running()) ::kill(pid, SIGTERM);
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

// The signal mask a command starts with: this thread's, less the interrupt
// signals that HoldInterrupts holds back while it starts.
sigset_t CommandMask() {
  sigset_t mask;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigdelset(&mask, sig);
  return mask;
}

// Reads the guardian's first record (kStarted) from `child->report_fd`
// (non-blocking). False when the guardian ended without writing it; then it is
// reaped.
bool ReadStarted(Child* child, GuardianReport* r) {
  for (;;) {
    ssize_t n = ::read(child->report_fd, r, sizeof *r);
    if (n == static_cast<ssize_t>(sizeof *r)) return true;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
    // Another guardian forked meanwhile may hold the write end for a moment
    // (until it closes what is not its own): end of file is not enough.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(child->pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == child->pid) {
      n = ::read(child->report_fd, r, sizeof *r);
      if (n == static_cast<ssize_t>(sizeof *r)) return true;
      break;
    }
    pollfd p{child->report_fd, POLLIN, 0};
    ::poll(&p, 1, 50);
  }
  child->Wait(/*block=*/true);
  return false;
}

// Forks a guardian (base/guardian.h) that execs `cmd` in its own process
// group, and runs `cancel` (PrepareExec(cmd); null: none) should this process
// die while the command runs. A program that cannot be started is a Status,
// after its guardian was reaped.
Status Spawn(const Command& cmd, const PreparedExec* cancel, Child* child) {
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
  // The guardian's reports.
  int from_child[2];
  if (::pipe2(from_child, O_CLOEXEC) != 0) {
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
  ExecSpec exec;
  exec.argv = argv.data();
  exec.envp = envp.data();
  exec.cwd = cmd.cwd.empty() ? nullptr : cmd.cwd.c_str();
  exec.out_fd = tee ? out_pipe[1] : child->log_fd;
  exec.mask = CommandMask();
  GuardianSpec guardian;
  guardian.exec = exec;
  guardian.parent = ::getpid();
  guardian.report_fd = from_child[1];
  guardian.leftover_grace_ms = static_cast<int>(std::max(cmd.interrupt_grace_seconds, 0.0) * 1000);
  guardian.cancel = cancel;
  guardian.interrupt_when_orphaned = cmd.interrupt_when_orphaned;

  pid_t pid = ::fork();
  if (pid < 0) {
    CloseFd(out_pipe[1]);
    ::close(from_child[0]);
    ::close(from_child[1]);
    return Errorf(ErrorCode::kIo, "fork: {}", std::strerror(errno));
  }
  if (pid == 0) {
    ::close(from_child[0]);
    RunGuardian(guardian);
  }
  child->pid = pid;
  child->start = Clock::now();
  ::close(from_child[1]);
  CloseFd(out_pipe[1]);
  child->report_fd = from_child[0];
  (void)::fcntl(child->report_fd, F_SETFL, O_NONBLOCK);
  GuardianReport started;
  if (!ReadStarted(child, &started))
    return Errorf(ErrorCode::kIo, "cannot run '{}': its guardian process ended at once",
                  cmd.argv[0]);
  child->group = started.value;
  const int start_errno = started.extra;
  if (start_errno != 0) {
    child->Wait(/*block=*/true);
    ErrorCode code = start_errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    return Errorf(code, "cannot run '{}': {}", cmd.argv[0], std::strerror(start_errno));
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
      if (other.Wait(/*block=*/false)) continue;
      // Its command has ended by itself; its guardian still stops what it
      // left running, at once when it failed.
      if (other.CommandExited() || other.CommandGone()) {
        if (other.failed()) other.Kill();
        continue;
      }
      other.stopped = true;
      other.Terminate(grace);
    }
  };
  // One command without a timeout and without echo: nothing to do but wait.
  if (children.size() == 1 && children[0]->tee_fd < 0 && !children[0]->cmd->timeout_seconds) {
    children[0]->Wait(/*block=*/true);
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
      if (c.Wait(/*block=*/false)) {
        c.ForgetStopIfKilledFromOutside();
        if (c.failed()) {
          fail(i);  // what it left behind, its guardian has stopped
        } else if (!first_success) {
          first_success = Clock::now();
        }
        continue;
      }
      busy = true;
      // A member's command has ended while its guardian stops what it left:
      // the group need not wait for that to learn of a failure.
      if (group && !c.exit_seen && c.CommandExited()) {
        c.exit_seen = true;
        c.ForgetStopIfKilledFromOutside();
        if (c.failed()) {
          c.Kill();
          fail(i);
        } else if (!first_success) {
          first_success = Clock::now();
        }
      }
      const std::optional<double>& timeout = c.cmd->timeout_seconds;
      const bool straggling =
          group && stragglers && first_success && SecondsSince(*first_success) > *stragglers;
      if (!c.timed_out && ((timeout && SecondsSince(c.start) > *timeout) || straggling)) {
        c.timed_out = true;
        c.Terminate(grace);
        fail(i);
      }
      if (c.kill_at && Clock::now() >= *c.kill_at) {
        c.Kill();
        c.kill_at.reset();
      }
    }
    if (!busy) return first_failure;
    PumpOutput(children, wait_ms);
    wait_ms = std::min(wait_ms * 2, 20);
  }
}

// Says in the command's log (else on our stderr) that its guardian stopped
// processes the command left running when it ended: a daemon its outputs
// needed explains a failure, and the log is where one looks.
void NoteLeftovers(const Child& c) {
  std::string note;
  // A command benchmake stopped (a timeout, a failed peer) leaves what it
  // leaves: no news.
  if (c.left_running > 0 && !c.timed_out && !c.stopped) {
    note += fmt::format(
        "benchmake: '{}' left {} process{} running when it ended; stopped (SIGTERM, then SIGKILL "
        "after {:g} s)\n",
        c.cmd->argv[0], c.left_running, c.left_running == 1 ? "" : "es",
        std::max(c.cmd->interrupt_grace_seconds, 0.0));
  }
  if (c.abandoned > 0) {
    note += fmt::format(
        "benchmake: {} process{} that '{}' started did not end within 10 s of SIGKILL (another "
        "user's, or stuck in the kernel) and may still run\n",
        c.abandoned, c.abandoned == 1 ? "" : "es", c.cmd->argv[0]);
  }
  if (note.empty()) return;
  (void)!::write(c.log_fd >= 0 ? c.log_fd : 2, note.data(), note.size());
  if (c.log_fd >= 0 && c.cmd->echo_to_terminal) (void)!::write(2, note.data(), note.size());
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
  if (cancel) forwarding.AddCancel(cancel.get());
  BM_TRY(Spawn(cmd, cancel.get(), children[0].get()));
  const Child& child = *children[0];
  forwarding.Add(child.group, child.pid, cmd.interrupt_grace_seconds);
  hold.Release();
  Supervise(children, /*group=*/false, /*grace=*/5);
  NoteLeftovers(child);
  return child.Result();
}

Result<GroupResult> SubprocessRunner::RunGroup(const std::vector<Command>& commands,
                                               const GroupOptions& options) {
  std::vector<std::unique_ptr<Child>> children;
  // One per command (null: none); outlive `forwarding`.
  std::vector<std::unique_ptr<PreparedExec>> cancels;
  for (const Command& cmd : commands) cancels.push_back(PrepareExec(cmd));
  ForwardingScope forwarding;
  HoldInterrupts hold;
  for (const std::unique_ptr<PreparedExec>& c : cancels)
    if (c) forwarding.AddCancel(c.get());
  for (size_t i = 0; i < commands.size(); ++i) {
    const Command& cmd = commands[i];
    children.push_back(std::make_unique<Child>());
    Status started = Spawn(cmd, cancels[i].get(), children.back().get());
    if (!started.ok()) {
      children.pop_back();
      for (auto& c : children) {
        c->Kill();
        c->stopped = true;
      }
      Supervise(children, /*group=*/false, options.grace_seconds);
      return started;
    }
    const Child& child = *children.back();
    forwarding.Add(child.group, child.pid, cmd.interrupt_grace_seconds);
  }
  hold.Release();
  GroupResult result;
  result.first_failure =
      Supervise(children, /*group=*/true, options.grace_seconds, options.straggler_seconds);
  for (auto& c : children) {
    NoteLeftovers(*c);
    result.results.push_back(c->Result());
  }
  return result;
}

}  // namespace bm
