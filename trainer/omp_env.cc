#include "trainer/omp_env.h"

#include <unistd.h>

#include <cstdlib>

namespace bm::train {

void EnsureOpenMpWaitPolicy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on spinning
}

}  // namespace bm::train
