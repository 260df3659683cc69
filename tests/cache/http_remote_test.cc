#include "cache/remote/http_remote.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "tests/support/nginx_server.h"

namespace bm::cache {
namespace {

namespace fs = std::filesystem;
using bm::testing::NginxOptions;
using bm::testing::NginxServer;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

class HttpRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(NginxOptions{"tok", "", ""}); }
  void StartServer(const NginxOptions& options) {
    server_.reset();
    auto server = NginxServer::Start(options);
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    work_ = server_->Dir() + "/client";
    fs::create_directories(work_);
  }
  http::ClientOptions Options(const std::string& token = "tok") {
    http::ClientOptions o;
    o.bearer_token = token;
    o.connect_timeout_seconds = 5;
    o.stall_seconds = 5;
    return o;
  }
  std::string Base() { return server_->Url("/cache/bm"); }
  std::string ServerPath(Namespace ns, const Digest& d) {
    return server_->Root() + "/cache/bm/" + std::string(NamespaceName(ns)) + "/" + d.Hex();
  }

  std::unique_ptr<NginxServer> server_;
  std::string work_;
};

TEST_F(HttpRemoteTest, PutThenGetAndExistsUnderCasAndAc) {
  HttpRemote remote(Base(), Options());
  std::string blob = RandomBytes(1 << 20, 1);
  Digest d = DigestOf(blob);
  WriteFile(work_ + "/in", blob);
  auto before = remote.Exists(Namespace::kCas, d);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_FALSE(*before);
  ASSERT_TRUE(remote.Put(Namespace::kCas, d, work_ + "/in").ok());
  EXPECT_EQ(ReadFile(ServerPath(Namespace::kCas, d)), blob);  // the documented layout
  EXPECT_TRUE(*remote.Exists(Namespace::kCas, d));
  auto got = remote.Get(Namespace::kCas, d, work_ + "/out");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(*got);
  EXPECT_EQ(ReadFile(work_ + "/out"), blob);

  Digest action = DigestOf("some action key material");
  WriteFile(work_ + "/record", "benchmake-action 1\n{}");
  ASSERT_TRUE(remote.Put(Namespace::kAc, action, work_ + "/record").ok());
  EXPECT_TRUE(fs::exists(ServerPath(Namespace::kAc, action)));
  ASSERT_TRUE(*remote.Get(Namespace::kAc, action, work_ + "/record.out"));
  EXPECT_EQ(ReadFile(work_ + "/record.out"), "benchmake-action 1\n{}");
}

TEST_F(HttpRemoteTest, MissingKeyIsAMissNotAFailure) {
  HttpRemote remote(Base(), Options());
  Digest d = DigestOf("never stored");
  auto got = remote.Get(Namespace::kCas, d, work_ + "/out");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_FALSE(*got);
  EXPECT_FALSE(fs::exists(work_ + "/out"));
  EXPECT_FALSE(*remote.Exists(Namespace::kAc, d));
}

TEST_F(HttpRemoteTest, KeysAreHexUnderThePrefix) {
  HttpRemote remote(Base() + "/", Options());
  Digest d = DigestOf("x");
  EXPECT_EQ(remote.KeyUrl(Namespace::kCas, d), Base() + "/cas/" + d.Hex());
  EXPECT_EQ(remote.KeyUrl(Namespace::kAc, d), Base() + "/ac/" + d.Hex());
  EXPECT_EQ(d.Hex().find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(HttpRemote("http://u:pw@127.0.0.1:1/bm", Options()).url(), "http://127.0.0.1:1/bm");
}

TEST_F(HttpRemoteTest, CorruptBytesOnTheServerAreRejectedAndNeverLand) {
  HttpRemote remote(Base(), Options());
  std::string blob = RandomBytes(300000, 2);
  Digest d = DigestOf(blob);
  std::string bad = blob;
  bad[123456] ^= 1;
  WriteFile(ServerPath(Namespace::kCas, d), bad);
  auto got = remote.Get(Namespace::kCas, d, work_ + "/out");
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt) << got.status().message();
  EXPECT_FALSE(fs::exists(work_ + "/out"));
  // Truncated on the server: also corrupt, also nothing left.
  WriteFile(ServerPath(Namespace::kCas, d), blob.substr(0, 1000));
  got = remote.Get(Namespace::kCas, d, work_ + "/out");
  EXPECT_EQ(got.status().code(), ErrorCode::kCorrupt);
  EXPECT_FALSE(fs::exists(work_ + "/out"));
}

TEST_F(HttpRemoteTest, WrongTokenFailsEveryVerbAndStoresNothing) {
  HttpRemote remote(Base(), Options("wrong"));
  Digest d = DigestOf("blob");
  WriteFile(work_ + "/in", "blob");
  Status put = remote.Put(Namespace::kCas, d, work_ + "/in");
  EXPECT_EQ(put.code(), ErrorCode::kFailed);
  EXPECT_NE(put.message().find("401"), std::string::npos) << put.message();
  EXPECT_FALSE(fs::exists(ServerPath(Namespace::kCas, d)));
  EXPECT_FALSE(remote.Exists(Namespace::kCas, d).ok());
  EXPECT_FALSE(remote.Get(Namespace::kCas, d, work_ + "/out").ok());
  EXPECT_FALSE(fs::exists(work_ + "/out"));
}

