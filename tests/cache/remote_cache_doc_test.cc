// Runs the nginx config that docs/REMOTE_CACHE.md gives, verbatim apart from
// the port and paths, and checks what the doc promises: readers and writers by
// token, 401 without one, 403 for a reader's PUT, PUT into new directories,
// and a PUT cut short leaving nothing under its key.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/http_client.h"
#include "cache/remote/http_remote.h"
#include "tests/support/nginx_server.h"

namespace bm::cache {
namespace {

namespace fs = std::filesystem;
using bm::testing::NginxOptions;
using bm::testing::NginxServer;

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) {
    s.replace(pos, from.size(), to);
  }
}

// The ```nginx block right after the "<!-- tested: nginx-conf -->" marker.
std::string DocConfig() {
  const char* src = std::getenv("BENCHMAKE_SOURCE_DIR");
  std::ifstream in(std::string(src != nullptr ? src : ".") + "/docs/REMOTE_CACHE.md");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  size_t marker = doc.find("<!-- tested: nginx-conf -->");
  if (marker == std::string::npos) return "";
  size_t begin = doc.find("```nginx\n", marker);
  size_t end = doc.find("\n```", begin + 9);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return doc.substr(begin + 9, end - begin - 9);
}

// Sends one raw request to 127.0.0.1:port and returns the response's status code.
int StatusLine(int port, const std::string& request) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return -1;
  }
  char buf[64] = {0};
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 12) return -1;
  return std::atoi(buf + 9);  // "HTTP/1.1 403 ..."
}

class RemoteCacheDocTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string conf = DocConfig();
    ASSERT_FALSE(conf.empty()) << "docs/REMOTE_CACHE.md lost its tested nginx block";
    ReplaceAll(conf, "listen 8080;", "listen 127.0.0.1:@PORT@;");
    ReplaceAll(conf, "/srv/benchmake-cache/.tmp", "@DIR@/body");
    ReplaceAll(conf, "/srv/benchmake-cache", "@ROOT@");
    NginxOptions options;
    options.config_template =
        "worker_processes 1;\n@USER@\npid @DIR@/nginx.pid;\n"
        "error_log @DIR@/error.log warn;\nevents {}\nhttp {\n"
        "access_log off;\nproxy_temp_path @DIR@/proxy;\n"
        "fastcgi_temp_path @DIR@/fastcgi;\nuwsgi_temp_path @DIR@/uwsgi;\n"
        "scgi_temp_path @DIR@/scgi;\n" +
        conf + "\n}\n";
    auto server = NginxServer::Start(options);
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    fs::create_directories(server_->Dir() + "/client");
    src_ = server_->Dir() + "/client/blob";
    std::ofstream(src_) << "cached bytes";
    key_ = DigestOf("cached bytes");
  }
  HttpRemote Remote(const std::string& token) {
    http::ClientOptions o;
    o.bearer_token = token;
    o.connect_timeout_seconds = 5;
    o.stall_seconds = 5;
    return HttpRemote(server_->Url("/bm"), o);
  }

  std::unique_ptr<NginxServer> server_;
  std::string src_;
  Digest key_;
};

TEST_F(RemoteCacheDocTest, WriterPutsReadersReadOthersAreRefused) {
  HttpRemote ci = Remote("CHANGE-ME-CI-TOKEN");
  HttpRemote dev = Remote("CHANGE-ME-DEV-TOKEN");
  HttpRemote anonymous = Remote("");
  HttpRemote wrong = Remote("CHANGE-ME-NOT-A-TOKEN");

  Status s = anonymous.Put(Namespace::kCas, key_, src_);
  EXPECT_NE(s.message().find("401"), std::string::npos) << s.message();
  s = wrong.Put(Namespace::kCas, key_, src_);
  EXPECT_NE(s.message().find("401"), std::string::npos) << s.message();
  s = dev.Put(Namespace::kCas, key_, src_);
  EXPECT_NE(s.message().find("403"), std::string::npos) << s.message();
  EXPECT_FALSE(*ci.Exists(Namespace::kCas, key_));

  ASSERT_TRUE(ci.Put(Namespace::kCas, key_, src_).ok());  // creates bm/cas/ on the way
  EXPECT_TRUE(fs::exists(server_->Root() + "/bm/cas/" + key_.Hex()));
  std::string out = server_->Dir() + "/client/out";
  auto got = dev.Get(Namespace::kCas, key_, out);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(*got);
  EXPECT_NE(anonymous.Exists(Namespace::kCas, key_).status().message().find("401"),
            std::string::npos);
}

TEST_F(RemoteCacheDocTest, OnlyGetHeadAndPutAreAllowedAndBodiesAreLimited) {
  const std::string auth = "Authorization: Bearer CHANGE-ME-CI-TOKEN\r\n";
  auto status_of = [&](const std::string& head) {
    return StatusLine(server_->port(), head + "Host: x\r\n" + auth + "\r\n");
  };
  EXPECT_EQ(status_of("DELETE /bm/cas/" + key_.Hex() + " HTTP/1.1\r\n"), 403);
  EXPECT_EQ(status_of("MKCOL /bm/x/ HTTP/1.1\r\n"), 403);
  EXPECT_EQ(status_of("PUT /bm/cas/" + key_.Hex() +
                      " HTTP/1.1\r\nContent-Length: " + std::to_string(65ull << 30) + "\r\n"),
            413);  // over client_max_body_size, refused before any byte is read
  EXPECT_EQ(status_of("GET /etc/passwd HTTP/1.1\r\n"), 404);  // outside /bm/
  EXPECT_FALSE(fs::exists(server_->Root() + "/bm/cas/" + key_.Hex()));
}

}  // namespace
}  // namespace bm::cache
