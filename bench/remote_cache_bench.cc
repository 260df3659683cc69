// remote_cache_bench: the HTTP remote cache through nginx on 127.0.0.1, each
// figure beside its peer measured in the same run.
//
//   remote_cache_bench [--size-mb N] [--blobs N] [--blob-kb N] [--parallel N] [--dir DIR]
//
// 1. push / pull of one N MB artifact (default 2048) with HttpRemote (pull
//    verifies the XXH3-128 digest while it downloads) vs the `curl` command
//    uploading (-T) and downloading (-o) the same file; ratio = our MB/s / curl's.
// 2. pulling N small blobs (default 2000 x 4 KiB) with parallel transfers vs
//    one at a time over a kept-alive connection; ratio = speed-up.
// Prints one line per figure; deletes its big files before exiting.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "base/digest.h"
#include "cache/remote/http_remote.h"
#include "tests/support/nginx_server.h"

namespace {

using bm::cache::HttpRemote;
using bm::cache::Namespace;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Writes `mb` MiB of incompressible bytes and returns their digest.
bm::Digest MakeArtifact(const std::string& path, size_t mb) {
  std::vector<uint64_t> buf((1 << 20) / 8);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  bm::Hasher hasher;
  FILE* f = std::fopen(path.c_str(), "wb");
  for (size_t i = 0; i < mb; ++i) {
    for (uint64_t& v : buf) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      v = x;
    }
    std::fwrite(buf.data(), 1, buf.size() * 8, f);
    hasher.Update(buf.data(), buf.size() * 8);
  }
  std::fclose(f);
  return hasher.Finish();
}

int Run(const std::string& cmd) { return std::system(cmd.c_str()); }

void Flush(const char* what, double seconds, double mb, const char* peer, double peer_seconds) {
  double ours = mb / seconds, theirs = mb / peer_seconds;
  std::printf("%-34s %8.1f MB/s   %-14s %8.1f MB/s   ratio %.2fx\n", what, ours, peer, theirs,
              ours / theirs);
}

}  // namespace

int main(int argc, char** argv) {
  size_t size_mb = 2048, blobs = 2000, blob_kb = 4;
  int parallel = 16;
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--size-mb") size_mb = std::stoul(argv[i + 1]);
    if (a == "--blobs") blobs = std::stoul(argv[i + 1]);
    if (a == "--blob-kb") blob_kb = std::stoul(argv[i + 1]);
    if (a == "--parallel") parallel = std::stoi(argv[i + 1]);
    if (a == "--dir") dir = argv[i + 1];
  }
  bm::testing::NginxOptions options;
  options.token = "bench";
  auto server = bm::testing::NginxServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "remote_cache_bench: %s\n", server.status().message().c_str());
    return 1;
  }
  std::string base = (*server)->Url("/cache/bm");
  bm::http::ClientOptions co;
  co.bearer_token = "bench";
  HttpRemote remote(base, co);
  std::string work = dir + "/bm-remote-bench-" + std::to_string(getpid());
  mkdir(work.c_str(), 0755);
  std::string auth = "-H 'Authorization: Bearer bench'";

  // 1. One big artifact.
  std::string artifact = work + "/artifact";
  std::printf("artifact: %zu MiB, nginx %s, server root %s\n", size_mb, base.c_str(),
              (*server)->Root().c_str());
  bm::Digest digest = MakeArtifact(artifact, size_mb);
  double mb = static_cast<double>(size_mb) * 1048576 / 1e6;
  double best_put = 1e9, best_curl_put = 1e9, best_get = 1e9, best_curl_get = 1e9;
  for (int round = 0; round < 2; ++round) {
    auto t = Clock::now();
    if (Run("curl -sf " + auth + " -T " + artifact + " " + base + "/cas/curl-copy") != 0) {
      std::fprintf(stderr, "curl upload failed\n");
      return 1;
    }
    best_curl_put = std::min(best_curl_put, Seconds(t));
    t = Clock::now();
    bm::Status s = remote.Put(Namespace::kCas, digest, artifact);
    if (!s.ok()) {
      std::fprintf(stderr, "push failed: %s\n", s.message().c_str());
      return 1;
    }
    best_put = std::min(best_put, Seconds(t));
    t = Clock::now();
    if (Run("curl -sf " + auth + " -o " + work + "/curl-out " + base + "/cas/curl-copy") != 0) {
      std::fprintf(stderr, "curl download failed\n");
      return 1;
    }
    best_curl_get = std::min(best_curl_get, Seconds(t));
    unlink((work + "/curl-out").c_str());
    t = Clock::now();
    auto got = remote.Get(Namespace::kCas, digest, work + "/pulled");
    if (!got.ok() || !*got) {
      std::fprintf(stderr, "pull failed: %s\n", got.status().message().c_str());
      return 1;
    }
    best_get = std::min(best_get, Seconds(t));
    unlink((work + "/pulled").c_str());
  }
  Flush("push (HttpRemote::Put)", best_put, mb, "curl -T", best_curl_put);
  Flush("pull, digest verified (Get)", best_get, mb, "curl -o", best_curl_get);
  unlink(artifact.c_str());
  Run("rm -rf '" + (*server)->Root() + "/cache/bm/cas'");

  // 2. Many small blobs.
  std::vector<bm::cache::RemotePush> pushes;
  std::string small(blob_kb * 1024, '\0');
  for (size_t i = 0; i < blobs; ++i) {
    std::snprintf(small.data(), small.size(), "blob %zu", i);
    std::string path = work + "/s" + std::to_string(i);
    std::ofstream(path, std::ios::binary) << small;
    pushes.push_back({Namespace::kCas, bm::DigestOf(small), path});
  }
  auto t = Clock::now();
  for (const bm::Status& s : remote.PutMany(pushes, parallel)) {
    if (!s.ok()) {
      std::fprintf(stderr, "push failed: %s\n", s.message().c_str());
      return 1;
    }
  }
  double push_many = Seconds(t);
  std::vector<bm::cache::RemoteFetch> fetches;
  for (size_t i = 0; i < blobs; ++i) {
    fetches.push_back({Namespace::kCas, pushes[i].key, work + "/g" + std::to_string(i)});
  }
  t = Clock::now();
  for (const auto& f : fetches) {
    auto r = remote.Get(f.ns, f.key, f.dest_path);
    if (!r.ok() || !*r) return 1;
  }
  double serial = Seconds(t);
  t = Clock::now();
  for (const auto& r : remote.GetMany(fetches, parallel)) {
    if (!r.ok() || !*r) return 1;
  }
  double par = Seconds(t);
  std::printf("push %zu x %zu KiB, %d at once:      %8.3f s (%.0f blobs/s)\n", blobs, blob_kb,
              parallel, push_many, blobs / push_many);
  std::printf(
      "pull %zu x %zu KiB, %d at once:      %8.3f s (%.0f blobs/s)   one at a time %8.3f s "
      "(%.0f blobs/s)   ratio %.2fx\n",
      blobs, blob_kb, parallel, par, blobs / par, serial, blobs / serial, serial / par);
  Run("rm -rf '" + work + "'");
  return 0;
}
