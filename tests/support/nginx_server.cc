#include "tests/support/nginx_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/replace_all.h"

namespace bm::testing {
namespace {

constexpr const char* kDefaultTemplate = R"(worker_processes 1;
@USER@
pid @DIR@/nginx.pid;
error_log @DIR@/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path @DIR@/body;
  proxy_temp_path @DIR@/proxy;
  fastcgi_temp_path @DIR@/fastcgi;
  uwsgi_temp_path @DIR@/uwsgi;
  scgi_temp_path @DIR@/scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  map $http_authorization $bm_cache_authorized {
    default 0;
    "Bearer @TOKEN@" 1;
  }
  server {
    listen 127.0.0.1:@PORT@;
    root @ROOT@;
    location /cache/ {
      @AUTH@
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
      client_max_body_size 16g;
      client_body_buffer_size 1m;
      @EXTRA@
    }
  }
}
)";

std::string FindNginx() {
  for (const char* p : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

}  // namespace

bool AcceptsConnections(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

bool AwaitListening(pid_t pid, int port) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return false;
    if (AcceptsConnections(port)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return false;
}

Result<int> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Errorf(ErrorCode::kIo, "socket: {}", strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return Errorf(ErrorCode::kIo, "bind: {}", strerror(errno));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

Result<std::string> MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return Errorf(ErrorCode::kIo, "mkdtemp {}: {}", pattern, strerror(errno));
  }
  return pattern;
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

Result<std::unique_ptr<NginxServer>> NginxServer::Start(NginxOptions options) {
  std::string nginx = FindNginx();
  if (nginx.empty()) {
    return Status(ErrorCode::kUnsupported,
                  "nginx is not installed (scripts/bootstrap.sh test installs nginx-light)");
  }
  std::unique_ptr<NginxServer> server(new NginxServer());
  BM_ASSIGN_OR_RETURN(server->dir_, MakeTempDir("bm-nginx"));
  std::filesystem::create_directories(server->Root() + "/cache");
  std::string last_error;
  for (int attempt = 0; attempt < 5; ++attempt) {
    BM_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
    std::string config =
        options.config_template.empty() ? kDefaultTemplate : options.config_template;
    ReplaceAll(config, "@AUTH@",
               options.token.empty() ? "" : "if ($bm_cache_authorized = 0) { return 401; }");
    ReplaceAll(config, "@USER@", geteuid() == 0 ? "user root root;" : "");
    ReplaceAll(config, "@PORT@", std::to_string(port));
    ReplaceAll(config, "@ROOT@", server->Root());
    ReplaceAll(config, "@DIR@", server->dir_);
    ReplaceAll(config, "@TOKEN@", options.token.empty() ? "-" : options.token);
    ReplaceAll(config, "@EXTRA@", options.extra);
    std::string conf_path = server->dir_ + "/nginx.conf";
    std::ofstream(conf_path) << config;

    pid_t pid = fork();
    if (pid < 0) return Errorf(ErrorCode::kIo, "fork: {}", strerror(errno));
    if (pid == 0) {
      execl(nginx.c_str(), "nginx", "-p", server->dir_.c_str(), "-c", conf_path.c_str(), "-e",
            (server->dir_ + "/error.log").c_str(), "-g", "daemon off;",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    if (AwaitListening(pid, port)) {
      server->port_ = port;
      server->pid_ = pid;
      return server;
    }
    last_error = server->ErrorLog();
  }
  return Errorf(ErrorCode::kUnavailable, "nginx did not start: {}", last_error);
}

NginxServer::~NginxServer() {
  Stop();
  RemoveTree(dir_);
}

void NginxServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string NginxServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::string NginxServer::ErrorLog() const {
  std::ifstream in(dir_ + "/error.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace bm::testing
