// Reading an init checkpoint as the ranks of a finetune do, against reading the same bytes
// raw, in one process: the file written by checkpoint_save_bench (DIR/model.safetensors, the
// preset with LAYERS layers), then
//   - one rank's share of RANKS (a contiguous 1/RANKS of the parameters, as a ZeRO-3 rank keeps
//     its slices) through CheckpointParameters, the mapped file read by range;
//   - the peer: pread of the same bytes from the file into a buffer of that size.
// Prints both times, their ratio, and the peak resident memory beside the share's size (the
// mapping's pages count while touched; they are the page cache's, shared by every rank).
// With RANKS 1 the share is the whole model (LoadParameters' case).
//   checkpoint_load_bench PRESET LAYERS DIR RANKS      e.g. llama2-7b 4 /tmp/ckpt 4
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

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
  if (argc != 5) {
    std::fprintf(stderr, "usage: checkpoint_load_bench PRESET LAYERS DIR RANKS\n");
    return 2;
  }
  bm::Result<bm::train::ModelConfig> config = bm::train::Preset(argv[1]);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return 2;
  }
  config->layers = std::stoi(argv[2]);
  const std::string path = std::string(argv[3]) + "/model.safetensors";
  const int64_t ranks = std::max(1, std::stoi(argv[4]));
  const int64_t total = bm::train::ParamLayout(*config).total();
  const int64_t share = total / ranks;
  std::vector<float> mine(static_cast<size_t>(share));
  bm::Status status = bm::Status::Ok();
  const double mapped_s = Seconds([&] {
    bm::Result<bm::train::ParamSource> source = bm::train::CheckpointParameters(path, *config);
    if (!source.ok()) {
      status = source.status();
      return;
    }
    (*source)(0, mine);
  });
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  const double mapped_peak_gb = PeakResidentGB();
  // The peer: the share's bytes read raw (the data section starts after the header).
  std::vector<float> raw(static_cast<size_t>(share));
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    std::perror(path.c_str());
    return 1;
  }
  const double raw_s = Seconds([&] {
    char* out = reinterpret_cast<char*>(raw.data());
    size_t want = raw.size() * 4, got = 0;
    while (got < want) {
      const ssize_t n = ::pread(fd, out + got, want - got, static_cast<off_t>(got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
  });
  ::close(fd);
  std::printf(
      "%s, %s layers, one rank of %lld: %lld of %lld parameters (%.2f GB); mapped read %.2f s, "
      "raw read %.2f s, ratio %.2f; peak resident after the mapped read %.2f GB\n",
      argv[1], argv[2], static_cast<long long>(ranks), static_cast<long long>(share),
      static_cast<long long>(total), share * 4 / 1e9, mapped_s, raw_s, mapped_s / raw_s,
      mapped_peak_gb);
  return 0;
}
