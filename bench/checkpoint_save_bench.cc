// The final checkpoint's write against the disk's floor, in one run: SaveModel of a preset
// (its layers set by the second argument) into DIR, then the same number of bytes written
// and fsynced as one raw file (the peer: what the disk takes for those bytes at all). Prints
// both times, their ratio and the process's peak resident memory beside the parameters'.
//   checkpoint_save_bench PRESET LAYERS DIR      e.g. llama2-7b 4 /tmp/ckpt
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/real_filesystem.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/model/config.h"
#include "trainer/model/layout.h"

namespace {

double PeakResidentGB() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1e6;  // kB
}

template <typename F>
double Seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: checkpoint_save_bench PRESET LAYERS DIR\n");
    return 2;
  }
  bm::Result<bm::train::ModelConfig> config = bm::train::Preset(argv[1]);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 2;
  }
  config->layers = std::stoi(argv[2]);
  const std::string dir = argv[3];
  std::filesystem::create_directories(dir);
  const std::vector<float> params =
      bm::train::InitParameters(*config, bm::train::ParamLayout(*config), 1);
  const double params_gb = PeakResidentGB();
  bm::Status saved = bm::Status::Ok();
  const double save_s = Seconds([&] { saved = bm::train::SaveModel(dir, *config, params, 2); });
  if (!saved.ok()) {
    std::fprintf(stderr, "SaveModel: %s\n", saved.message().c_str());
    return 1;
  }
  const double save_peak_gb = PeakResidentGB();
  const std::string raw = dir + "/raw.bin";
  bm::Status written = bm::Status::Ok();
  const double raw_s = Seconds([&] {
    bm::AtomicFileWriter file(raw);
    written = file.Open();
    if (written.ok()) written = file.Write(params.data(), params.size() * 4);
    if (written.ok()) written = file.Commit();
  });
  if (!written.ok()) {
    std::fprintf(stderr, "raw write: %s\n", written.message().c_str());
    return 1;
  }
  std::filesystem::remove(raw);
  std::printf(
      "%s, %s layers: %zu parameters (%.2f GB fp32); SaveModel %.2f s, raw write %.2f s, "
      "ratio %.2f; peak resident %.2f GB (the parameters alone: %.2f GB)\n",
      argv[1], argv[2], params.size(), params.size() * 4 / 1e9, save_s, raw_s, save_s / raw_s,
      save_peak_gb, params_gb);
  return 0;
}
