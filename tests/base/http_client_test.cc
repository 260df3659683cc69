#include "base/http_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/support/nginx_server.h"
#include "tests/support/raw_http_server.h"

namespace bm::http {
namespace {

using bm::testing::NginxServer;
using bm::testing::RawHttpServer;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

Source FromString(const std::string& data) {
  auto offset = std::make_shared<size_t>(0);
  return [&data, offset](char* buf, size_t cap) -> Result<size_t> {
    size_t n = std::min(cap, data.size() - *offset);
    memcpy(buf, data.data() + *offset, n);
    *offset += n;
    return n;
  };
}

Sink ToString(std::string* out) {
  return [out](const char* p, size_t n) {
    out->append(p, n);
    return Status::Ok();
  };
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bm::testing::NginxOptions nginx;
    nginx.token = "s3cret";
    auto server = NginxServer::Start(nginx);
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    options_.bearer_token = "s3cret";
    options_.connect_timeout_seconds = 5;
    options_.stall_seconds = 5;
  }
  std::string Url(const std::string& name) { return server_->Url("/cache/" + name); }

  std::unique_ptr<NginxServer> server_;
  ClientOptions options_;
};

TEST_F(HttpClientTest, PutThenGetStreamsTheSameBytesWithProgress) {
  Client client(options_);
  std::string data = RandomBytes(3 * 1024 * 1024 + 17, 1);
  uint64_t last_up = 0, up_total = 0;
  auto put =
      client.Put(Url("a/b/blob"), FromString(data), data.size(), [&](uint64_t now, uint64_t total) {
        last_up = now;
        up_total = total;
      });
  ASSERT_TRUE(put.ok()) << put.status().message();
  EXPECT_EQ(put->bytes, data.size());
  EXPECT_TRUE(put->status == 201 || put->status == 204) << put->status;
  EXPECT_EQ(last_up, data.size());
  EXPECT_EQ(up_total, data.size());
  EXPECT_EQ(ReadFile(server_->Root() + "/cache/a/b/blob"), data);

  std::string got;
  int pieces = 0;
  uint64_t last_down = 0;
  auto get = client.Get(
      Url("a/b/blob"),
      [&](const char* p, size_t n) {
        ++pieces;
        got.append(p, n);
        return Status::Ok();
      },
      0, [&](uint64_t now, uint64_t) { last_down = now; });
  ASSERT_TRUE(get.ok()) << get.status().message();
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->content_length, static_cast<int64_t>(data.size()));
  EXPECT_EQ(get->bytes, data.size());
  EXPECT_EQ(got, data);
  EXPECT_GT(pieces, 1);  // streamed, not one buffer
  EXPECT_EQ(last_down, data.size());
}

TEST_F(HttpClientTest, HeadGivesSizeAndMissingIsNotFound) {
  Client client(options_);
  ASSERT_TRUE(client.Put(Url("h"), FromString("12345"), 5).ok());
  auto head = client.Head(Url("h"));
  ASSERT_TRUE(head.ok()) << head.status().message();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->content_length, 5);
  auto missing = client.Head(Url("nope"));
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  std::string body;
  auto get = client.Get(Url("nope"), ToString(&body));
  EXPECT_EQ(get.status().code(), ErrorCode::kNotFound) << get.status().message();
  EXPECT_TRUE(body.empty()) << "an error page must not reach the sink";
}

TEST_F(HttpClientTest, WrongTokenFailsWithTheStatusCode) {
  ClientOptions wrong = options_;
  wrong.bearer_token = "guess";
  Client client(wrong);
  std::string body;
  auto get = client.Get(Url("x"), ToString(&body));
  EXPECT_EQ(get.status().code(), ErrorCode::kFailed);
  EXPECT_NE(get.status().message().find("401"), std::string::npos) << get.status().message();
  EXPECT_TRUE(body.empty());
  auto put = client.Put(Url("x"), FromString("abc"), 3);
  EXPECT_EQ(put.status().code(), ErrorCode::kFailed);
  EXPECT_FALSE(std::filesystem::exists(server_->Root() + "/cache/x"));
}

