// The environment the trainer's libraries read once, when they load, so a
// process must be started with it: set what is unset, then re-execute.
//
// OpenMP's idle threads spin by default (GOMP_SPINCOUNT), which is right on a
// dedicated machine and ruinous on a shared or oversubscribed one: measured on
// the 2-core build machine under load, the op tests took 13 s spinning and
// 0.16 s with OMP_WAIT_POLICY=passive. OpenBLAS's own threads likewise spin
// and sched_yield for 2^28 cycles after each call unless OPENBLAS_THREAD_TIMEOUT
// is small (4: sleep at once) — measured: 8 training steps of llama-small took
// 4.1 s of system time with the default and 0.5 s with 4. And OpenBLAS picks its
// kernels by the CPU's model number, falling back to its oldest ones on a CPU
// it does not know (trainer/cpu/blas_core.h): OPENBLAS_CORETYPE names better
// ones, unless the user or the machine already set it.
#pragma once

#include <map>
#include <string>

namespace bm::train {

// The variables to add to this process's environment: OMP_WAIT_POLICY=passive
// and OPENBLAS_THREAD_TIMEOUT=4 when unset; OPENBLAS_CORETYPE (with
// cpu::kDetectedCoreEnv, what OpenBLAS detected) when unset and the loaded
// OpenBLAS runs kernels older than the CPU supports (cpu::CoreToForce).
std::map<std::string, std::string> MissingProcessEnvironment();

// Sets MissingProcessEnvironment() and re-executes the current program
// (/proc/self/exe) with the same arguments. Returns (doing nothing) when
// nothing is missing or the re-exec fails. Call first in main().
void EnsureProcessEnvironment(char** argv);

}  // namespace bm::train
