// LLaVA-1.5's image steps, ours against Pillow's in the same run (bench/image_bench.sh):
// decode (JPEG/PNG), pad to a square, bicubic resize of the shortest edge to 336, center crop,
// one thread, warm page cache. Prints images/s, the ratio to the peer (target >= 2x) and
// whether the uint8 outputs are identical (SHA-256 of them all, in file order).
//
//   image_bench --rounds N [--peer PEER_JSON] FILE...
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "rules/vision/clip_image.h"

namespace {

bm::Result<bm::image::Image> Preprocess(const std::string& path) {
  BM_ASSIGN_OR_RETURN(bm::image::Image decoded, bm::image::DecodeImageFile(path));
  return bm::vision::ClipResizedImage(decoded, {});
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::string peer_path;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--peer") == 0 && i + 1 < argc) {
      peer_path = argv[++i];
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty() || rounds < 1) {
    std::fprintf(stderr, "usage: image_bench --rounds N [--peer PEER_JSON] FILE...\n");
    return 2;
  }
  bm::Sha256 digest;
  for (const std::string& f : files) {
    bm::Result<bm::image::Image> out = Preprocess(f);
    if (!out.ok()) {
      std::fprintf(stderr, "image_bench: %s\n", out.status().message().c_str());
      return 1;
    }
    digest.Update(reinterpret_cast<const char*>(out->rgb.data()), out->rgb.size());
  }
  const std::string ours_sha = digest.FinishHex();
  const auto start = std::chrono::steady_clock::now();
  size_t bytes = 0;
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& f : files) bytes += Preprocess(f)->rgb.size();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double ours = static_cast<double>(files.size()) * rounds / seconds;
  std::printf("benchmake (libjpeg-turbo, libpng, bm::image::Resample): %zu images x %d rounds in "
              "%.3f s: %.1f images/s (%zu output bytes)\n",
              files.size(), rounds, seconds, ours, bytes);
  if (peer_path.empty()) return 0;
  std::ifstream in(peer_path);
  const nlohmann::json peer = nlohmann::json::parse(in, nullptr, false);
  if (!peer.is_object()) {
    std::fprintf(stderr, "image_bench: %s is not the peer's JSON\n", peer_path.c_str());
    return 1;
  }
  const double theirs = peer["images_per_s"].get<double>();
  const bool same = peer["sha256"].get<std::string>() == ours_sha;
  std::printf("%s: %d images in %.3f s: %.1f images/s\n",
              peer["peer"].get<std::string>().c_str(), peer["images"].get<int>(),
              peer["seconds"].get<double>(), theirs);
  std::printf("ratio: %.2fx Pillow (target >= 2x: %s); outputs identical: %s\n", ours / theirs,
              ours / theirs >= 2.0 ? "met" : "NOT met", same ? "yes" : "NO");
  return same ? 0 : 1;
}
