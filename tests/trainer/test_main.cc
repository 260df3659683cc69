// GoogleTest main for the trainer's tests: OpenMP threads wait passively
// (trainer/omp_env.h says why).
#include <gtest/gtest.h>

#include "trainer/omp_env.h"

int main(int argc, char** argv) {
  bm::train::EnsureOpenMpWaitPolicy(argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
