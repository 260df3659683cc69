// Checkpoint I/O against the disk's floor, each in one run with its peer:
//   checkpoint_bench save PRESET LAYERS DIR        e.g. save llama2-7b 4 /tmp/ckpt
//     SaveModel of the preset (LAYERS layers) into DIR, then the same number of bytes written
//     and fsynced as one raw file (the peer: what the disk takes for those bytes at all).
//   checkpoint_bench load PRESET LAYERS DIR RANKS  e.g. load llama2-7b 4 /tmp/ckpt 4
//     DIR/model.safetensors (from `save`) read as one rank of a finetune reads its init: a
//     contiguous 1/RANKS of the parameters (as a ZeRO-3 rank keeps its slices; RANKS 1: the
//     whole model) through CheckpointParameters, the mapped file read by range; the peer: pread
//     of as many bytes from the file.
// Prints both times, their ratio and the process's peak resident memory (for `load`, the
// mapping's pages count while touched; they are the page cache's, shared by every rank).
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

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

int Save(const bm::train::ModelConfig& config, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::vector<float> params =
      bm::train::InitParameters(config, bm::train::ParamLayout(config), 1);
  const double params_gb = PeakResidentGB();
  bm::Status saved = bm::Status::Ok();
  const double save_s = Seconds([&] { saved = bm::train::SaveModel(dir, config, params, 2); });
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
      "%zu parameters (%.2f GB fp32); SaveModel %.2f s, raw write %.2f s, ratio %.2f; peak "
      "resident %.2f GB (the parameters alone: %.2f GB)\n",
      params.size(), params.size() * 4 / 1e9, save_s, raw_s, save_s / raw_s, save_peak_gb,
      params_gb);
  return 0;
}

int Load(const bm::train::ModelConfig& config, const std::string& dir, int64_t ranks) {
  const std::string path = dir + "/model.safetensors";
  const int64_t total = bm::train::ParamLayout(config).total(), share = total / ranks;
  std::vector<float> mine(static_cast<size_t>(share));
  bm::Status status = bm::Status::Ok();
  const double mapped_s = Seconds([&] {
    bm::Result<bm::train::ParamSource> source = bm::train::CheckpointParameters(path, config);
    if (source.ok()) (*source)(0, mine);
    status = source.status();
  });
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  const double mapped_peak_gb = PeakResidentGB();
  std::vector<float> raw(static_cast<size_t>(share));
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  const double raw_s = Seconds([&] {
    char* out = reinterpret_cast<char*>(raw.data());
    for (size_t want = raw.size() * 4, got = 0; got < want;) {
      const ssize_t n = ::pread(fd, out + got, want - got, static_cast<off_t>(got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  });
  ::close(fd);
  std::printf(
      "one rank of %lld: %lld of %lld parameters (%.2f GB); mapped read %.2f s, raw read %.2f s, "
      "ratio %.2f; peak resident after the mapped read %.2f GB\n",
      static_cast<long long>(ranks), static_cast<long long>(share), static_cast<long long>(total),
      share * 4 / 1e9, mapped_s, raw_s, mapped_s / raw_s, mapped_peak_gb);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!((mode == "save" && argc == 5) || (mode == "load" && argc == 6))) {
    std::fprintf(stderr,
                 "usage: checkpoint_bench save PRESET LAYERS DIR\n"
                 "       checkpoint_bench load PRESET LAYERS DIR RANKS\n");
    return 2;
  }
  bm::Result<bm::train::ModelConfig> config = bm::train::Preset(argv[2]);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 2;
  }
  config->layers = std::stoi(argv[3]);
  std::printf("%s, %s layers: ", argv[2], argv[3]);
  if (mode == "save") return Save(*config, argv[4]);
  return Load(*config, argv[4], std::max(1, std::stoi(argv[5])));
}