TEST_F(HttpClientTest, RangeResumesFromAnOffset) {
  Client client(options_);
  std::string data = RandomBytes(100000, 2);
  ASSERT_TRUE(client.Put(Url("r"), FromString(data), data.size()).ok());
  std::string tail;
  uint64_t seen_offset = 99;
  Transfer t;
  t.url = Url("r");
  t.sink = ToString(&tail);
  t.range_start = 60000;
  t.on_response = [&](const Response& r) {
    seen_offset = r.body_offset;
    return Status::Ok();
  };
  ASSERT_TRUE(client.Run(t).ok()) << t.status.message();
  EXPECT_EQ(t.response.status, 206);
  EXPECT_EQ(seen_offset, 60000u);
  EXPECT_EQ(tail, data.substr(60000));
}

TEST_F(HttpClientTest, PutFileUploadsAFileFromDisk) {
  Client client(options_);
  std::string path = server_->Dir() + "/upload.bin";
  std::string data = RandomBytes(700000, 3);
  std::ofstream(path, std::ios::binary) << data;
  auto put = client.PutFile(Url("f"), path);
  ASSERT_TRUE(put.ok()) << put.status().message();
  EXPECT_EQ(ReadFile(server_->Root() + "/cache/f"), data);
  auto missing = client.PutFile(Url("g"), path + ".missing");
  EXPECT_EQ(missing.status().code(), ErrorCode::kIo);
}

