#include "trainer/process_env.h"

#include <unistd.h>

#include <cstdlib>

#include "trainer/cpu/blas_core.h"

namespace bm::train {

std::map<std::string, std::string> MissingProcessEnvironment() {
  std::map<std::string, std::string> env;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) env["OMP_WAIT_POLICY"] = "passive";
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") == nullptr) env["OPENBLAS_THREAD_TIMEOUT"] = "4";
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    const cpu::BlasInfo blas = cpu::CurrentBlas();
    const std::string better = cpu::CoreToForce(blas.core, cpu::ReadCpuIsa());
    if (!better.empty()) {
      env["OPENBLAS_CORETYPE"] = better;
      env[cpu::kDetectedCoreEnv] = blas.core;
    }
  }
  return env;
}

void EnsureProcessEnvironment(char** argv) {
  const std::map<std::string, std::string> env = MissingProcessEnvironment();
  if (env.empty()) return;
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
}

}  // namespace bm::train
