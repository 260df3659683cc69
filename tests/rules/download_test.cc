#include "rules/download.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "base/digest.h"
#include "base/http_client.h"
#include "base/sha256.h"
#include "rules/download_url.h"
#include "tests/rules/text/test_data.h"
#include "tests/support/nginx_server.h"
#include "tests/support/raw_http_server.h"

namespace bm::rules {
namespace {

namespace fs = std::filesystem;
using bm::testing::NginxServer;
using bm::testing::RawHttpServer;
using nlohmann::json;
using text::testing::ReadFile;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

class DownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = bm::testing::MakeTempDir("bm-download");
    ASSERT_TRUE(dir.ok());
    root_ = *dir;
    for (const char* d : {"out", "resume", "scratch", "files"})
      fs::create_directories(root_ + "/" + d);
  }
  void TearDown() override { bm::testing::RemoveTree(root_); }

  void StartNginx(const std::string& token = "", const std::string& extra = "") {
    bm::testing::NginxOptions options;
    options.token = token;
    options.extra = extra;
    auto server = NginxServer::Start(options);
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    nginx_ = std::move(*server);
  }
  // Serves bytes at /cache/NAME; returns its URL.
  std::string Serve(const std::string& name, const std::string& bytes) {
    WriteFile(nginx_->Root() + "/cache/" + name, bytes);
    return nginx_->Url("/cache/" + name);
  }

  Result<engine::StepResult> Download(json params) {
    auto rule = MakeDownloadRule();
    for (const auto& spec : rule->params()) {
      if (!params.contains(spec.name) && spec.default_value)
        params[spec.name] = *spec.default_value;
    }
    if (!params.contains("retry_delay_s")) params["retry_delay_s"] = 0.01;
    EXPECT_TRUE(rule->Check(params).empty());
    engine::StepContext ctx;
    ctx.target = "dl";
    ctx.params = params;
    ctx.workspace_dir = text::testing::SourcePath("");
    ctx.out_dir = root_ + "/out";
    ctx.resume_dir = root_ + "/resume";
    ctx.scratch_dir = root_ + "/scratch";
    ctx.log = &log_;
    ctx.interactive = interactive_;
    return rule->Run(ctx);
  }

  bool OutEmpty() { return fs::is_empty(root_ + "/out"); }
  std::string Out(const std::string& name) { return ReadFile(root_ + "/out/" + name); }

  std::string root_;
  std::unique_ptr<NginxServer> nginx_;
  std::ostringstream log_;
  bool interactive_ = false;  // the progress line on stderr
};

TEST_F(DownloadTest, NormalDownloadWithPinnedSha256) {
  StartNginx();
  const std::string data = RandomBytes(2 * 1024 * 1024 + 5, 1);
  auto r = Download({{"url", Serve("blob.bin", data)}, {"sha256", Sha256Hex(data)}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Out("blob.bin"), data);
  EXPECT_EQ(r->metrics["bytes"], data.size());
  EXPECT_EQ(r->metrics["sha256"], Sha256Hex(data));
  EXPECT_EQ(r->metrics["attempts"], 1);
  EXPECT_TRUE(fs::is_empty(root_ + "/resume"));
  EXPECT_EQ(log_.str().find("warning"), std::string::npos);
}

TEST_F(DownloadTest, Xxh128IsCheckedToo) {
  StartNginx();
  const std::string url = Serve("x.bin", "some bytes");
  auto ok = Download({{"url", url}, {"xxh128", DigestOf("some bytes").Hex()}});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->metrics["xxh128"], DigestOf("some bytes").Hex());
  fs::remove(root_ + "/out/x.bin");
  auto bad = Download({{"url", url}, {"xxh128", DigestOf("other").Hex()}});
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(bad.status().message().find("xxh128 mismatch"), std::string::npos);
  EXPECT_TRUE(OutEmpty());
}

