// The processes below a subreaper, found in /proc, for the guardian
// (base/guardian.h) that stops what a command leaves behind.
//
// Everything here is async-signal-safe in practice: raw system calls (open,
// read, getdents64, mmap, kill, fcntl, close) and no allocation from the heap,
// so a child forked from a multithreaded process may call it before any
// exec. Linux only.
#pragma once

#include <sys/types.h>

namespace bm {

// Sends `sig` to every descendant of `root` that /proc shows now: its
// children, their children, and so on, whatever their session or process
// group (`sig` 0: none is signalled). Returns how many it found, those it
// may not signal (another user's: a setuid program) included, or -1 when
// /proc cannot be read.
// A process forked while this runs may be missed; a caller that must leave
// none calls it again until `root` has no child left (a subreaper inherits
// the children of every descendant that dies). Thread-safe.
int SignalDescendants(pid_t root, int sig);

// Closes every descriptor of this process that is marked close-on-exec,
// except the `n_keep` in `keep`: what another thread opened for its own
// child, or for itself, and that a forked process which does not exec must
// not hold open (a pipe whose end of file another process waits for).
// Returns false when /proc/self/fd cannot be read (then nothing is closed).
bool CloseCloexecDescriptors(const int* keep, int n_keep);

}  // namespace bm
