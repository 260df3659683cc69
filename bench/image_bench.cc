// LLaVA-1.5's image steps, ours against Pillow's in the same run (bench/image_bench.sh):
// decode (JPEG/PNG), pad to a square, bicubic resize of the shortest edge to 336, center crop:
// the work rules/llava's image set does per image. Rounds alternate, ours then the peer's
// (`PEER run 1 THREADS FILE...`, which times itself and prints one JSON line), so both see the
// same machine load; the best round of each side counts. With one thread the ratio is of CPU
// time (robust on a shared machine); with more, of wall time, ours on threads and the peer on
// as many processes (the image-set rule decodes on threads too). Prints images/s, the ratio
// (target >= 2x) and whether the uint8 outputs are identical (SHA-256 of them all, in file
// order), and exits 1 when they are not.
//
//   image_bench [--rounds N] [--threads T] [--peer PEER_COMMAND] FILE...
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/sha256.h"
#include "rules/vision/clip_image.h"

namespace {

bm::Result<bm::image::Image> Preprocess(const std::string& path) {
  BM_ASSIGN_OR_RETURN(bm::image::Image decoded, bm::image::DecodeImageFile(path));
  return bm::vision::ClipResizedImage(decoded, {});
}

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
  double wall = 1e300, cpu = 1e300;  // best (smallest) round
  void Add(double w, double c) {
    wall = std::min(wall, w);
    cpu = std::min(cpu, c);
  }
};

enum class Part { kAll, kDecode, kResize };

// One pass over the files on `threads` threads (images handed out one at a time): decode and
// resize, decode only, or resize only (of the images decoded beforehand, `decoded`).
void Pass(const std::vector<std::string>& files, const std::vector<bm::image::Image>& decoded,
          int threads, Part part, Timing* t) {
  const double w0 = WallSeconds(), c0 = CpuSeconds();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      if (part == Part::kDecode) {
        (void)bm::image::DecodeImageFile(files[i]);
      } else if (part == Part::kResize) {
        (void)bm::vision::ClipResizedImage(decoded[i], {});
      } else {
        (void)Preprocess(files[i]);
      }
    }
  };
  if (threads == 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k) pool.emplace_back(work);
    for (std::thread& th : pool) th.join();
  }
  t->Add(WallSeconds() - w0, CpuSeconds() - c0);
}

std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the peer once; its JSON line, or an error message in `error`.
nlohmann::json RunPeer(const std::string& command, int threads,
                       const std::vector<std::string>& files, std::string* error) {
  std::string cmd = command + " run 1 " + std::to_string(threads);
  for (const std::string& f : files) cmd += " " + ShellQuote(f);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *error = "cannot start the peer: " + command;
    return {};
  }
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int rc = pclose(pipe);
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || !j.is_object() || !j.contains("seconds")) {
    *error = "the peer failed (exit " + std::to_string(rc) + "): " + out;
    return {};
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, threads = 1;
  std::string peer_command;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--peer") == 0 && i + 1 < argc) {
      peer_command = argv[++i];
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty() || rounds < 1 || threads < 1) {
    std::fprintf(stderr,
                 "usage: image_bench [--rounds N] [--threads T] [--peer PEER_COMMAND] FILE...\n");
    return 2;
  }
  // The outputs, checked once (and a warm-up).
  bm::Sha256 digest;
  for (const std::string& f : files) {
    bm::Result<bm::image::Image> out = Preprocess(f);
    if (!out.ok()) {
      std::fprintf(stderr, "image_bench: %s\n", out.status().message().c_str());
      return 1;
    }
    digest.Update(out->rgb.data(), out->rgb.size());
  }
  const std::string ours_sha = digest.FinishHex();

  std::vector<bm::image::Image> decoded;
  for (const std::string& f : files) decoded.push_back(*bm::image::DecodeImageFile(f));

  Timing ours, decode, resize, theirs;
  nlohmann::json peer;
  for (int r = 0; r < rounds; ++r) {
    Pass(files, decoded, threads, Part::kDecode, &decode);
    Pass(files, decoded, threads, Part::kResize, &resize);
    Pass(files, decoded, threads, Part::kAll, &ours);
    if (peer_command.empty()) continue;
    std::string error;
    peer = RunPeer(peer_command, threads, files, &error);
    if (peer.is_null()) {
      std::fprintf(stderr, "image_bench: %s\n", error.c_str());
      return 1;
    }
    theirs.Add(peer["seconds"].get<double>(), peer["cpu_seconds"].get<double>());
  }
  const double n = static_cast<double>(files.size());
  // One thread: CPU time; several: wall time.
  const bool by_cpu = threads == 1;
  const double ours_s = by_cpu ? ours.cpu : ours.wall;
  std::printf("%zu images, %d thread%s, best of %d rounds (%s time)\n", files.size(), threads,
              threads == 1 ? "" : "s", rounds, by_cpu ? "CPU" : "wall");
  std::printf(
      "benchmake (libjpeg-turbo, libpng, bm::image::Resample): %.1f images/s, %.2f ms "
      "per image (alone: decode %.2f ms, pad+resize+crop %.2f ms)\n",
      n / ours_s, 1e3 * ours_s / n, 1e3 * (by_cpu ? decode.cpu : decode.wall) / n,
      1e3 * (ours_s - (by_cpu ? decode.cpu : decode.wall)) / n);
  if (peer_command.empty()) return 0;
  const double theirs_s = by_cpu ? theirs.cpu : theirs.wall;
  const bool same = peer["sha256"].get<std::string>() == ours_sha;
  std::printf("%s: %.1f images/s, %.2f ms per image\n", peer["peer"].get<std::string>().c_str(),
              n / theirs_s, 1e3 * theirs_s / n);
  std::printf(
      "ratio: %.2fx Pillow (target >= 2x: %s); wall-time ratio %.2fx; outputs identical: "
      "%s\n",
      theirs_s / ours_s, theirs_s / ours_s >= 2.0 ? "met" : "NOT met", theirs.wall / ours.wall,
      same ? "yes" : "NO");
  return same ? 0 : 1;
}
