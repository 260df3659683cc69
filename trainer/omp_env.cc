#include "trainer/omp_env.h"

#include <unistd.h>

#include <cstdlib>

namespace bm::train {

void EnsureOpenMpWaitPolicy(char** argv) {
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    changed = true;
  }
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    changed = true;
  }
  if (changed) execv("/proc/self/exe", argv);  // returns only on failure: carry on spinning
}

}  // namespace bm::train
