// End to end: the real `benchmake` binary with real ninja, two workspaces with
// separate local caches (two machines) sharing one nginx remote on loopback.
// Each step appends its name to {workspace}/runs.log, so a test sees exactly
// which steps ran on which machine.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/digest.h"
#include "tests/support/nginx_server.h"
#include "tests/support/raw_http_server.h"

namespace bm::cache {
namespace {

namespace fs = std::filesystem;
using bm::testing::NginxOptions;
using bm::testing::NginxServer;

constexpr const char* kPipeline = R"(
[target.gen]
rule = "exec"
command = ["sh", "-c", "echo gen >> {workspace}/runs.log; head -c 200000 /dev/urandom > {out}/data.bin; echo 'echo hi' > {out}/tool.sh; chmod 755 {out}/tool.sh"]
outputs = ["data.bin", "tool.sh"]

[target.count]
rule = "exec"
inputs = ["gen"]
command = ["sh", "-c", "echo count >> {workspace}/runs.log; wc -c < {in.gen}/data.bin > {out}/count.txt"]
outputs = ["count.txt"]

[target.speed]
rule = "measure"
inputs = ["count"]
command = ["sh", "-c", "echo speed >> {workspace}/runs.log; echo '{\"tokens_per_s\": 5}' > {out}/metrics.json"]
outputs = ["metrics.json"]
metrics = "metrics.json"
)";

constexpr const char* kH100 = R"({"gpu":"H100","gpu_count":0})";
constexpr const char* kH200 = R"({"gpu":"H200","gpu_count":0})";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct RunResult {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
};

// One machine: a workspace with its own local cache.
struct Machine {
  std::string dir;
  std::string cache;
  std::string platform = kH100;
  std::string remote;  // BENCHMAKE_REMOTE_CACHE
  std::string token;   // the value of $BM_E2E_TOKEN
  std::string key;     // the value of $BM_E2E_KEY (signing)

  std::string Runs() const { return ReadFile(dir + "/runs.log"); }
  void ClearRuns() const { fs::remove(dir + "/runs.log"); }

  RunResult Benchmake(const std::string& args) const {
    const char* bin_dir = std::getenv("BENCHMAKE_BINARY_DIR");
    std::string bin = std::string(bin_dir != nullptr ? bin_dir : ".") + "/benchmake";
    std::string cmd = "cd '" + dir + "' && env BENCHMAKE_CACHE_DIR='" + cache +
                      "' BENCHMAKE_PLATFORM='" + platform + "' BENCHMAKE_REMOTE_CACHE='" + remote +
                      "' BM_E2E_TOKEN='" + token + "' BM_E2E_KEY='" + key + "' '" + bin + "' " +
                      args + " 2>&1";
    RunResult r;
    auto start = std::chrono::steady_clock::now();
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
    int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = 0; (pos = text.find(what, pos)) != std::string::npos; pos += what.size()) ++n;
  return n;
}

class RemoteE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v ninja >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "ninja is not installed (scripts/bootstrap.sh installs ninja-build)";
    }
    NginxOptions options;
    options.token = "e2e-token";
    auto server = NginxServer::Start(options);
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    remote_ = server_->Url("/cache/bm") + "|token_env=BM_E2E_TOKEN|remote_timeout=2";
    a_ = MakeMachine("a");
    b_ = MakeMachine("b");
  }

  Machine MakeMachine(const std::string& name) {
    Machine m;
    m.dir = server_->Dir() + "/" + name + "/ws";
    m.cache = server_->Dir() + "/" + name + "/cache";
    fs::create_directories(m.dir);
    std::ofstream(m.dir + "/BENCHFILE.toml") << kPipeline;
    m.remote = remote_;
    m.token = "e2e-token";
    return m;
  }

  // Every file in the remote's CAS, as the server stores it.
  std::vector<fs::path> RemoteBlobs() {
    std::vector<fs::path> out;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(server_->Root() + "/cache/bm/cas", ec)) {
      out.push_back(e.path());
    }
    return out;
  }
  size_t RemoteRecords() {
    size_t n = 0;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(server_->Root() + "/cache/bm/ac", ec)) ++n, (void)e;
    return n;
  }
  // `benchmake cache verify` on a machine: every local blob matches its digest.
  void ExpectLocalCacheClean(const Machine& m) {
    RunResult v = m.Benchmake("cache verify");
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_NE(v.output.find(", 0 corrupt"), std::string::npos) << v.output;
  }

  std::unique_ptr<NginxServer> server_;
  std::string remote_;
  Machine a_, b_;
};

