// The remote cache protocol against the two other WebDAV servers Debian packages
// (docs/REMOTE_CACHE.md, "Other servers"): Apache httpd's mod_dav_fs and
// lighttpd's mod_webdav, started on loopback as they are configured there.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cache/remote/http_remote.h"
#include "tests/support/webdav_server.h"

namespace bm::cache {
namespace {

namespace fs = std::filesystem;
using bm::testing::WebDav;
using bm::testing::WebDavServer;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class WebDavServersTest : public ::testing::TestWithParam<WebDav> {
 protected:
  void SetUp() override {
    auto server = WebDavServer::Start(GetParam());
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    char templ[] = "/tmp/bm-webdav-client-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    work_ = templ;
  }
  void TearDown() override { fs::remove_all(work_); }

  std::string Local(const std::string& name, const std::string& bytes) {
    std::string path = work_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  HttpRemote Remote() {
    http::ClientOptions o;
    o.connect_timeout_seconds = 5;
    o.stall_seconds = 5;
    return HttpRemote(server_->Url("/bm"), o);
  }

  std::unique_ptr<WebDavServer> server_;
  std::string work_;
};

TEST_P(WebDavServersTest, PutIntoAMissingDirectoryIsAConflict) {
  // Neither creates bm/cas/ on PUT (nginx's create_full_put_path does), and
  // benchmake sends no MKCOL: the documented step is to create it by hand.
  HttpRemote remote = Remote();
  Digest d = DigestOf("blob");
  Status put = remote.Put(Namespace::kCas, d, Local("in", "blob"));
  EXPECT_EQ(put.code(), ErrorCode::kFailed) << put.message();
  EXPECT_NE(put.message().find("409"), std::string::npos) << put.message();
}

TEST_P(WebDavServersTest, WithCasAndAcCreatedEveryVerbWorks) {
  server_->MakeDir("bm/cas");
  server_->MakeDir("bm/ac");
  HttpRemote remote = Remote();
  std::mt19937 rng(7);
  std::string blob(300000, '\0');
  for (char& c : blob) c = static_cast<char>(rng() & 0xff);
  std::vector<std::pair<Namespace, std::string>> values = {
      {Namespace::kCas, blob}, {Namespace::kCas, ""}, {Namespace::kAc, "benchmake-action 1\n{}"}};
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& [ns, bytes] = values[i];
    Digest key = DigestOf(bytes);
    std::string name = std::to_string(i);
    Result<bool> before = remote.Exists(ns, key);
    ASSERT_TRUE(before.ok()) << before.status().message();
    EXPECT_FALSE(*before) << name;
    Result<bool> miss = remote.Get(ns, key, work_ + "/miss" + name);
    ASSERT_TRUE(miss.ok()) << miss.status().message();
    EXPECT_FALSE(*miss);
    Status put = remote.Put(ns, key, Local("in" + name, bytes));
    ASSERT_TRUE(put.ok()) << put.message() << "\n" << server_->ErrorLog();
    EXPECT_EQ(ReadFile(server_->Root() + "/bm/" + std::string(NamespaceName(ns)) + "/" + key.Hex()),
              bytes)
        << "stored under its key, as sent";
    Result<bool> after = remote.Exists(ns, key);
    ASSERT_TRUE(after.ok() && *after) << name;
    Result<bool> got = remote.Get(ns, key, work_ + "/out" + name);
    ASSERT_TRUE(got.ok() && *got) << (got.ok() ? "miss" : got.status().message());
    EXPECT_EQ(ReadFile(work_ + "/out" + name), bytes) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, WebDavServersTest,
                         ::testing::Values(WebDav::kApache, WebDav::kLighttpd),
                         [](const ::testing::TestParamInfo<WebDav>& info) {
                           return info.param == WebDav::kApache ? "Apache" : "Lighttpd";
                         });

}  // namespace
}  // namespace bm::cache
