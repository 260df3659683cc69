#include "trainer/cpu/blas_core.h"

#include <cblas.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace bm::train::cpu {
namespace {

// OpenBLAS's x86 core names (driver/others/dynamic.c's corename table) by the
// instructions their kernels use.
constexpr std::array<std::pair<std::string_view, int>, 26> kCoreLevels = {{
    {"Katmai", 1},      {"Coppermine", 1},     {"Northwood", 1},  {"Prescott", 1},
    {"Banias", 1},      {"Atom", 1},           {"Core2", 1},      {"Penryn", 1},
    {"Dunnington", 1},  {"Athlon", 1},         {"Opteron", 1},    {"Opteron(SSE3)", 1},
    {"Barcelona", 1},   {"Nano", 1},           {"Bobcat", 1},     {"Nehalem", 2},
    {"Sandybridge", 3}, {"Bulldozer", 3},      {"Piledriver", 3}, {"Steamroller", 3},
    {"Excavator", 3},   {"Haswell", 4},        {"Zen", 4},        {"SkylakeX", 5},
    {"Cooperlake", 6},  {"SapphireRapids", 6},
}};

}  // namespace

CpuIsa ReadCpuIsa() {
  CpuIsa isa;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return isa;
  const unsigned max_leaf = eax;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  isa.vendor = vendor;
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  isa.sse42 = ecx & (1u << 20);
  const bool osxsave = ecx & (1u << 27);
  const bool avx_bit = ecx & (1u << 28);
  const bool fma_bit = ecx & (1u << 12);
  // The registers the OS saves on a context switch (XCR0): SSE and AVX state
  // (bits 1-2), and AVX-512's opmask and upper ZMM halves (bits 5-7).
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  isa.avx = avx_bit && os_avx;
  isa.fma = fma_bit && os_avx;
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx);
    isa.avx2 = isa.avx && (ebx & (1u << 5));
    const unsigned avx512_bits = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
    isa.avx512 = os_avx512 && (ebx & avx512_bits) == avx512_bits;  // F DQ CD BW VL
    __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx);
    isa.avx512_bf16 = isa.avx512 && (eax & (1u << 5));
  }
#endif
  return isa;
}

std::string BestOpenBlasCore(const CpuIsa& isa) {
  if (isa.avx512 && isa.avx512_bf16) return "Cooperlake";
  if (isa.avx512) return "SkylakeX";
  if (isa.avx2 && isa.fma) return isa.vendor == "AuthenticAMD" ? "Zen" : "Haswell";
  if (isa.avx) return "Sandybridge";
  if (isa.sse42) return "Nehalem";
  return "";
}

int OpenBlasCoreLevel(std::string_view core) {
  for (const auto& [name, level] : kCoreLevels)
    if (name == core) return level;
  return 0;
}

std::string CoreToForce(std::string_view detected, const CpuIsa& isa) {
  const std::string best = BestOpenBlasCore(isa);
  const int have = OpenBlasCoreLevel(detected);
  if (best.empty() || have == 0 || have >= OpenBlasCoreLevel(best)) return "";
  return best;
}

BlasInfo CurrentBlas() {
  BlasInfo info;
  // "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY SkylakeX MAX_THREADS=64"
  std::istringstream config(openblas_get_config());
  config >> info.library >> info.version;
  info.core = openblas_get_corename();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const char* detected = std::getenv(kDetectedCoreEnv);
  if (forced && *forced && detected && *detected) {
    info.chosen_by = "benchmake";
    info.detected_core = detected;
  } else if (forced && *forced) {
    info.chosen_by = "user";
  } else {
    info.chosen_by = "openblas";
    info.detected_core = info.core;
  }
  return info;
}

}  // namespace bm::train::cpu
