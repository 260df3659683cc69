// NginxServer: a real nginx with WebDAV PUT, started by a test on 127.0.0.1 at a
// free port, with its config, document root and temp files in a fresh temp
// directory that is removed when the server object goes away.
//
//   bm::testing::NginxOptions options;
//   options.token = "secret";
//   auto server = bm::testing::NginxServer::Start(options);
//   if (!server.ok()) GTEST_SKIP() << server.status().message();  // nginx not installed
//   std::string base = (*server)->Url("/cache");                  // http://127.0.0.1:PORT/cache
//
// The default config serves `location /cache/` (GET, HEAD, PUT with
// create_full_put_path) and, when `token` is set, answers 401 to any request
// without "Authorization: Bearer <token>". Tests needing more pass `extra`
// (directives inside that location, e.g. "limit_rate 1k;") or a whole
// `config_template`. Placeholders in a template: @PORT@, @ROOT@ (document
// root), @DIR@ (the temp dir), @USER@ (a "user" line when running as root),
// @TOKEN@, @EXTRA@.
//
// Start() fails with kUnsupported when nginx is not on PATH or /usr/sbin.
// Not thread-safe; one per test.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "base/result.h"

namespace bm::testing {

struct NginxOptions {
  std::string token;            // empty: no authorization check
  std::string extra;            // directives added inside `location /cache/`
  std::string config_template;  // empty: the built-in one
};

class NginxServer {
 public:
  static Result<std::unique_ptr<NginxServer>> Start(NginxOptions options = {});
  ~NginxServer();

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" + path.
  std::string Url(const std::string& path = "") const;
  // The document root on disk: Url("/cache/x") is Root() + "/cache/x".
  std::string Root() const { return dir_ + "/root"; }
  // The temp directory holding config, logs and nginx's body temp files
  // (client_body_temp_path is Dir() + "/body").
  const std::string& Dir() const { return dir_; }
  // Stops nginx (fast shutdown) and waits for it; the port then refuses connections.
  void Stop();
  // The error log, for failure messages.
  std::string ErrorLog() const;

 private:
  NginxServer() = default;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A free TCP port on 127.0.0.1 right now (bind to port 0 and close).
Result<int> FreeLoopbackPort();
// Whether something accepts connections on 127.0.0.1:port.
bool AcceptsConnections(int port);
// Waits (10 s at most) until the server just forked as `pid` accepts connections on
// 127.0.0.1:port: true then; false when it exited or did not listen in time (then it is
// killed), and the caller reads its log.
bool AwaitListening(pid_t pid, int port);

// Creates a fresh directory under $TMPDIR (or /tmp) named prefix-XXXXXX.
Result<std::string> MakeTempDir(const std::string& prefix);
// rm -rf, for test clean-up.
void RemoveTree(const std::string& path);

}  // namespace bm::testing