TEST_F(HttpClientTest, SinkAndSourceErrorsAbortAndAreReturned) {
  Client client(options_);
  std::string data = RandomBytes(2000000, 4);
  ASSERT_TRUE(client.Put(Url("s"), FromString(data), data.size()).ok());
  auto get = client.Get(
      Url("s"), [](const char*, size_t) { return Status(ErrorCode::kCorrupt, "sink says no"); });
  EXPECT_EQ(get.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(get.status().message(), "sink says no");
  auto put = client.Put(
      Url("t"), [](char*, size_t) -> Result<size_t> { return Status(ErrorCode::kIo, "disk"); }, 10);
  EXPECT_EQ(put.status().code(), ErrorCode::kIo);
  // A source that ends early is an error, not a short blob.
  auto short_put = client.Put(Url("u"), FromString("abc"), 10);
  EXPECT_FALSE(short_put.ok());
  EXPECT_FALSE(std::filesystem::exists(server_->Root() + "/cache/u"));
}

TEST_F(HttpClientTest, RunAllRunsManyTransfersInParallelEachWithItsOwnStatus) {
  Client client(options_);
  std::vector<std::string> blobs;
  for (int i = 0; i < 40; ++i) blobs.push_back(RandomBytes(1000 + i * 37, 100 + i));
  std::vector<Transfer> puts(blobs.size());
  std::vector<Transfer*> ptrs;
  for (size_t i = 0; i < blobs.size(); ++i) {
    puts[i].method = Method::kPut;
    puts[i].url = Url("m/" + std::to_string(i));
    puts[i].source = FromString(blobs[i]);
    puts[i].upload_size = blobs[i].size();
    ptrs.push_back(&puts[i]);
  }
  ASSERT_TRUE(client.RunAll(ptrs, 8).ok());
  std::vector<Transfer> gets(blobs.size() + 1);
  std::vector<std::string> got(gets.size());
  ptrs.clear();
  for (size_t i = 0; i < gets.size(); ++i) {
    gets[i].url = Url("m/" + std::to_string(i));  // the last one does not exist
    gets[i].sink = ToString(&got[i]);
    ptrs.push_back(&gets[i]);
  }
  Status all = client.RunAll(ptrs, 8);
  EXPECT_EQ(all.code(), ErrorCode::kNotFound);
  for (size_t i = 0; i < blobs.size(); ++i) {
    EXPECT_TRUE(gets[i].status.ok()) << i << ": " << gets[i].status.message();
    EXPECT_EQ(got[i], blobs[i]) << i;
  }
  EXPECT_EQ(gets.back().status.code(), ErrorCode::kNotFound);
}

TEST_F(HttpClientTest, ResponseThrottledBelowTheStallLimitTimesOut) {
  server_.reset();
  bm::testing::NginxOptions nginx;
  nginx.extra = "limit_rate 2k;";
  auto slow = NginxServer::Start(nginx);
  ASSERT_TRUE(slow.ok()) << slow.status().message();
  std::string data = RandomBytes(200000, 5);
  std::ofstream((*slow)->Root() + "/cache/slow", std::ios::binary) << data;
  ClientOptions o;
  o.stall_bytes_per_second = 100000;
  o.stall_seconds = 1;
  Client client(o);
  std::string got;
  auto start = std::chrono::steady_clock::now();
  auto get = client.Get((*slow)->Url("/cache/slow"), ToString(&got));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(get.status().code(), ErrorCode::kTimeout) << get.status().message();
  EXPECT_LT(seconds, 10);
}

TEST(HttpClientFailureTest, NothingListeningIsUnavailable) {
  auto port = bm::testing::FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  Client client;
  auto head = client.Head("http://127.0.0.1:" + std::to_string(*port) + "/x");
  EXPECT_EQ(head.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(head.status().message().find("cannot connect"), std::string::npos)
      << head.status().message();
}

TEST(HttpClientFailureTest, ServerThatNeverAnswersTimesOut) {
  RawHttpServer server("", /*hold_open=*/true);
  ASSERT_TRUE(server.status().ok());
  ClientOptions o;
  o.stall_seconds = 1;
  Client client(o);
  std::string got;
  auto start = std::chrono::steady_clock::now();
  auto get = client.Get(server.Url("/x"), ToString(&got));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(get.status().code(), ErrorCode::kTimeout) << get.status().message();
  EXPECT_LT(seconds, 5);
}

TEST(HttpClientFailureTest, BodyThatStopsAfterABurstTimesOutAfterStallSeconds) {
  // 200 KB at once, then silence with the connection open: "no bytes moving
  // for stall_seconds" (docs/REMOTE_CACHE.md, remote_timeout) must not wait
  // for an average speed over the burst to decay (libcurl's speed check).
  RawHttpServer server(
      "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + std::string(200000, 'x'),
      /*hold_open=*/true);
  ASSERT_TRUE(server.status().ok());
  ClientOptions o;
  o.stall_seconds = 1;
  Client client(o);
  std::string got;
  auto start = std::chrono::steady_clock::now();
  auto get = client.Get(server.Url("/x"), ToString(&got));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(get.status().code(), ErrorCode::kTimeout) << get.status().message();
  EXPECT_EQ(got.size(), 200000u);
  EXPECT_LT(seconds, 2.5) << "stalled for " << seconds << " s with stall_seconds = 1";
}

TEST(HttpClientFailureTest, TruncatedBodyIsCorrupt) {
  RawHttpServer server("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789",
                       /*hold_open=*/false);
  ASSERT_TRUE(server.status().ok());
  Client client;
  std::string got;
  auto get = client.Get(server.Url("/x"), ToString(&got));
  EXPECT_EQ(get.status().code(), ErrorCode::kCorrupt) << get.status().message();
  EXPECT_NE(get.status().message().find("truncated"), std::string::npos);
}

TEST(HttpClientFailureTest, OtherStatusIsFailedWithItsCode) {
  RawHttpServer server("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
                       /*hold_open=*/false);
  ASSERT_TRUE(server.status().ok());
  Client client;
  std::string got;
  auto get = client.Get(server.Url("/x"), ToString(&got));
  EXPECT_EQ(get.status().code(), ErrorCode::kFailed);
  EXPECT_NE(get.status().message().find("503"), std::string::npos) << get.status().message();
  EXPECT_TRUE(got.empty());
}

TEST(HttpClientFileTest, FileUrlsGetHeadPutAndMissing) {
  auto dir = bm::testing::MakeTempDir("bm-http-file");
  ASSERT_TRUE(dir.ok());
  Client client;
  std::string url = "file://" + *dir + "/blob";
  ASSERT_TRUE(client.Put(url, FromString("hello file"), 10).ok());
  std::string got;
  auto get = client.Get(url, ToString(&got));
  ASSERT_TRUE(get.ok()) << get.status().message();
  EXPECT_EQ(got, "hello file");
  EXPECT_EQ(get->status, 200);
  std::string tail;
  auto ranged = client.Get(url, ToString(&tail), 6);
  ASSERT_TRUE(ranged.ok());
  EXPECT_EQ(tail, "file");
  EXPECT_EQ(ranged->body_offset, 6u);
  auto head = client.Head(url);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->content_length, 10);
  EXPECT_EQ(client.Get(url + ".missing", ToString(&got)).status().code(), ErrorCode::kNotFound);
  bm::testing::RemoveTree(*dir);
}

}  // namespace
}  // namespace bm::http
