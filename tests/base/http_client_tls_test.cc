// TLS through bm::http::Client against nginx on 127.0.0.1 with certificates
// made by the openssl command for this test: server verification with ca_file,
// mutual TLS with client_cert/client_key, and the failures in between.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "base/http_client.h"
#include "tests/support/nginx_server.h"

namespace bm::http {
namespace {

using bm::testing::NginxOptions;
using bm::testing::NginxServer;

constexpr const char* kTlsTemplate = R"(worker_processes 1;
@USER@
pid @DIR@/nginx.pid;
error_log @DIR@/error.log warn;
events {}
http {
  access_log off;
  client_body_temp_path @DIR@/body;
  proxy_temp_path @DIR@/proxy;
  fastcgi_temp_path @DIR@/fastcgi;
  uwsgi_temp_path @DIR@/uwsgi;
  scgi_temp_path @DIR@/scgi;
  server {
    listen 127.0.0.1:@PORT@ ssl;
    ssl_certificate @DIR@/pki/server.pem;
    ssl_certificate_key @DIR@/pki/server.key;
    ssl_client_certificate @DIR@/pki/ca.pem;
    ssl_verify_client on;
    root @ROOT@;
    location /cache/ { dav_methods PUT; create_full_put_path on; }
  }
}
)";

// Makes a CA, a server certificate for IP 127.0.0.1 and a client certificate.
bool MakePki(const std::string& dir) {
  std::string script =
      "set -e; mkdir -p '" + dir + "'; cd '" + dir +
      "'; k='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes';"
      "openssl req -x509 $k -days 2 -subj /CN=bm-test-ca -keyout ca.key -out ca.pem;"
      "for who in server client; do "
      "  openssl req $k -subj /CN=bm-test-$who -keyout $who.key -out $who.csr;"
      "  printf 'subjectAltName=IP:127.0.0.1\\n' > $who.ext;"
      "  openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "    -extfile $who.ext -out $who.pem;"
      "done";
  std::string path = dir + ".sh";
  std::ofstream(path) << script << "\n";
  return std::system(("bash '" + path + "' >/dev/null 2>&1").c_str()) == 0;
}

class HttpClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "openssl is not installed (scripts/bootstrap.sh test installs it)";
    }
    auto dir = bm::testing::MakeTempDir("bm-tls-pki");
    ASSERT_TRUE(dir.ok());
    pki_ = *dir;
    ASSERT_TRUE(MakePki(pki_ + "/pki")) << "openssl could not make test certificates";
    NginxOptions options;
    // The server's @DIR@ is its own temp dir: point the template at ours instead.
    options.config_template = kTlsTemplate;
    std::string& t = options.config_template;
    for (size_t pos; (pos = t.find("@DIR@/pki")) != std::string::npos;) {
      t.replace(pos, 9, pki_ + "/pki");
    }
    auto server = NginxServer::Start(options);
    if (!server.ok() && server.status().code() == ErrorCode::kUnsupported) {
      GTEST_SKIP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    std::ofstream(server_->Root() + "/cache/hello") << "over tls";
  }
  void TearDown() override { bm::testing::RemoveTree(pki_); }
  std::string Url() {
    return "https://127.0.0.1:" + std::to_string(server_->port()) + "/cache/hello";
  }
  ClientOptions Options(bool ca, bool client_cert) {
    ClientOptions o;
    o.connect_timeout_seconds = 5;
    if (ca) o.ca_file = pki_ + "/pki/ca.pem";
    if (client_cert) {
      o.client_cert = pki_ + "/pki/client.pem";
      o.client_key = pki_ + "/pki/client.key";
    }
    return o;
  }
  Result<Response> Fetch(const ClientOptions& o, std::string* body) {
    Client client(o);
    return client.Get(Url(), [body](const char* p, size_t n) {
      body->append(p, n);
      return Status::Ok();
    });
  }

  std::string pki_;
  std::unique_ptr<NginxServer> server_;
};

TEST_F(HttpClientTlsTest, MutualTlsWithOurCaAndClientCertificateWorks) {
  std::string body;
  auto r = Fetch(Options(true, true), &body);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(body, "over tls");
}

TEST_F(HttpClientTlsTest, UnknownServerCertificateIsATlsFailure) {
  std::string body;
  auto r = Fetch(Options(false, true), &body);
  EXPECT_EQ(r.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(r.status().message().find("TLS failure"), std::string::npos) << r.status().message();
  EXPECT_TRUE(body.empty());
}

TEST_F(HttpClientTlsTest, MissingClientCertificateIsRefused) {
  std::string body;
  auto r = Fetch(Options(true, false), &body);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("400"), std::string::npos) << r.status().message();
  EXPECT_TRUE(body.empty());
}

}  // namespace
}  // namespace bm::http
