// Which OpenBLAS kernels benchmake-train asks for (trainer/cpu/blas_core.h).
// The CPUs below are real ones, their instruction sets as Intel's and AMD's
// manuals list them; this machine's is checked against the kernel's own
// reading of cpuid (/proc/cpuinfo's flags).
#include "trainer/cpu/blas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace bm::train::cpu {
namespace {

CpuIsa Isa(const std::string& vendor, const std::string& level) {
  CpuIsa isa;
  isa.vendor = vendor;
  isa.sse42 = true;
  isa.avx = level != "sse4.2";
  isa.avx2 = isa.fma = isa.avx && level != "avx";
  isa.avx512 = level == "avx512" || level == "avx512bf16";
  isa.avx512_bf16 = level == "avx512bf16";
  return isa;
}

TEST(BlasCoreTest, TheNewestKernelsEachCpuRuns) {
  EXPECT_EQ(BestOpenBlasCore(Isa("GenuineIntel", "avx512bf16")), "Cooperlake");  // Sapphire Rapids
  EXPECT_EQ(BestOpenBlasCore(Isa("GenuineIntel", "avx512")), "SkylakeX");        // Cascade Lake
  EXPECT_EQ(BestOpenBlasCore(Isa("AuthenticAMD", "avx512bf16")), "Cooperlake");  // Zen 4
  EXPECT_EQ(BestOpenBlasCore(Isa("AuthenticAMD", "avx2")), "Zen");               // Zen 3
  EXPECT_EQ(BestOpenBlasCore(Isa("GenuineIntel", "avx2")), "Haswell");           // Skylake client
  EXPECT_EQ(BestOpenBlasCore(Isa("GenuineIntel", "avx")), "Sandybridge");        // Ivy Bridge
  EXPECT_EQ(BestOpenBlasCore(Isa("GenuineIntel", "sse4.2")), "Nehalem");         // Westmere
  EXPECT_EQ(BestOpenBlasCore(CpuIsa{}), "") << "not x86-64, or older than Nehalem";
}

TEST(BlasCoreTest, ForcesOnlyWhenOpenBlasFellBackToOlderKernels) {
  // The machine: an AVX-512 Xeon that OpenBLAS 0.3.21 did not know.
  EXPECT_EQ(CoreToForce("Prescott", Isa("GenuineIntel", "avx512")), "SkylakeX");
  EXPECT_EQ(CoreToForce("Prescott", Isa("GenuineIntel", "avx512bf16")), "Cooperlake");
  EXPECT_EQ(CoreToForce("Haswell", Isa("GenuineIntel", "avx512")), "SkylakeX");
  EXPECT_EQ(CoreToForce("Core2", Isa("AuthenticAMD", "avx2")), "Zen");
  // Detected right: left alone.
  EXPECT_EQ(CoreToForce("SkylakeX", Isa("GenuineIntel", "avx512")), "");
  EXPECT_EQ(CoreToForce("Zen", Isa("AuthenticAMD", "avx2")), "");
  EXPECT_EQ(CoreToForce("Haswell", Isa("AuthenticAMD", "avx2")), "") << "same generation";
  // Never older kernels than OpenBLAS chose, nor a guess about a name we do not know.
  EXPECT_EQ(CoreToForce("Cooperlake", Isa("GenuineIntel", "avx512")), "");
  EXPECT_EQ(CoreToForce("SapphireRapids", Isa("GenuineIntel", "avx512bf16")), "");
  EXPECT_EQ(CoreToForce("NEOVERSEN1", Isa("GenuineIntel", "avx512")), "");
  EXPECT_EQ(CoreToForce("Prescott", CpuIsa{}), "");
}

TEST(BlasCoreTest, CoreLevelsOrderTheKernelGenerations) {
  EXPECT_LT(OpenBlasCoreLevel("Prescott"), OpenBlasCoreLevel("Nehalem"));
  EXPECT_LT(OpenBlasCoreLevel("Nehalem"), OpenBlasCoreLevel("Sandybridge"));
  EXPECT_LT(OpenBlasCoreLevel("Sandybridge"), OpenBlasCoreLevel("Haswell"));
  EXPECT_EQ(OpenBlasCoreLevel("Haswell"), OpenBlasCoreLevel("Zen"));
  EXPECT_LT(OpenBlasCoreLevel("Haswell"), OpenBlasCoreLevel("SkylakeX"));
  EXPECT_LT(OpenBlasCoreLevel("SkylakeX"), OpenBlasCoreLevel("Cooperlake"));
  EXPECT_EQ(OpenBlasCoreLevel("Unknown"), 0);
}

// cpuid as this program reads it, against the flags Linux read from cpuid.
TEST(BlasCoreTest, ReadsTheSameInstructionSetsAsTheKernel) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "not an x86-64 machine";
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1) + " ";
      break;
    }
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  auto has = [&](const char* f) {
    return flags.find(std::string(" ") + f + " ") != std::string::npos;
  };
  const CpuIsa isa = ReadCpuIsa();
  EXPECT_EQ(isa.sse42, has("sse4_2"));
  EXPECT_EQ(isa.avx, has("avx"));
  EXPECT_EQ(isa.avx2, has("avx2"));
  EXPECT_EQ(isa.fma, has("fma"));
  EXPECT_EQ(isa.avx512, has("avx512f") && has("avx512dq") && has("avx512cd") && has("avx512bw") &&
                            has("avx512vl"));
  EXPECT_EQ(isa.avx512_bf16, isa.avx512 && has("avx512_bf16"));
  std::printf("this CPU: %s, OpenBLAS's newest kernels for it: %s\n", isa.vendor.c_str(),
              BestOpenBlasCore(isa).c_str());
}

// The library this process runs: the trainer's tests start through
// EnsureProcessEnvironment, so OpenBLAS runs this CPU's newest kernels, or the
// ones OPENBLAS_CORETYPE names.
TEST(BlasCoreTest, TheLoadedOpenBlasRunsTheCoreAskedFor) {
  const BlasInfo blas = CurrentBlas();
  EXPECT_EQ(blas.library, "OpenBLAS");
  EXPECT_FALSE(blas.version.empty());
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const std::string best = BestOpenBlasCore(ReadCpuIsa());
  if (forced && *forced) {
    EXPECT_EQ(blas.core, forced) << "OpenBLAS " << blas.version << " does not offer " << forced;
  } else if (!best.empty()) {
    EXPECT_GE(OpenBlasCoreLevel(blas.core), OpenBlasCoreLevel(best)) << blas.core;
  }
  std::printf("OpenBLAS %s runs %s (chosen by %s; detected %s)\n", blas.version.c_str(),
              blas.core.c_str(), blas.chosen_by.c_str(), blas.detected_core.c_str());
}

}  // namespace
}  // namespace bm::train::cpu
