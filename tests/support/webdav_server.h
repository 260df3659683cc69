// WebDavServer: Apache httpd with mod_dav_fs, or lighttpd with mod_webdav, started
// by a test on 127.0.0.1 at a free port, serving `/bm/` of a fresh document root
// in a temp directory (removed when the object goes away) with PUT enabled and
// no authorization: the servers docs/REMOTE_CACHE.md ("Other servers") names
// beside nginx (tests/support/nginx_server.h), in their Debian configuration.
//
//   auto server = bm::testing::WebDavServer::Start(bm::testing::WebDav::kApache);
//   if (!server.ok()) GTEST_SKIP() << server.status().message();  // not installed
//   std::string base = (*server)->Url("/bm");                     // http://127.0.0.1:PORT/bm
//
// Neither server creates missing directories on PUT (both answer 409): the
// test decides whether Root() + "/bm/cas" and "/bm/ac" exist. When running as
// root, Apache's workers run as www-data, and the document root is theirs.
//
// Start() fails with kUnsupported when the server or its module is not
// installed (scripts/bootstrap.sh test installs apache2, lighttpd and
// lighttpd-mod-webdav). Not thread-safe; one per test.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"

namespace bm::testing {

enum class WebDav { kApache, kLighttpd };

class WebDavServer {
 public:
  static Result<std::unique_ptr<WebDavServer>> Start(WebDav kind);
  ~WebDavServer();

  // "http://127.0.0.1:PORT" + path.
  std::string Url(const std::string& path = "") const;
  // The document root: Url("/bm/x") is Root() + "/bm/x".
  std::string Root() const { return dir_ + "/root"; }
  // Creates Root() + "/" + rel (and its parents), owned by the server's user.
  void MakeDir(const std::string& rel) const;
  // The error log, for failure messages.
  std::string ErrorLog() const;

 private:
  WebDavServer() = default;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  uid_t uid_ = 0;  // the workers' user (www-data for Apache under root)
  gid_t gid_ = 0;
};

}  // namespace bm::testing
