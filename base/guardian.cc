#include "base/guardian.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "base/process_tree.h"

namespace bm {
namespace {

// How long SIGKILL is sent again and again to what is left before giving up.
constexpr int64_t kGiveUpMs = 10000;
// How long the cancel command (scancel) is waited for when benchmake has died,
// before the tree is stopped all the same (and the cancel command with it).
constexpr int kCancelWaitMs = 10000;

int64_t GuardianNowMs() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000 + t.tv_nsec / 1000000;
}

// What is left is SIGKILLed from `when` on, or from an earlier time already set.
void KillBy(int64_t when, int64_t* kill_at) {
  if (*kill_at < 0 || when < *kill_at) *kill_at = when;
}

void Report(int fd, int32_t kind, int32_t value, int32_t extra) {
  GuardianReport r;
  r.kind = kind;
  r.value = value;
  r.extra = extra;
  // No reader left (benchmake died) is EPIPE: SIGPIPE is blocked here.
  while (::write(fd, &r, sizeof r) < 0 && errno == EINTR) {
  }
}

// Starts the command as a child of this process; its pid (0: fork failed) and
// the errno of a failed start.
struct Started {
  pid_t pid = 0;
  int error = 0;
};
Started StartCommand(const ExecSpec& spec) {
  Started s;
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    s.error = errno;
    return s;
  }
  ExecSpec exec = spec;
  exec.die_with = ::getpid();  // killing the guardian alone still stops the command
  s.pid = ::fork();
  if (s.pid == 0) {
    ::close(err_pipe[0]);
    ExecCommand(exec, err_pipe[1]);
  }
  ::close(err_pipe[1]);
  if (s.pid < 0) {
    s.error = errno;
    s.pid = 0;
    ::close(err_pipe[0]);
    return s;
  }
  ::setpgid(s.pid, s.pid);  // as the child does: whichever runs first
  // End of file once the command has exec'd (the pipe is close-on-exec). Made
  // here, after the fork from benchmake, no other process holds its write end.
  int error = 0;
  ssize_t got;
  while ((got = ::read(err_pipe[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  ::close(err_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof error)) s.error = error;
  return s;
}

}  // namespace

void ExecCommand(const ExecSpec& spec, int error_fd) {
  ::setpgid(0, 0);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  if (spec.die_with > 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != spec.die_with) ::_exit(127);  // the parent died before prctl
  }
  ::sigprocmask(SIG_SETMASK, &spec.mask, nullptr);
  if (spec.out_fd >= 0) {
    ::dup2(spec.out_fd, 1);
    ::dup2(spec.out_fd, 2);
  }
  if (spec.cwd == nullptr || ::chdir(spec.cwd) == 0) ::execvpe(spec.argv[0], spec.argv, spec.envp);
  int e = errno;
  (void)!::write(error_fd, &e, sizeof e);
  ::_exit(127);
}

void RunGuardian(const GuardianSpec& spec) {
  // A group of its own: no signal meant for benchmake's group (ninja's
  // interrupt of the step) or for the command's reaches it.
  ::setpgid(0, 0);
  // Nothing interrupts it; it takes SIGCHLD, SIGTERM, its parent's death
  // signal and kGuardianCancelledSignal with sigtimedwait.
  sigset_t all;
  ::sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::prctl(PR_SET_PDEATHSIG, kGuardianParentDeathSignal);
  if (::getppid() != spec.parent) ::_exit(0);  // benchmake died before prctl: start nothing
  ::prctl(PR_SET_NAME, "benchmake-guard");
  // Without it (Linux before 3.4) an orphan goes to init; the tree is still
  // searched from here, so only processes whose parent died are missed.
  (void)::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int keep[] = {spec.report_fd, spec.exec.out_fd};
  CloseCloexecDescriptors(keep, 2);

  const Started command = StartCommand(spec.exec);
  // The command holds its output now; a copy here would keep a pipe that
  // benchmake reads to its end open.
  if (spec.exec.out_fd >= 0) ::close(spec.exec.out_fd);
  Report(spec.report_fd, GuardianReport::kStarted, command.pid, command.error);

  const pid_t self = ::getpid();
  int status = 127 << 8;  // as a shell reports a command it could not start
  bool ended = command.pid == 0, stop_now = false, blind = false, sweep = false;
  bool orphaned = false;  // the parent's death was handled
  // The cancel command has run, or must not: the interrupt handler ran it.
  bool cancelled = spec.cancel == nullptr;
  int left_running = 0;
  int64_t kill_at = -1;        // SIGKILL the rest from then on; -1: not yet
  int64_t killing_since = -1;  // when SIGKILL was first sent
  for (;;) {
    bool children = true;
    for (;;) {
      int st = 0;
      const pid_t p = ::waitpid(-1, &st, WNOHANG);
      if (p < 0 && errno == EINTR) continue;
      if (p <= 0) {
        children = p == 0;  // -1 (ECHILD): no child, so no descendant, is left
        break;
      }
      if (p != command.pid) continue;
      status = st;
      ended = true;
      sweep = !stop_now;
      // At once: of ranks that fail together, benchmake names the one that
      // ended first, not the one whose tree was gone first.
      Report(spec.report_fd, GuardianReport::kExited, status, 0);
    }
    // The common case, nothing left: no need to look.
    if (ended && !children) break;
    if (sweep) {
      sweep = false;
      const int n = SignalDescendants(self, SIGTERM);
      blind = n < 0;
      if (blind) ::kill(-command.pid, SIGKILL);  // at least its process group
      if (n > 0) {
        left_running = n;
        KillBy(GuardianNowMs() + spec.leftover_grace_ms, &kill_at);
      }
    }
    // Without /proc nothing can be found: what is left goes to init.
    if (ended && blind) break;
    const int64_t now = GuardianNowMs();
    const bool killing = stop_now || (kill_at >= 0 && now >= kill_at);
    if (killing && killing_since < 0) killing_since = now;
    // What SIGKILL has not ended in this long cannot be ended (another user's,
    // or stuck in the kernel): say so rather than hang the build. Still
    // waited for while it is the command itself: its status is the step's.
    if (ended && killing && now - killing_since >= kGiveUpMs) {
      const int n = SignalDescendants(self, 0);
      if (n > 0) Report(spec.report_fd, GuardianReport::kAbandoned, n, 0);
      break;
    }
    if (killing && SignalDescendants(self, SIGKILL) < 0 && command.pid > 0)
      ::kill(-command.pid, SIGKILL);
    sigset_t wanted;
    ::sigemptyset(&wanted);
    for (int s : {SIGCHLD, SIGTERM, kGuardianParentDeathSignal, kGuardianCancelledSignal})
      ::sigaddset(&wanted, s);
    // Killing: look again soon for what was forked meanwhile; a process
    // killed in uninterruptible sleep (a driver call) is waited for.
    int64_t wait_ms = killing ? 10 : kill_at >= 0 ? kill_at - now : -1;
    timespec timeout{static_cast<time_t>(wait_ms / 1000),
                     static_cast<long>(wait_ms % 1000) * 1000000};
    const int sig = ::sigtimedwait(&wanted, nullptr, wait_ms >= 0 ? &timeout : nullptr);
    if (sig == SIGTERM) stop_now = true;
    if (sig == kGuardianCancelledSignal) cancelled = true;
    // Benchmake has died. Not checked with getppid(): the thread that forked
    // the guardian may die first of a killed multithreaded process, and the
    // kernel then hands the guardian to a sibling thread (the same pid, dying
    // too) and sends the signal again, which changes nothing (an orphaned
    // command that has ended meanwhile keeps what is left its grace). That
    // thread never ends before the guardian otherwise: Run and RunGroup wait
    // for it.
    if (sig == kGuardianParentDeathSignal && !orphaned) {
      orphaned = true;
      // What benchmake sent before it died may still be pending: the lowest
      // signal number is taken first, and SIGHUP is 1.
      sigset_t pending;
      ::sigpending(&pending);
      if (::sigismember(&pending, SIGTERM)) stop_now = true;
      if (::sigismember(&pending, kGuardianCancelledSignal)) cancelled = true;
      // Nobody is left to cancel what the command stands for elsewhere (the
      // Slurm job of a srun, which SIGKILL leaves running): do it before
      // the tree is stopped. Not when benchmake had stopped the tree itself
      // or the command has ended (reaped, or a zombie whose SIGCHLD is still
      // pending behind SIGHUP: left for the loop to reap): then there is
      // nothing left to cancel.
      siginfo_t exited{};
      const bool gone = ended || (::waitid(P_PID, static_cast<id_t>(command.pid), &exited,
                                           WEXITED | WNOHANG | WNOWAIT) == 0 &&
                                  exited.si_pid == command.pid);
      const bool interrupt = spec.interrupt_when_orphaned && !stop_now && !gone;
      // As benchmake's interrupt handler would have: the signal first, so
      // that the command stops its own work while the cancel command runs.
      if (interrupt) ::kill(-command.pid, SIGTERM);
      if (!cancelled && !stop_now && !gone)
        (void)RunPreparedExec(*spec.cancel, &spec.exec.mask, kCancelWaitMs);
      cancelled = true;
      if (interrupt)
        KillBy(GuardianNowMs() + spec.leftover_grace_ms, &kill_at);
      else
        stop_now = true;
    }
  }
  Report(spec.report_fd, GuardianReport::kEnded, status, left_running);
  ::_exit(0);
}

}  // namespace bm
