// OpenMP's idle threads spin by default (GOMP_SPINCOUNT), which is right on a
// dedicated machine and ruinous on a shared or oversubscribed one: measured on
// the 2-core build machine under load, the op tests took 13 s spinning and
// 0.16 s with OMP_WAIT_POLICY=passive. OpenBLAS's own threads likewise spin
// and sched_yield for 2^28 cycles after each call unless OPENBLAS_THREAD_TIMEOUT
// is small (4: sleep at once) — measured: 8 training steps of llama-small took
// 4.1 s of system time with the default and 0.5 s with 4. Both libraries read
// their variable once when they load, so a process must be started with them.
#pragma once

namespace bm::train {

// When OMP_WAIT_POLICY or OPENBLAS_THREAD_TIMEOUT is unset: sets them
// ("passive", "4") and re-executes the current program (/proc/self/exe) with the
// same arguments. Returns (doing nothing) when both are set or the re-exec
// fails. Call first in main().
void EnsureOpenMpWaitPolicy(char** argv);

}  // namespace bm::train
