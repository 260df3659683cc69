#include "base/process_tree.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace bm {
namespace {

// Calls `f(name, dir_fd)` for each entry of the directory `path`, read with
// getdents64 into a buffer on the stack (opendir allocates). False when the
// directory cannot be opened.
template <typename F>
bool ForEachDirEntry(const char* path, F&& f) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  // struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, then the name.
  constexpr size_t kReclenAt = 16, kNameAt = 19;
  alignas(8) char buf[16384];
  for (;;) {
    long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      unsigned short reclen = 0;
      std::memcpy(&reclen, buf + at + kReclenAt, sizeof reclen);
      if (reclen == 0) break;
      f(buf + at + kNameAt, fd);
      at += reclen;
    }
  }
  ::close(fd);
  return true;
}

// The number `s` spells in decimal, or -1 when it is not one.
long ParseDecimal(const char* s) {
  if (*s == '\0') return -1;
  long v = 0;
  for (; *s != '\0'; ++s) {
    if (*s < '0' || *s > '9' || v > 0x7fffffff / 10) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

struct ProcFacts {
  pid_t ppid = -1;  // -1: gone, or unreadable
  bool zombie = false;
};

// What /proc/PID/stat says of `pid`: "PID (COMM) STATE PPID ...". COMM may
// hold spaces and ')'; nothing after it does, so the last ')' ends it.
ProcFacts FactsOf(pid_t pid) {
  char path[32] = "/proc/";
  char digits[16];
  int nd = 0;
  for (unsigned v = static_cast<unsigned>(pid); v > 0 || nd == 0; v /= 10)
    digits[nd++] = static_cast<char>('0' + v % 10);
  size_t at = std::strlen(path);
  while (nd > 0) path[at++] = digits[--nd];
  std::memcpy(path + at, "/stat", sizeof "/stat");

  ProcFacts facts;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return facts;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return facts;
  buf[n] = '\0';
  const char* end = std::strrchr(buf, ')');
  if (end == nullptr || end[1] != ' ' || end[2] == '\0' || end[3] != ' ') return facts;
  facts.zombie = end[2] == 'Z';
  long ppid = 0;
  for (const char* p = end + 4; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
  facts.ppid = static_cast<pid_t>(ppid);
  return facts;
}

struct ProcEntry {
  pid_t pid;
  pid_t ppid;
  bool below;  // a descendant of the root
};

// Beyond this many processes on the machine, the rest are found by a later
// call, once the ones found have gone.
constexpr size_t kMaxProcs = size_t{1} << 16;

}  // namespace

int SignalDescendants(pid_t root, int sig) {
  const size_t bytes = kMaxProcs * sizeof(ProcEntry);
  void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return -1;
  ProcEntry* procs = static_cast<ProcEntry*>(mem);
  size_t n = 0;
  const bool read = ForEachDirEntry("/proc", [&](const char* name, int) {
    const long pid = ParseDecimal(name);
    if (pid <= 0 || pid == root || n == kMaxProcs) return;
    const ProcFacts facts = FactsOf(static_cast<pid_t>(pid));
    // A zombie is already dead: its parent reaps it, or dies and leaves it to us.
    if (facts.ppid < 0 || facts.zombie) return;
    procs[n++] = ProcEntry{static_cast<pid_t>(pid), facts.ppid, false};
  });
  if (!read) {
    ::munmap(mem, bytes);
    return -1;
  }
  auto by_pid = [](const ProcEntry& a, const ProcEntry& b) { return a.pid < b.pid; };
  std::sort(procs, procs + n, by_pid);
  // One pass per level of the tree: a process is below the root when its
  // parent is the root or below it.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (procs[i].below) continue;
      bool below = procs[i].ppid == root;
      if (!below) {
        const ProcEntry key{procs[i].ppid, 0, false};
        const ProcEntry* parent = std::lower_bound(procs, procs + n, key, by_pid);
        below = parent != procs + n && parent->pid == key.pid && parent->below;
      }
      if (below) procs[i].below = changed = true;
    }
  }
  int found = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!procs[i].below) continue;
    ++found;
    (void)::kill(procs[i].pid, sig);  // EPERM: another user's (setuid); still counted
  }
  ::munmap(mem, bytes);
  return found;
}

bool CloseCloexecDescriptors(const int* keep, int n_keep) {
  return ForEachDirEntry("/proc/self/fd", [&](const char* name, int dir_fd) {
    const long fd = ParseDecimal(name);
    if (fd < 0 || fd == dir_fd || std::find(keep, keep + n_keep, fd) != keep + n_keep) return;
    const int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC)) ::close(static_cast<int>(fd));
  });
}

}  // namespace bm
