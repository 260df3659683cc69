// GoogleTest main for the trainer's tests: OpenMP threads wait passively and
// OpenBLAS runs the CPU's kernels (trainer/process_env.h says why). Run with
// OPENBLAS_CORETYPE naming kernels this CPU cannot execute, it says so and
// exits 77, which ctest counts as skipped (tests/trainer/CMakeLists.txt runs
// the CPU oracle under every core benchmake may pick).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "trainer/cpu/blas_core.h"
#include "trainer/process_env.h"

int main(int argc, char** argv) {
  using namespace bm::train::cpu;
  if (const char* core = std::getenv("OPENBLAS_CORETYPE"); core && *core) {
    const std::string best = BestOpenBlasCore(ReadCpuIsa());
    if (OpenBlasCoreLevel(core) > OpenBlasCoreLevel(best)) {
      std::printf("skipped: this CPU cannot run OpenBLAS's %s kernels (its newest: %s)\n", core,
                  best.empty() ? "Prescott" : best.c_str());
      return 77;
    }
  }
  bm::train::EnsureProcessEnvironment(argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
