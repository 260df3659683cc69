// remote_pipeline_bench: how long a second machine takes to bring a pipeline up
// to date from the remote cache, against computing it, in the same run.
//
//   remote_pipeline_bench [--benchfile FILE] [--data-mb N]
//
// --benchfile FILE: each machine's workspace is a copy of the files git tracks
// in FILE's directory (so source inputs resolve), e.g. the repository's
// default BENCHFILE.toml.
//
// Machine A (its own workspace and local cache) builds the pipeline with an
// nginx remote on 127.0.0.1 and pushes as it goes; machine B (another workspace,
// an empty local cache) then runs `benchmake build` on the same BENCHFILE.
// Without --benchfile the pipeline is built in: data (N MiB, default 256, of
// random bytes) → compress (gzip -6) → checksum (sha256sum) → measure
// (platform-dependent). Prints both times and their ratio.
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/nginx_server.h"

namespace {

constexpr const char* kPipeline = R"(
[target.data]
rule = "exec"
command = ["sh", "-c", "head -c @BYTES@ /dev/urandom > {out}/data.bin"]
outputs = ["data.bin"]

[target.compress]
rule = "exec"
inputs = ["data"]
command = ["sh", "-c", "gzip -6 -c {in.data}/data.bin > {out}/data.gz"]
outputs = ["data.gz"]

[target.checksum]
rule = "exec"
inputs = ["compress"]
command = ["sh", "-c", "sha256sum {in.compress}/data.gz > {out}/sums.txt"]
outputs = ["sums.txt"]

[target.measure]
rule = "measure"
inputs = ["checksum"]
command = ["sh", "-c", "echo '{\"score\": 1}' > {out}/metrics.json"]
outputs = ["metrics.json"]
metrics = "metrics.json"
)";

double Build(const std::string& dir, const std::string& cache, const std::string& remote,
             std::string* output) {
  std::string cmd = "cd '" + dir + "' && env BENCHMAKE_CACHE_DIR='" + cache +
                    "' BENCHMAKE_PLATFORM='{\"gpu\":\"bench\"}' BENCHMAKE_REMOTE_CACHE='" + remote +
                    "' BM_BENCH_TOKEN=bench '" + BM_BENCH_BINARY_DIR + "/benchmake' build 2>&1";
  auto start = std::chrono::steady_clock::now();
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  int status = p != nullptr ? pclose(p) : -1;
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? s : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string benchfile;
  long data_mb = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--benchfile") benchfile = argv[i + 1];
    if (a == "--data-mb") data_mb = std::atol(argv[i + 1]);
  }
  std::string text;
  if (!benchfile.empty()) {
    std::ifstream in(benchfile);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    if (text.empty()) {
      std::fprintf(stderr, "remote_pipeline_bench: cannot read %s\n", benchfile.c_str());
      return 1;
    }
  } else {
    text = kPipeline;
    text.replace(text.find("@BYTES@"), 7, std::to_string(data_mb << 20));
  }
  bm::testing::NginxOptions options;
  options.token = "bench";
  auto server = bm::testing::NginxServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "remote_pipeline_bench: %s\n", server.status().message().c_str());
    return 1;
  }
  std::string dir = (*server)->Dir();
  std::string remote = (*server)->Url("/cache/bm") + "|token_env=BM_BENCH_TOKEN";
  std::string src = benchfile.empty() ? "" : benchfile.substr(0, benchfile.rfind('/') + 1);
  if (src.empty() && !benchfile.empty()) src = "./";
  for (const char* m : {"a", "b"}) {
    std::string ws = dir + "/" + m;
    std::string copy =
        src.empty() ? "true"
                    : "cd '" + src + "' && git ls-files -z | xargs -0 cp --parents -t '" + ws + "'";
    if (std::system(("mkdir -p '" + ws + "' && " + copy).c_str()) != 0) {
      std::fprintf(stderr, "remote_pipeline_bench: cannot copy the workspace\n");
      return 1;
    }
    std::ofstream(ws + "/BENCHFILE.toml") << text;
  }
  std::printf("pipeline: %s\n", benchfile.empty()
                                    ? fmt::format("built-in, {} MiB of data", data_mb).c_str()
                                    : benchfile.c_str());
  std::string out_a, out_b;
  double compute = Build(dir + "/a", dir + "/cache-a", remote, &out_a);
  double fetch = Build(dir + "/b", dir + "/cache-b", remote, &out_b);
  if (compute < 0 || fetch < 0) {
    std::fprintf(stderr, "build failed:\n%s\n%s\n", out_a.c_str(), out_b.c_str());
    return 1;
  }
  int ran_on_b = 0;
  for (size_t pos = 0; (pos = out_b.find(": ran in", pos)) != std::string::npos; ++pos) ++ran_on_b;
  std::printf("machine A computes it (and pushes):   %8.2f s\n", compute);
  std::printf("machine B brings it up to date:       %8.2f s  (%d steps ran on B)\n", fetch,
              ran_on_b);
  std::printf("ratio (compute / from the remote):    %8.2fx\n", compute / fetch);
  return 0;
}
