// Hashing a large file: benchmake's file hashing (base/real_filesystem) against
// `xxhsum -H2` (Debian package xxhash), side by side in one run, warm page
// cache (target: ≥ 0.9× xxhsum's throughput). Then the stat cache, through the
// real binary: a no-op build with the file untouched must not re-read it; after
// `touch` the build re-reads it once and reruns nothing.
//
//   bench_hash BENCHMAKE_BINARY [SIZE_GB=2] [WORKDIR]
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/real_filesystem.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double TimeCommand(const std::string& cmd) {
  auto start = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "command failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  return Seconds(start);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_hash BENCHMAKE_BINARY [SIZE_GB] [WORKDIR]\n");
    return 2;
  }
  std::string benchmake = std::filesystem::absolute(argv[1]).string();
  double gb = argc > 2 ? std::atof(argv[2]) : 2.0;
  std::string dir = argc > 3 ? argv[3] : "/tmp/benchmake-bench-hash";
  std::filesystem::create_directories(dir);
  std::string file = dir + "/big.bin";
  uint64_t bytes = static_cast<uint64_t>(gb * 1e9);
  if (!std::filesystem::exists(file) || std::filesystem::file_size(file) != bytes) {
    std::ofstream out(file, std::ios::binary);
    std::vector<char> block(1 << 20);
    uint64_t x = 88172645463325252ull;
    for (uint64_t done = 0; done < bytes; done += block.size()) {
      for (char& c : block) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        c = static_cast<char>(x);
      }
      out.write(block.data(),
                static_cast<std::streamsize>(std::min<uint64_t>(block.size(), bytes - done)));
    }
  }
  TimeCommand("cat '" + file + "' > /dev/null");  // warm the page cache
  std::vector<double> ours, peer;
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    bm::Result<bm::Digest> d = bm::DiskFilesystem().HashFile(file);
    ours.push_back(Seconds(start));
    if (!d.ok()) return 1;
    peer.push_back(TimeCommand("xxhsum -H2 '" + file + "' > /dev/null 2>&1"));
  }
  double o = Median(ours), p = Median(peer);
  double gbs_o = bytes / o / 1e9, gbs_p = bytes / p / 1e9;
  std::printf(
      "hash %.2f GB: benchmake %.2f GB/s (%.3f s), xxhsum -H2 %.2f GB/s (%.3f s): ratio %.2fx; "
      "target >= 0.9x: %s\n",
      bytes / 1e9, gbs_o, o, gbs_p, p, gbs_o / gbs_p, gbs_o / gbs_p >= 0.9 ? "met" : "MISSED");

  // Stat cache through the real binary.
  std::string ws = dir + "/ws";
  std::filesystem::remove_all(dir + "/cache");
  std::filesystem::remove_all(ws);
  std::filesystem::create_directories(ws);
  std::filesystem::create_hard_link(file, ws + "/big.bin");
  std::ofstream(ws + "/BENCHFILE.toml")
      << "[target.size]\nrule = \"exec\"\ninputs = [\"big.bin\"]\n"
         "command = [\"sh\", \"-c\", \"echo ran >> "
      << dir << "/runs; stat -c %s {in.big.bin} > {out}/size\"]\n"
      << "outputs = [\"size\"]\n";
  std::string build = "cd '" + ws + "' && BENCHMAKE_CACHE_DIR='" + dir + "/cache' '" + benchmake +
                      "' build > /dev/null";
  std::filesystem::remove(dir + "/runs");
  double first = TimeCommand(build);
  double noop = TimeCommand(build);
  TimeCommand("touch '" + ws + "/big.bin'");
  double touched = TimeCommand(build);
  double after = TimeCommand(build);
  std::ifstream runs(dir + "/runs");
  int ran = 0;
  for (std::string line; std::getline(runs, line);) ++ran;
  std::printf(
      "stat cache: first build %.3f s (hashes the file), no-op %.3f s (no re-read), after touch "
      "%.3f s "
      "(re-reads once), then %.3f s; steps run: %d (want 1)\n",
      first, noop, touched, after, ran);
  return 0;
}
