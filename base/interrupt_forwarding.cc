#include "base/interrupt_forwarding.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "base/guardian.h"

namespace bm {
namespace {

// The process groups of every running child, for the handler that forwards
// SIGINT, SIGTERM and SIGHUP to them. A fixed table of atomics: a signal handler may
// only read memory it cannot see half-written. A child beyond the table still
// runs; it just misses the forwarded signal.
constexpr int kMaxForwarded = 256;
std::atomic<pid_t> g_groups[kMaxForwarded];
// The guardian (base/guardian.h) of the command in the same slot; 0: none.
std::atomic<pid_t> g_guardians[kMaxForwarded];
// Command::interrupt_grace_seconds of the command in the same slot, in ms.
std::atomic<int> g_grace_ms[kMaxForwarded];

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

// Waits until the child `pid` has ended or `deadline` (ms) has passed, and
// leaves it unreaped (WNOWAIT): a thread running it still sees how it ended.
void WaitUntilEnded(pid_t pid, int64_t deadline) {
  for (;;) {
    siginfo_t info{};
    int w = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 || info.si_pid == pid || MonotonicMs() >= deadline) return;
    timespec tick{0, 10 * 1000 * 1000};
    ::nanosleep(&tick, nullptr);
  }
}

// After the forwarded signal: each command has its grace to end, then what
// is left of it is SIGKILLed: its group, and, through its guardian, every
// process it started. A shell's background job ignores SIGINT, a command may
// ignore both signals, a daemon may have left the group (setsid); without
// this they outlive the interrupted step, on GPUs the allocator has handed
// back. A guardian ends once the tree has: benchmake dies after it.
// clock_gettime, waitid, nanosleep and kill are async-signal-safe.
void KillWhatIsLeft() {
  // A process stuck in the kernel (uninterruptible sleep) does not hold up
  // benchmake's death longer than this.
  constexpr int64_t kGuardianWaitMs = 10000;
  const int64_t start = MonotonicMs();
  for (int i = 0; i < kMaxForwarded; ++i) {
    const pid_t g = g_groups[i].load();
    if (g <= 0) continue;
    const pid_t guardian = g_guardians[i].load();
    WaitUntilEnded(guardian > 0 ? guardian : g, start + g_grace_ms[i].load());
    ::kill(-g, SIGKILL);
    if (guardian <= 0) continue;
    ::kill(guardian, SIGTERM);  // stop the whole tree now
    WaitUntilEnded(guardian, MonotonicMs() + kGuardianWaitMs);
  }
}

void ForwardSignal(int sig) {
  // The cancellations (scancel ...) first, each waited for: what they cancel
  // outlives us otherwise. Before the signal: srun passes a SIGTERM on to its
  // tasks, and when their death ends the job before scancel reaches it, the
  // job ends FAILED, not CANCELLED (seen on a loaded machine). Cancelled
  // first, srun sees its job end. With this handler's signal mask.
  for (std::atomic<const PreparedExec*>& slot : g_cancels) {
    const PreparedExec* c = slot.load();
    if (c != nullptr) (void)RunPreparedExec(*c, /*mask=*/nullptr, /*timeout_ms=*/-1);
  }
  // They have run: a guardian does not run its command's again when we die
  // (killed with SIGKILL during the grace below).
  for (std::atomic<pid_t>& guardian : g_guardians) {
    pid_t g = guardian.load();
    if (g > 0) ::kill(g, kGuardianCancelledSignal);
  }
  for (std::atomic<pid_t>& group : g_groups) {
    pid_t g = group.load();
    if (g > 0) ::kill(-g, sig);
  }
  KillWhatIsLeft();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

ForwardingScope::ForwardingScope() {
  std::lock_guard lock(g_forward_mu);
  if (g_forward_users++ > 0) return;
  struct sigaction sa {};
  sa.sa_handler = ForwardSignal;
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
  ::sigaction(SIGHUP, nullptr, &g_old_hup);
  if (g_old_hup.sa_handler != SIG_IGN) ::sigaction(SIGHUP, &sa, nullptr);
}

ForwardingScope::~ForwardingScope() {
  for (std::atomic<pid_t>* slot : slots_) {
    g_guardians[slot - g_groups].store(0);
    slot->store(0);
  }
  for (std::atomic<const PreparedExec*>* slot : cancel_slots_) slot->store(nullptr);
  std::lock_guard lock(g_forward_mu);
  if (--g_forward_users > 0) return;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  ::sigaction(SIGHUP, &g_old_hup, nullptr);
}

void ForwardingScope::Add(pid_t group, pid_t guardian, double grace_seconds) {
  for (int i = 0; i < kMaxForwarded; ++i) {
    pid_t free = 0;
    if (g_groups[i].compare_exchange_strong(free, group)) {
      g_guardians[i].store(guardian);
      g_grace_ms[i].store(static_cast<int>(std::max(grace_seconds, 0.0) * 1000));
      slots_.push_back(&g_groups[i]);
      return;
    }
  }
}

void ForwardingScope::AddCancel(const PreparedExec* cancel) {
  for (std::atomic<const PreparedExec*>& slot : g_cancels) {
    const PreparedExec* free = nullptr;
    if (slot.compare_exchange_strong(free, cancel)) {
      cancel_slots_.push_back(&slot);
      return;
    }
  }
}

}  // namespace bm