TEST_F(RemoteE2eTest, SecondMachineRunsNoStepTheFirstBuilt) {
  RunResult first = a_.Benchmake("build");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(a_.Runs(), "gen\ncount\nspeed\n");
  EXPECT_GE(RemoteBlobs().size(), 3u);
  EXPECT_EQ(RemoteRecords(), 3u);

  RunResult second = b_.Benchmake("build");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(b_.Runs(), "") << "machine b ran steps that machine a had built:\n" << second.output;
  EXPECT_EQ(Count(second.output, "restored from remote cache"), 3u) << second.output;
  EXPECT_EQ(ReadFile(b_.dir + "/out/gen/data.bin"), ReadFile(a_.dir + "/out/gen/data.bin"));
  EXPECT_EQ(fs::status(b_.dir + "/out/gen/tool.sh").permissions() & fs::perms::owner_exec,
            fs::perms::owner_exec)
      << "an executable output came back without its x bit";
  EXPECT_EQ(ReadFile(b_.dir + "/out/speed/metrics.json"),
            ReadFile(a_.dir + "/out/speed/metrics.json"));

  RunResult explain = b_.Benchmake("explain speed");
  EXPECT_NE(explain.output.find("restored from remote " + server_->Url("/cache/bm")),
            std::string::npos)
      << explain.output;
  EXPECT_NE(explain.output.find("H100"), std::string::npos) << "recorded platform\n"
                                                            << explain.output;
  EXPECT_NE(explain.output.find("recorded on host"), std::string::npos) << explain.output;
  RunResult stats = b_.Benchmake("cache stats");
  EXPECT_NE(stats.output.find("remote:  "), std::string::npos) << stats.output;
  EXPECT_EQ(stats.output.find("remote:  0 hits"), std::string::npos) << stats.output;
  ExpectLocalCacheClean(b_);
}

TEST_F(RemoteE2eTest, PlatformDependentStepRerunsOnlyOnAnotherPlatform) {
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  b_.platform = kH200;
  RunResult b = b_.Benchmake("build");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(b_.Runs(), "speed\n") << "only the measurement depends on the platform\n" << b.output;
  Machine c = MakeMachine("c");  // a third machine on the second platform
  c.platform = kH200;
  RunResult cr = c.Benchmake("build");
  ASSERT_EQ(cr.exit_code, 0) << cr.output;
  EXPECT_EQ(c.Runs(), "") << "b pushed the H200 measurement\n" << cr.output;
}

TEST_F(RemoteE2eTest, RemoteDownBuildsLocallyAndSaysSoOnce) {
  server_->Stop();
  RunResult r = a_.Benchmake("build");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(a_.Runs(), "gen\ncount\nspeed\n");
  EXPECT_EQ(Count(r.output, "using the local cache only"), 1u) << r.output;
  EXPECT_NE(r.output.find("cannot connect"), std::string::npos) << r.output;
  // The next build tries the remote again (and still succeeds).
  fs::remove_all(a_.dir + "/out");
  a_.ClearRuns();
  RunResult again = a_.Benchmake("build");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(a_.Runs(), "") << "restored from the local cache";
  ExpectLocalCacheClean(a_);
}

// A malformed BENCHMAKE_REMOTE_CACHE names the variable once ("remote cache
// BENCHMAKE_REMOTE_CACHE: BENCHMAKE_REMOTE_CACHE: unknown ..." before).
TEST_F(RemoteE2eTest, MalformedEnvironmentWarnsOnceNamingTheVariableOnce) {
  a_.remote = remote_ + "|no_such_setting=1";
  RunResult r = a_.Benchmake("build");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(a_.Runs(), "gen\ncount\nspeed\n");
  EXPECT_EQ(Count(r.output, "using the local cache only"), 1u) << r.output;
  EXPECT_EQ(Count(r.output, "BENCHMAKE_REMOTE_CACHE"), 1u) << r.output;
  EXPECT_NE(r.output.find("'no_such_setting'"), std::string::npos) << r.output;
}

TEST_F(RemoteE2eTest, RemoteThatNeverAnswersTimesOutOnceAndTheBuildGoesOn) {
  bm::testing::RawHttpServer silent("", /*hold_open=*/true);
  ASSERT_TRUE(silent.status().ok());
  a_.remote = silent.Url("/bm") + "|remote_timeout=1";
  RunResult r = a_.Benchmake("build");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(a_.Runs(), "gen\ncount\nspeed\n");
  EXPECT_EQ(Count(r.output, "using the local cache only"), 1u) << r.output;
  EXPECT_NE(r.output.find("timed out"), std::string::npos) << r.output;
  // One stall of ~1 s for the whole build, not one per step or per blob.
  EXPECT_LT(r.seconds, 8) << r.output;
  EXPECT_EQ(silent.connections(), 1) << "the dead remote was asked again in the same build";
}

