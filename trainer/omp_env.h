// OpenMP's idle threads spin by default (GOMP_SPINCOUNT), which is right on a
// dedicated machine and ruinous on a shared or oversubscribed one: measured on
// the 2-core build machine under load, the op tests took 13 s spinning and
// 0.16 s with OMP_WAIT_POLICY=passive. libgomp reads the variable once when it
// loads, so a process that wants it set must be started with it.
#pragma once

namespace bm::train {

// When OMP_WAIT_POLICY is unset: sets it to "passive" and re-executes the
// current program (/proc/self/exe) with the same arguments. Returns (doing
// nothing) when it is already set or the re-exec fails. Call first in main().
void EnsureOpenMpWaitPolicy(char** argv);

}  // namespace bm::train
