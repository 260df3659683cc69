#include "tests/support/webdav_server.h"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/nginx_server.h"
#include "tests/support/replace_all.h"

namespace bm::testing {
namespace {

// Debian's apache2 with the modules `a2enmod dav_fs` loads, run in the foreground.
constexpr const char* kApacheConfig = R"(ServerRoot "@DIR@"
ServerName 127.0.0.1
Listen 127.0.0.1:@PORT@
PidFile "@DIR@/httpd.pid"
ErrorLog "@DIR@/error.log"
LogLevel warn
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dav_module /usr/lib/apache2/modules/mod_dav.so
LoadModule dav_fs_module /usr/lib/apache2/modules/mod_dav_fs.so
@USER@
DocumentRoot "@ROOT@"
DAVLockDB "@DIR@/lock/DAVLock"
<Directory "@ROOT@/bm">
  Dav On
  Require all granted
</Directory>
)";

// Debian's lighttpd with lighttpd-mod-webdav, run in the foreground.
constexpr const char* kLighttpdConfig = R"(server.document-root = "@ROOT@"
server.bind = "127.0.0.1"
server.port = @PORT@
server.errorlog = "@DIR@/error.log"
server.upload-dirs = ( "@DIR@/upload" )
server.modules += ( "mod_webdav" )
$HTTP["url"] =~ "^/bm/" {
  webdav.activate = "enable"
  webdav.is-readonly = "disable"
}
)";

struct Kind {
  const char* name;
  const char* program;
  const char* module;  // a file the configuration loads
  const char* config;
  const char* package;
};

Kind KindOf(WebDav kind) {
  if (kind == WebDav::kApache) {
    return {"apache2", "/usr/sbin/apache2", "/usr/lib/apache2/modules/mod_dav_fs.so", kApacheConfig,
            "apache2"};
  }
  return {"lighttpd", "/usr/sbin/lighttpd", "/usr/lib/lighttpd/mod_webdav.so", kLighttpdConfig,
          "lighttpd and lighttpd-mod-webdav"};
}

}  // namespace

Result<std::unique_ptr<WebDavServer>> WebDavServer::Start(WebDav kind) {
  Kind k = KindOf(kind);
  if (access(k.program, X_OK) != 0 || access(k.module, R_OK) != 0) {
    return Errorf(ErrorCode::kUnsupported,
                  "{} with WebDAV is not installed (scripts/bootstrap.sh test installs {})", k.name,
                  k.package);
  }
  std::unique_ptr<WebDavServer> server(new WebDavServer());
  BM_ASSIGN_OR_RETURN(server->dir_, MakeTempDir(std::string("bm-") + k.name));
  chmod(server->dir_.c_str(), 0755);  // the workers pass through it to the root
  server->uid_ = geteuid();
  server->gid_ = getegid();
  bool as_www_data = kind == WebDav::kApache && geteuid() == 0;
  if (as_www_data) {
    const passwd* pw = getpwnam("www-data");
    if (pw == nullptr) return Errorf(ErrorCode::kUnsupported, "no user www-data for apache2");
    server->uid_ = pw->pw_uid;
    server->gid_ = pw->pw_gid;
  }
  for (const char* sub : {"/root/bm", "/lock", "/upload"}) {
    std::filesystem::create_directories(server->dir_ + sub);
  }
  server->MakeDir("bm");
  if (chown((server->dir_ + "/lock").c_str(), server->uid_, server->gid_) != 0) {
    return Errorf(ErrorCode::kIo, "chown {}/lock: {}", server->dir_, strerror(errno));
  }
  std::string last_error;
  for (int attempt = 0; attempt < 5; ++attempt) {
    BM_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
    std::string config = k.config;
    ReplaceAll(config, "@USER@", as_www_data ? "User www-data\nGroup www-data" : "");
    ReplaceAll(config, "@PORT@", std::to_string(port));
    ReplaceAll(config, "@ROOT@", server->Root());
    ReplaceAll(config, "@DIR@", server->dir_);
    std::string conf_path = server->dir_ + "/server.conf";
    std::ofstream(conf_path) << config;
    pid_t pid = fork();
    if (pid < 0) return Errorf(ErrorCode::kIo, "fork: {}", strerror(errno));
    if (pid == 0) {
      if (kind == WebDav::kApache) {
        execl(k.program, k.name, "-f", conf_path.c_str(), "-DFOREGROUND",
              static_cast<char*>(nullptr));
      } else {
        execl(k.program, k.name, "-D", "-f", conf_path.c_str(), static_cast<char*>(nullptr));
      }
      _exit(127);
    }
    if (AwaitListening(pid, port)) {
      server->port_ = port;
      server->pid_ = pid;
      return server;
    }
    last_error = server->ErrorLog();
  }
  return Errorf(ErrorCode::kUnavailable, "{} did not start: {}", k.name, last_error);
}

WebDavServer::~WebDavServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  RemoveTree(dir_);
}

std::string WebDavServer::Url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void WebDavServer::MakeDir(const std::string& rel) const {
  std::filesystem::create_directories(Root() + "/" + rel);
  for (std::filesystem::path p = Root() + "/" + rel; p.string().size() >= Root().size();
       p = p.parent_path()) {
    (void)chown(p.c_str(), uid_, gid_);
  }
}

std::string WebDavServer::ErrorLog() const {
  std::ifstream in(dir_ + "/error.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace bm::testing