TEST_F(RemoteE2eTest, CorruptBytesOnTheRemoteAreRejectedAndRebuilt) {
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  // Flip bytes of gen's data.bin on the server, keeping its size.
  bool corrupted = false;
  for (const fs::path& p : RemoteBlobs()) {
    if (fs::file_size(p) != 200000) continue;
    std::string bytes = ReadFile(p);
    bytes[1000] ^= 0x55;
    fs::permissions(p, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(p, std::ios::binary) << bytes;
    corrupted = true;
  }
  ASSERT_TRUE(corrupted);
  RunResult b = b_.Benchmake("build");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b_.Runs().find("gen\n"), std::string::npos) << b.output;
  EXPECT_EQ(Count(b.output, "refused"), 1u) << "one bad blob, one download, one warning\n"
                                            << b.output;
  RunResult stats = b_.Benchmake("cache stats");
  EXPECT_NE(stats.output.find(" 1 corrupt"), std::string::npos) << stats.output;
  ExpectLocalCacheClean(a_);
  ExpectLocalCacheClean(b_);
}

TEST_F(RemoteE2eTest, WrongTokenIsRefusedAndTheBuildGoesOnLocally) {
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  size_t records = RemoteRecords();
  b_.token = "not-the-token";
  RunResult b = b_.Benchmake("build");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(b_.Runs(), "gen\ncount\nspeed\n");
  EXPECT_NE(b.output.find("401"), std::string::npos) << b.output;
  EXPECT_EQ(Count(b.output, "using the local cache only"), 1u) << b.output;
  EXPECT_EQ(RemoteRecords(), records);
  ExpectLocalCacheClean(b_);
}

TEST_F(RemoteE2eTest, ReadOnlyClientReadsButNeverWrites) {
  a_.remote = remote_ + "|remote_write=false";
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  EXPECT_TRUE(RemoteBlobs().empty());
  EXPECT_EQ(RemoteRecords(), 0u);
  ASSERT_EQ(b_.Benchmake("build").exit_code, 0);  // a writer fills the remote
  size_t records = RemoteRecords();
  Machine c = MakeMachine("c");
  c.remote = remote_ + "|remote_write=false";
  c.platform = kH200;
  RunResult cr = c.Benchmake("build");
  ASSERT_EQ(cr.exit_code, 0) << cr.output;
  EXPECT_EQ(c.Runs(), "speed\n") << "read-only clients still read";
  EXPECT_EQ(RemoteRecords(), records) << "and never write";
}

TEST_F(RemoteE2eTest, SignedRecordsClientRejectsAForgedRecord) {
  a_.remote = remote_ + "|signing_key_env=BM_E2E_KEY";
  a_.key = "ci-secret";
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  b_.remote = a_.remote;
  b_.key = "ci-secret";
  // Forge count's record: same signature line, different body.
  bool forged = false;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(server_->Root() + "/cache/bm/ac", ec)) {
    std::string bytes = ReadFile(e.path());
    size_t at = bytes.find("\"target\": \"count\"");
    if (at == std::string::npos) continue;
    bytes.replace(at, 17, "\"target\": \"cOunt\"");
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(e.path(), std::ios::binary) << bytes;
    forged = true;
  }
  ASSERT_TRUE(forged);
  RunResult b = b_.Benchmake("build");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("does not verify"), std::string::npos) << b.output;
  EXPECT_NE(b_.Runs().find("count\n"), std::string::npos) << "the forged record was used";
  EXPECT_EQ(b_.Runs().find("gen\n"), std::string::npos) << "gen's genuine record was refused";
  RunResult stats = b_.Benchmake("cache stats");
  EXPECT_EQ(stats.output.find(" 0 rejected"), std::string::npos) << stats.output;
  // A client with another key trusts nothing.
  Machine c = MakeMachine("c");
  c.remote = a_.remote;
  c.key = "guess";
  ASSERT_EQ(c.Benchmake("build").exit_code, 0);
  EXPECT_EQ(c.Runs(), "gen\ncount\nspeed\n");
}