TEST_F(HttpRemoteTest, ServerDownIsUnavailable) {
  HttpRemote remote(Base(), Options());
  server_->Stop();
  Digest d = DigestOf("x");
  auto e = remote.Exists(Namespace::kCas, d);
  EXPECT_EQ(e.status().code(), ErrorCode::kUnavailable) << e.status().message();
  auto g = remote.Get(Namespace::kCas, d, work_ + "/out");
  EXPECT_EQ(g.status().code(), ErrorCode::kUnavailable);
  EXPECT_FALSE(fs::exists(work_ + "/out"));
}

TEST_F(HttpRemoteTest, SlowServerTimesOutAndLeavesNothing) {
  StartServer(NginxOptions{"", "limit_rate 1k;", ""});
  std::string blob = RandomBytes(100000, 3);
  Digest d = DigestOf(blob);
  WriteFile(ServerPath(Namespace::kCas, d), blob);
  http::ClientOptions o = Options("");
  o.stall_bytes_per_second = 50000;
  o.stall_seconds = 1;
  HttpRemote remote(Base(), o);
  auto g = remote.Get(Namespace::kCas, d, work_ + "/out");
  EXPECT_EQ(g.status().code(), ErrorCode::kTimeout) << g.status().message();
  EXPECT_FALSE(fs::exists(work_ + "/out"));
}

TEST_F(HttpRemoteTest, GetManyAndPutManyRunInParallelWithOneResultEach) {
  HttpRemote remote(Base(), Options());
  std::vector<RemotePush> pushes;
  std::vector<std::string> blobs;
  for (int i = 0; i < 30; ++i) {
    blobs.push_back(RandomBytes(500 + i, 10 + i));
    std::string path = work_ + "/p" + std::to_string(i);
    WriteFile(path, blobs.back());
    pushes.push_back({Namespace::kCas, DigestOf(blobs.back()), path});
  }
  for (const Status& s : remote.PutMany(pushes, 8)) EXPECT_TRUE(s.ok()) << s.message();
  std::vector<RemoteFetch> fetches;
  for (int i = 0; i < 30; ++i) {
    fetches.push_back({Namespace::kCas, pushes[i].key, work_ + "/g" + std::to_string(i)});
  }
  fetches.push_back({Namespace::kCas, DigestOf("absent"), work_ + "/absent"});
  std::vector<Result<bool>> results = remote.GetMany(fetches, 8);
  ASSERT_EQ(results.size(), fetches.size());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status().message();
    EXPECT_TRUE(*results[i]);
    EXPECT_EQ(ReadFile(fetches[i].dest_path), blobs[i]);
  }
  ASSERT_TRUE(results.back().ok());
  EXPECT_FALSE(*results.back());
}

// nginx's DAV module writes a PUT body to client_body_temp_path and renames it
// into place only when the whole body has arrived, so a pusher killed with
// SIGKILL mid-upload leaves nothing under the digest.
TEST_F(HttpRemoteTest, KillNineDuringPutLeavesNoPartialBlobUnderItsDigest) {
  const size_t total = 8 << 20;
  std::string blob = RandomBytes(total, 4);
  Digest d = DigestOf(blob);
  std::string url = HttpRemote(Base(), Options()).KeyUrl(Namespace::kCas, d);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Sends the first 3 MiB, then hangs forever with the upload unfinished.
    http::Client client(Options());
    size_t sent = 0;
    auto source = [&](char* buf, size_t cap) -> Result<size_t> {
      if (sent >= (3u << 20)) {
        pause();
        return Status(ErrorCode::kInternal, "unreachable");
      }
      size_t n = std::min(cap, (3u << 20) - sent);
      memcpy(buf, blob.data() + sent, n);
      sent += n;
      return n;
    };
    (void)client.Put(url, source, total);
    _exit(0);
  }
  // Wait until nginx holds a partial body in its temp directory.
  std::string body_dir = server_->Dir() + "/body";
  auto partial_size = [&]() -> uintmax_t {
    uintmax_t biggest = 0;
    std::error_code ec;
    for (auto& e : fs::recursive_directory_iterator(body_dir, ec)) {
      if (e.is_regular_file(ec)) biggest = std::max(biggest, e.file_size(ec));
    }
    return biggest;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (partial_size() < (2u << 20) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(partial_size(), 2u << 20) << "nginx never buffered the upload to a temp file";
  HttpRemote remote(Base(), Options());
  EXPECT_FALSE(*remote.Exists(Namespace::kCas, d)) << "partial blob visible mid-upload";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(*remote.Exists(Namespace::kCas, d)) << "partial blob visible after kill -9";
  EXPECT_FALSE(fs::exists(ServerPath(Namespace::kCas, d)));
  auto got = remote.Get(Namespace::kCas, d, work_ + "/out");
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(*got);
  // The same push, completed, makes the blob appear whole.
  WriteFile(work_ + "/in", blob);
  ASSERT_TRUE(remote.Put(Namespace::kCas, d, work_ + "/in").ok());
  EXPECT_EQ(ReadFile(ServerPath(Namespace::kCas, d)), blob);
}

}  // namespace
}  // namespace bm::cache