TEST_F(DownloadTest, WithoutChecksumWarnsAndRecordsTheDigest) {
  StartNginx();
  auto r = Download({{"url", Serve("a.txt", "hello")}, {"filename", "renamed.txt"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Out("renamed.txt"), "hello");
  EXPECT_NE(log_.str().find("no checksum pinned"), std::string::npos);
  EXPECT_NE(log_.str().find(Sha256Hex("hello")), std::string::npos);
}

TEST_F(DownloadTest, ResumesATruncatedTransfer) {
  StartNginx();
  const std::string data = RandomBytes(300000, 2);
  // A server that sends the first 1000 bytes of a longer body, then hangs up.
  RawHttpServer truncating(
      "HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + data.substr(0, 1000), false);
  ASSERT_TRUE(truncating.status().ok());
  auto first = Download({{"url", truncating.Url("/blob.bin")}, {"retries", 1}});
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), ErrorCode::kCorrupt) << first.status().message();
  EXPECT_EQ(truncating.connections(), 2);  // one retry
  EXPECT_TRUE(OutEmpty());
  EXPECT_EQ(fs::file_size(root_ + "/resume/blob.bin.part"), 1000u);  // kept for resuming

  auto second = Download({{"url", Serve("blob.bin", data)}, {"sha256", Sha256Hex(data)}});
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->metrics["resumed_from"], 1000);
  EXPECT_EQ(Out("blob.bin"), data);
  EXPECT_FALSE(fs::exists(root_ + "/resume/blob.bin.part"));
}