TEST_F(RemoteE2eTest, PushThenPullWithoutRunning) {
  a_.remote = remote_ + "|remote_write=false";
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  EXPECT_EQ(RemoteRecords(), 0u);
  a_.remote = remote_;
  RunResult push = a_.Benchmake("cache push");
  ASSERT_EQ(push.exit_code, 0) << push.output;
  EXPECT_NE(push.output.find("pushed 3 targets"), std::string::npos) << push.output;
  EXPECT_EQ(RemoteRecords(), 3u);
  RunResult pull = b_.Benchmake("cache pull count");
  ASSERT_EQ(pull.exit_code, 0) << pull.output;
  EXPECT_NE(pull.output.find("pulled 2 targets"), std::string::npos) << pull.output;
  EXPECT_EQ(b_.Runs(), "");
  EXPECT_EQ(ReadFile(b_.dir + "/out/count/count.txt"), ReadFile(a_.dir + "/out/count/count.txt"));
  EXPECT_FALSE(fs::exists(b_.dir + "/out/speed"));
  // b has pulled gen and count, not speed: pushing everything skips speed;
  // naming it is an error (exit 1, as `git push` of a branch that does not
  // exist), where it printed "pushed 0 targets ..." and exited 0.
  RunResult all = b_.Benchmake("cache push");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(all.output.find("pushed 2 targets (0 values sent, 0 B), 1 skipped"), std::string::npos)
      << all.output;
  RunResult named = b_.Benchmake("cache push speed");
  EXPECT_EQ(named.exit_code, 1) << named.output;
  EXPECT_NE(named.output.find("error: not built here, so not pushed: speed"), std::string::npos)
      << named.output;
  // A read-only client cannot push, and says why.
  b_.remote = remote_ + "|remote_write=false";
  RunResult refused = b_.Benchmake("cache push");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.output.find("no writable remote"), std::string::npos) << refused.output;
  // A malformed $BENCHMAKE_REMOTE_CACHE is a user's mistake (exit 2), named as such.
  a_.remote = remote_ + "|remote_timeout=abc";
  RunResult typo = a_.Benchmake("cache push");
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_EQ(Count(typo.output, "warning:"), 1u) << "one process, one run: one warning\n"
                                                << typo.output;
  EXPECT_NE(typo.output.find("error: pushing gen: the remote cache could not be set up: "
                             "BENCHMAKE_REMOTE_CACHE: remote_timeout must be a number, not 'abc'"),
            std::string::npos)
      << typo.output;
}

TEST_F(RemoteE2eTest, ARecordFromANewerBenchmakeIsAMissNotAFailure) {
  // A teammate on a newer release shares the remote: its records are a miss
  // here (STYLE 5 refuses newer versions; a remote never fails a build).
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  std::error_code ec;
  size_t replaced = 0;
  for (auto& e : fs::directory_iterator(server_->Root() + "/cache/bm/ac", ec)) {
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(e.path(), std::ios::binary) << "benchmake-action 99\n{}\n";
    ++replaced;
  }
  ASSERT_EQ(replaced, 3u);
  RunResult b = b_.Benchmake("build");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(b_.Runs(), "gen\ncount\nspeed\n");
  EXPECT_NE(b.output.find("upgrade benchmake"), std::string::npos) << b.output;
  RunResult again = b_.Benchmake("build");
  ASSERT_EQ(again.exit_code, 0) << "a newer record was stored in the local cache\n" << again.output;
  ExpectLocalCacheClean(b_);
}

TEST_F(RemoteE2eTest, PullRunsNothingWhenTheRemoteLacksABlob) {
  ASSERT_EQ(a_.Benchmake("build").exit_code, 0);
  bool removed = false;
  for (const fs::path& p : RemoteBlobs()) {
    if (fs::file_size(p) == 200000) removed = fs::remove(p);
  }
  ASSERT_TRUE(removed);
  RunResult pull = b_.Benchmake("cache pull count");
  EXPECT_EQ(pull.exit_code, 0) << pull.output;
  EXPECT_EQ(b_.Runs(), "") << "cache pull ran a step:\n" << pull.output;
  EXPECT_NE(pull.output.find("gen: not in the cache"), std::string::npos) << pull.output;
  EXPECT_NE(pull.output.find("count: not in the cache (its input gen is not restored)"),
            std::string::npos)
      << pull.output;
  EXPECT_NE(pull.output.find("pulled 0 targets, 2 not in the cache"), std::string::npos)
      << pull.output;
  EXPECT_FALSE(fs::exists(b_.dir + "/out/gen/data.bin"));
  ExpectLocalCacheClean(b_);
}

}  // namespace
}  // namespace bm::cache
