// Which OpenBLAS kernels this process runs, and which it should.
//
// Debian 12's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its kernels from the CPU's
// family and model number when the library loads. On a CPU newer than the
// library it may not know the model and fall back to its oldest x86-64 kernels
// ("Prescott", SSE3): 3-4x slower than the AVX-512 kernels the CPU runs. The
// cure is OpenBLAS's own OPENBLAS_CORETYPE, read once when the library loads:
// so a process that wants other kernels sets it and re-executes itself
// (trainer/process_env.h).
//
// What a CPU can run is read from cpuid (and the OS's saved-state mask, xgetbv),
// not from the model number: BestOpenBlasCore() names the newest kernel family
// of OpenBLAS's x86-64 DYNAMIC_ARCH whose instructions the CPU has. A core the
// user or the machine set in OPENBLAS_CORETYPE is never overridden.
//
// Thread safety: pure functions, except ReadCpuIsa() and CurrentBlas(), which
// only read the CPU and the loaded library.
#pragma once

#include <string>
#include <string_view>

namespace bm::train::cpu {

// The instruction sets OpenBLAS's x86-64 kernel families need, each usable
// only when the OS saves its registers.
struct CpuIsa {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ..., or "" off x86-64
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool avx512 = false;       // F, CD, DQ, BW and VL: what SkylakeX's kernels use
  bool avx512_bf16 = false;  // what Cooperlake's add
};

// This CPU (all false off x86-64).
CpuIsa ReadCpuIsa();

// The newest OpenBLAS x86-64 core whose kernels `isa` runs: "Cooperlake",
// "SkylakeX", "Zen" (AMD) or "Haswell", "Sandybridge", "Nehalem"; "" when none
// is newer than Prescott or the CPU is not x86-64.
std::string BestOpenBlasCore(const CpuIsa& isa);

// The kernel generation of an OpenBLAS core name (1 = SSE3 ... 6 = AVX-512
// BF16), or 0 for a name this table does not know.
int OpenBlasCoreLevel(std::string_view core);

// The core to set in OPENBLAS_CORETYPE when OpenBLAS chose `detected` on a
// CPU that runs `isa`: BestOpenBlasCore(isa) when `detected` is a known core of
// an older generation, else "" (leave OpenBLAS alone).
std::string CoreToForce(std::string_view detected, const CpuIsa& isa);

// The BLAS this process runs, for the platform record.
struct BlasInfo {
  std::string library;  // "OpenBLAS"
  std::string version;  // "0.3.21"
  std::string core;     // the kernels it runs: "SkylakeX"
  // The core OpenBLAS picked by itself, and who chose `core`: "openblas" (its
  // own detection), "benchmake" (CoreToForce, detected being older), "user"
  // (OPENBLAS_CORETYPE set before benchmake ran).
  std::string detected_core;
  std::string chosen_by;
};

// Reads the loaded OpenBLAS (openblas_get_config, openblas_get_corename) and
// the environment (OPENBLAS_CORETYPE, kDetectedCoreEnv).
BlasInfo CurrentBlas();

// Set beside OPENBLAS_CORETYPE by whoever forced the core for benchmake (the
// trainer for itself, the engine for the trainer it starts): what OpenBLAS had
// detected on its own.
inline constexpr const char* kDetectedCoreEnv = "BENCHMAKE_OPENBLAS_DETECTED";

}  // namespace bm::train::cpu