// The file changed on the server between the interrupted download and its
// resume: the kept bytes came with ETag "old-version", so the resume sends
// If-Range (RFC 9110 §13.1.5) and nginx, whose ETag differs, answers with the
// whole new file. Before, a plain Range spliced the new file's tail onto the
// old file's head: a file of the right size that is neither.
TEST_F(DownloadTest, AResumeOfAFileThatChangedOnTheServerFetchesItWhole) {
  StartNginx();
  const std::string before = RandomBytes(300000, 3), after = RandomBytes(300000, 4);
  RawHttpServer truncating(
      "HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n"
      "ETag: \"old-version\"\r\n\r\n" +
          before.substr(0, 1000),
      false);
  ASSERT_TRUE(truncating.status().ok());
  ASSERT_FALSE(Download({{"url", truncating.Url("/blob.bin")}, {"retries", 0}}).ok());
  ASSERT_EQ(fs::file_size(root_ + "/resume/blob.bin.part"), 1000u);

  auto r = Download({{"url", Serve("blob.bin", after)}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(Out("blob.bin") == after) << "the old head and the new tail";
  EXPECT_NE(log_.str().find("changed on the server since the partial download"), std::string::npos)
      << log_.str();
  EXPECT_TRUE(fs::is_empty(root_ + "/resume"));
}

// The same file: nginx's own ETag came with the kept bytes, so nginx honours
// the If-Range and sends the rest alone (206, 299,000 bytes in its access log).
TEST_F(DownloadTest, AResumeOfAnUnchangedFileSendsOnlyTheRest) {
  StartNginx("", "access_log access.log;");
  const std::string data = RandomBytes(300000, 5);
  const std::string url = Serve("blob.bin", data);
  http::Client client;
  Result<http::Response> head = client.Head(url);
  ASSERT_TRUE(head.ok()) << head.status().message();
  ASSERT_TRUE(head->validator.starts_with("\""))
      << "nginx sends a strong ETag: " << head->validator;
  RawHttpServer truncating("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\nETag: " + head->validator +
                               "\r\n\r\n" + data.substr(0, 1000),
                           false);
  ASSERT_TRUE(truncating.status().ok());
  ASSERT_FALSE(Download({{"url", truncating.Url("/blob.bin")}, {"retries", 0}}).ok());

  auto r = Download({{"url", url}, {"sha256", Sha256Hex(data)}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Out("blob.bin"), data);
  const std::string access = ReadFile(nginx_->Dir() + "/access.log");
  EXPECT_NE(access.find("\"GET /cache/blob.bin HTTP/1.1\" 206 299000 "), std::string::npos)
      << access;
}

// A resumed download's progress line counts the kept bytes once: 1 MiB kept
// plus 1 MiB fetched is "2.0 MiB / 2.0 MiB" at the end, as wget -c shows it
// (it used to read "... / 3.0 MiB", the kept part added twice).
TEST_F(DownloadTest, ResumedProgressCountsTheKeptBytesOnce) {
  StartNginx("", "limit_rate 512k;");  // about 1 s for the rest: several progress lines
  const std::string data = RandomBytes(2 << 20, 7);
  const std::string url = Serve("ckpt.bin", data);
  WriteFile(root_ + "/resume/ckpt.bin.part", data.substr(0, 1 << 20));
  interactive_ = true;
  ::testing::internal::CaptureStderr();
  auto r = Download({{"url", url}, {"sha256", Sha256Hex(data)}});
  const std::string progress = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["resumed_from"], 1 << 20);
  EXPECT_EQ(Out("ckpt.bin"), data);
  std::stringstream lines(progress);
  int with_total = 0;
  for (std::string line; std::getline(lines, line, '\r');) {
    if (line.find(" / ") == std::string::npos) continue;
    ++with_total;
    EXPECT_NE(line.find(" / 2.0 MiB "), std::string::npos) << line;
  }
  EXPECT_GT(with_total, 0) << "[" << progress << "]" << log_.str();
}

// 429 and 503 answers with Retry-After wait that long before the next try,
// as curl --retry does, rather than retry_delay_s.
TEST_F(DownloadTest, RetryAfterIsHonoured) {
  RawHttpServer limited(
      "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 4\r\n\r\nslow", false);
  ASSERT_TRUE(limited.status().ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Download({{"url", limited.Url("/m.bin")}, {"retries", 1}, {"retry_delay_s", 0.01}});
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HTTP 429"), std::string::npos) << r.status().message();
  EXPECT_EQ(limited.connections(), 2);
  EXPECT_GE(elapsed, std::chrono::milliseconds(950));
  EXPECT_NE(log_.str().find("retrying in 1.0 s"), std::string::npos) << log_.str();
}

// A .part that already holds the whole file (killed after the last byte, say
// while the digests were being computed) is complete: nginx answers the
// Range past its end with 416 and Content-Range "bytes */SIZE", and the rule
// takes the file as it is, as curl -C - and wget -c do, instead of fetching
// it all again.
TEST_F(DownloadTest, ACompletePartIsNotFetchedAgain) {
  StartNginx();
  const std::string data = RandomBytes(300000, 8);
  const std::string url = Serve("done.bin", data);
  WriteFile(root_ + "/resume/done.bin.part", data);
  auto r = Download({{"url", url}, {"sha256", Sha256Hex(data)}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["attempts"], 1);
  EXPECT_EQ(r->metrics["resumed_from"], data.size());
  EXPECT_EQ(Out("done.bin"), data);
  EXPECT_EQ(log_.str().find("refused to resume"), std::string::npos) << log_.str();
}

// The Hub answers resolve/ URLs with a 302 to its CDN. The token goes in
// Authorization, which libcurl drops on a redirect to another origin (here
// another port), as curl and Python's requests do: the token-checking nginx
// behind the redirect answers 401. The error names the origin that answered
// (not its path and query, where a presigned URL keeps its signature), so a
// CDN's refusal is not taken for the Hub's.
TEST_F(DownloadTest, CrossOriginRedirectDropsAuthorizationAndNamesWhoAnswered) {
  StartNginx("t0ps3cret");
  const std::string target = Serve("w.bin", "weights") + "?X-Amz-Signature=s1g";
  RawHttpServer hub("HTTP/1.1 302 Found\r\nLocation: " + target + "\r\nContent-Length: 0\r\n\r\n",
                    false);
  ASSERT_TRUE(hub.status().ok());
  ::setenv("BM_TEST_DOWNLOAD_TOKEN", "t0ps3cret", 1);
  auto r = Download({{"url", hub.Url("/resolve/main/w.bin")},
                     {"headers", {{"Authorization", "Bearer ${BM_TEST_DOWNLOAD_TOKEN}"}}}});
  ::unsetenv("BM_TEST_DOWNLOAD_TOKEN");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("HTTP 401"), std::string::npos) << m;
  EXPECT_NE(m.find("answered by " + nginx_->Url() + " after 1 redirect"), std::string::npos) << m;
  EXPECT_EQ(m.find("s1g"), std::string::npos) << m;
  EXPECT_EQ(m.find("t0ps3cret"), std::string::npos) << m;
  EXPECT_TRUE(OutEmpty());
}

TEST_F(DownloadTest, NotFoundFailsAtOnceAndLeavesNothing) {
  StartNginx();
  auto r = Download({{"url", nginx_->Url("/cache/missing.bin")}, {"retries", 3}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.status().message().find("attempt 1 of 4"), std::string::npos) << r.status().message();
  EXPECT_TRUE(OutEmpty());
  EXPECT_TRUE(fs::is_empty(root_ + "/resume"));
}

TEST_F(DownloadTest, ChecksumMismatchLeavesNothing) {
  StartNginx();
  const std::string url = Serve("x.bin", "actual bytes");
  auto r = Download({{"url", url}, {"sha256", Sha256Hex("expected bytes")}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("sha256 mismatch"), std::string::npos);
  EXPECT_TRUE(OutEmpty());
  EXPECT_TRUE(fs::is_empty(root_ + "/resume"));
}

TEST_F(DownloadTest, StalledServerHitsTheTimeout) {
  RawHttpServer stalled("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789", true);
  ASSERT_TRUE(stalled.status().ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Download({{"url", stalled.Url("/s.bin")}, {"retries", 0}, {"stall_timeout_s", 1.0}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kTimeout) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_TRUE(OutEmpty());
}

TEST_F(DownloadTest, ServerErrorsAreRetried) {
  RawHttpServer busy("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy", false);
  auto r = Download({{"url", busy.Url("/b")}, {"retries", 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(busy.connections(), 3);
  EXPECT_NE(log_.str().find("retrying"), std::string::npos);
  EXPECT_TRUE(OutEmpty());
}

TEST_F(DownloadTest, HeadersExpandEnvironmentAndStayOutOfLogs) {
  StartNginx("t0ps3cret");
  const std::string url = Serve("private.bin", "private data");
  ::setenv("BM_TEST_DOWNLOAD_TOKEN", "t0ps3cret", 1);
  auto ok = Download(
      {{"url", url}, {"headers", {{"Authorization", "Bearer ${BM_TEST_DOWNLOAD_TOKEN}"}}}});
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(Out("private.bin"), "private data");
  EXPECT_EQ(ok->metrics.dump().find("t0ps3cret"), std::string::npos);
  fs::remove(root_ + "/out/private.bin");

  ::setenv("BM_TEST_DOWNLOAD_TOKEN", "wrong", 1);
  auto denied = Download(
      {{"url", url}, {"headers", {{"Authorization", "Bearer ${BM_TEST_DOWNLOAD_TOKEN}"}}}});
  EXPECT_FALSE(denied.ok());
  EXPECT_TRUE(OutEmpty());
  ::unsetenv("BM_TEST_DOWNLOAD_TOKEN");
  auto unset = Download(
      {{"url", url}, {"headers", {{"Authorization", "Bearer ${BM_TEST_DOWNLOAD_TOKEN}"}}}});
  EXPECT_EQ(unset.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unset.status().message().find("BM_TEST_DOWNLOAD_TOKEN is not set"), std::string::npos);
  EXPECT_EQ(log_.str().find("t0ps3cret"), std::string::npos);
}

TEST_F(DownloadTest, RelativeFileUrlAgainstTheWorkspace) {
  const std::string kjv_sha = "38c828bc0001a8e33f88a4a98917665cff1dbb6964a549ad51b34ea5293f752d";
  for (const char* url : {"file:data/kjv.txt", "file://${BENCHFILE_DIR}/data/kjv.txt"}) {
    auto r = Download({{"url", url}, {"sha256", kjv_sha}});
    ASSERT_TRUE(r.ok()) << url << ": " << r.status().message();
    EXPECT_EQ(fs::file_size(root_ + "/out/kjv.txt"), 4236034u);
    fs::remove(root_ + "/out/kjv.txt");
  }
  auto missing = Download({{"url", "file:data/nope.txt"}});
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(OutEmpty());
  // A directory is no file to fetch (libcurl, like curl, read it as empty).
  auto dir = Download({{"url", "file:data"}});
  EXPECT_EQ(dir.status().code(), ErrorCode::kInvalidArgument) << dir.status().message();
  EXPECT_NE(dir.status().message().find("is a directory"), std::string::npos)
      << dir.status().message();
  EXPECT_TRUE(OutEmpty());
  EXPECT_TRUE(fs::is_empty(root_ + "/resume"));
}

// Archives made by the system's gzip, zstd and tar; fetched over file://.
TEST_F(DownloadTest, UnpacksEachFormat) {
  const std::string f = root_ + "/files";
  WriteFile(f + "/tree/a.txt", "alpha");
  WriteFile(f + "/tree/sub/b.txt", "beta");
  WriteFile(f + "/plain.txt", "plain text\n");
  const std::string cmd = "cd " + f +
                          " && gzip -k plain.txt && zstd -q -k plain.txt && xz -k plain.txt"
                          " && tar -cf t.tar tree && tar -czf t.tar.gz tree"
                          " && tar --zstd -cf t.tar.zst tree && tar -cJf t.tar.xz tree";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (const char* fmt : {"gz", "zst", "xz"}) {
    auto r = Download({{"url", "file://" + f + "/plain.txt." + fmt}, {"unpack", fmt}});
    ASSERT_TRUE(r.ok()) << fmt << ": " << r.status().message();
    EXPECT_EQ(Out("plain.txt"), "plain text\n") << fmt;
    fs::remove(root_ + "/out/plain.txt");
    EXPECT_TRUE(OutEmpty()) << fmt;
  }
  for (const char* fmt : {"tar", "tar.gz", "tar.zst", "tar.xz"}) {
    auto r = Download({{"url", "file://" + f + "/t." + fmt}, {"unpack", fmt}});
    ASSERT_TRUE(r.ok()) << fmt << ": " << r.status().message();
    EXPECT_EQ(Out("tree/a.txt"), "alpha") << fmt;
    EXPECT_EQ(Out("tree/sub/b.txt"), "beta") << fmt;
    fs::remove_all(root_ + "/out/tree");
  }
}

TEST_F(DownloadTest, BadArchivesLeaveNothing) {
  const std::string f = root_ + "/files";
  WriteFile(f + "/not.gz", "this is not gzip");
  auto r = Download({{"url", "file://" + f + "/not.gz"}, {"unpack", "gz"}});
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_TRUE(OutEmpty());
  // A tar whose member climbs out of the destination.
  const std::string cmd = "cd " + f +
                          " && mkdir -p x && echo evil > evil.txt && tar -cf evil.tar "
                          "--transform='s,^,../,' evil.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto evil = Download({{"url", "file://" + f + "/evil.tar"}, {"unpack", "tar"}});
  EXPECT_EQ(evil.status().code(), ErrorCode::kCorrupt) << evil.status().message();
  EXPECT_TRUE(OutEmpty());
  EXPECT_FALSE(fs::exists(root_ + "/evil.txt"));
}

TEST(DownloadRuleTest, CheckRejectsBadParameters) {
  auto rule = MakeDownloadRule();
  auto errors = rule->Check({{"url", "ftp://x"},
                             {"sha256", "abc"},
                             {"xxh128", "zz"},
                             {"unpack", "rar"},
                             {"filename", "a/b"}});
  EXPECT_EQ(errors.size(), 5u);  // retries' range: the engine's (benchfile_errors_test)
  EXPECT_TRUE(rule->Check({{"url", "file:data/kjv.txt"}, {"unpack", "tar.gz"}}).empty());
  EXPECT_TRUE(rule->streams_progress({{"url", "https://h/x"}}));
  EXPECT_FALSE(rule->streams_progress({{"url", "file:data/kjv.txt"}}));
}

// Times are refused below zero, as curl refuses --connect-timeout -5 and
// --retry-delay -1 and wget --timeout=-1; they were taken and meant "no stall
// check", libcurl's default connect timeout and no delay.
TEST(DownloadRuleTest, CheckRejectsNegativeTimes) {
  auto rule = MakeDownloadRule();
  const json p = {{"url", "https://h/x"},
                  {"stall_timeout_s", -1.0},
                  {"connect_timeout_s", 0.0},
                  {"retry_delay_s", -0.5}};
  auto errors = rule->Check(p);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].param, "retry_delay_s");
  EXPECT_EQ(errors[1].param, "connect_timeout_s");
  EXPECT_EQ(errors[2].param, "stall_timeout_s");
  EXPECT_TRUE(rule->Check({{"url", "https://h/x"},
                           {"stall_timeout_s", 0.5},
                           {"connect_timeout_s", 1.0},
                           {"retry_delay_s", 0.0}})
                  .empty());
}

TEST(DownloadUrlTest, Expansion) {
  EXPECT_EQ(*ExpandUrl("file:data/kjv.txt", "/ws"), "file:///ws/data/kjv.txt");
  EXPECT_EQ(*ExpandUrl("file:/abs/x", "/ws"), "file:///abs/x");
  EXPECT_EQ(*ExpandUrl("file://${BENCHFILE_DIR}/d", "/ws"), "file:///ws/d");
  EXPECT_EQ(*ExpandUrl("https://h/x?y=1", "/ws"), "https://h/x?y=1");
  EXPECT_FALSE(ExpandUrl("ftp://h/x", "/ws").ok());
  EXPECT_EQ(FileNameForUrl("https://h/a/b.tar.gz?sig=1#f"), "b.tar.gz");
  EXPECT_EQ(FileNameForUrl("https://h/"), "download");
  ::setenv("BM_TEST_X", "v", 1);
  EXPECT_EQ(*ExpandEnvironment("a ${BM_TEST_X} $$ $b", "h"), "a v $ $b");
  EXPECT_FALSE(ExpandEnvironment("${BM_TEST_X", "h").ok());
  ::unsetenv("BM_TEST_X");
}

}  // namespace
}  // namespace bm::rules
