#include "trainer/platform.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "trainer/backend.h"
#include "trainer/cpu/blas_core.h"
#include "trainer/cpu/cpu_backend.h"

#ifdef BENCHMAKE_HAVE_CUDA
#include "trainer/cuda/cuda_backend.h"
#endif

#ifndef BENCHMAKE_VERSION
#define BENCHMAKE_VERSION "0.1.0"
#endif

namespace bm::train {
namespace {

// CPU flags and nominal clock from /proc/cpuinfo (first processor).
nlohmann::json CpuFacts() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  double mhz = 0;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    if (key == "flags" && flags.empty()) flags = line.substr(colon + 1) + " ";
  }
  // The nominal clock: the BogoMIPS/2 of x86 guests is the TSC rate, stable
  // across runs (cpu MHz is not), and close to the base clock.
  std::ifstream in2("/proc/cpuinfo");
  while (std::getline(in2, line)) {
    if (line.rfind("bogomips", 0) == 0) {
      mhz = std::stod(line.substr(line.find(':') + 1)) / 2.0;
      break;
    }
  }
  auto has = [&](const char* f) {
    return flags.find(std::string(" ") + f + " ") != std::string::npos;
  };
  return {{"model", cpu::CpuModelName()},
          {"cores", static_cast<int>(std::thread::hardware_concurrency())},
          {"ghz", std::round(mhz / 100.0) / 10.0},
          {"avx2", has("avx2")},
          {"fma", has("fma")},
          {"avx512", has("avx512f")},
          {"memory_bytes", cpu::PhysicalMemoryBytes()}};
}

// The BLAS the CPU backend runs, and who chose its kernels (cpu/blas_core.h).
nlohmann::json BlasFacts() {
  const cpu::BlasInfo b = cpu::CurrentBlas();
  nlohmann::json j = {
      {"library", b.library}, {"version", b.version}, {"core", b.core}, {"chosen_by", b.chosen_by}};
  if (!b.detected_core.empty()) j["detected_core"] = b.detected_core;
  return j;
}

// The InfiniBand / RoCE ports of this machine, from sysfs (no verbs library):
// what the ranks of a step across machines talk over. Only stable facts — the
// device, port, link layer and rate, not the port's state.
nlohmann::json InterconnectFacts() {
  namespace fs = std::filesystem;
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    std::string line;
    std::getline(in, line);
    return line;
  };
  std::vector<std::pair<std::string, nlohmann::json>> ports;
  std::error_code ec;
  for (const fs::directory_entry& dev : fs::directory_iterator("/sys/class/infiniband", ec)) {
    std::error_code ec2;
    for (const fs::directory_entry& port : fs::directory_iterator(dev.path() / "ports", ec2)) {
      const std::string name =
          dev.path().filename().string() + "/" + port.path().filename().string();
      ports.emplace_back(name, nlohmann::json{{"port", name},
                                              {"link_layer", read(port.path() / "link_layer")},
                                              {"rate", read(port.path() / "rate")}});
    }
  }
  std::sort(ports.begin(), ports.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  nlohmann::json out = nlohmann::json::array();
  for (auto& [name, facts] : ports) out.push_back(std::move(facts));
  return out;
}

}  // namespace

std::string TrainerBuildId() {
#ifdef BENCHMAKE_HAVE_CUDA
  const char* cuda = "on";
#else
  const char* cuda = "off";
#endif
  return fmt::format("benchmake-train {} (g++ {}.{}.{}; cuda: {})", BENCHMAKE_VERSION, __GNUC__,
                     __GNUC_MINOR__, __GNUC_PATCHLEVEL__, cuda);
}

nlohmann::json ProbePlatform(bool gpu_libraries) {
  nlohmann::json p = {{"format", "benchmake-platform"},
                      {"version", 1},
                      {"trainer_build", TrainerBuildId()},
                      {"cpu", CpuFacts()},
                      {"blas", BlasFacts()},
                      {"interconnect", InterconnectFacts()},
                      {"gpus", nlohmann::json::array()},
                      {"gpu_count", 0},
                      {"driver", nullptr},
                      {"cuda", nullptr},
                      {"cublaslt", nullptr},
                      {"cudnn", nullptr},
                      {"devices", BackendNames()}};
#ifdef BENCHMAKE_HAVE_CUDA
  nlohmann::json g = cuda::ProbeCudaPlatform(gpu_libraries);
  for (const char* key : {"gpus", "driver", "cuda", "cublaslt", "cudnn"})
    if (g.contains(key)) p[key] = g[key];
  p["gpu_count"] = p["gpus"].size();
#else
  (void)gpu_libraries;
#endif
  return p;
}

int64_t PeakResidentBytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

}  // namespace bm::train
