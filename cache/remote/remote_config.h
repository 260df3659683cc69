// RemoteConfig: which remote cache a workspace uses and how, from the
// BENCHFILE's [benchmake.cache] table and the environment, and OpenRemote(),
// which turns it into a RemoteBackend through the registry (by URL scheme).
//
// BENCHFILE.toml:
//   [benchmake.cache]
//   remote          = "http://cache.lan:8080/bm"  # http(s)://host[:port]/prefix or file:///path
//   remote_write    = false                       # read-only client (default true)
//   token_env       = "BENCHMAKE_CACHE_TOKEN"     # variable holding a bearer token
//   ca_file         = "/etc/ssl/lab-ca.pem"       # TLS: CA to verify the server
//   client_cert     = "/etc/bm/client.pem"        # TLS: client certificate ...
//   client_key      = "/etc/bm/client.key"        # ... and its key
//   signing_key_env = "BENCHMAKE_CACHE_KEY"       # HMAC key for action records
//   remote_timeout  = 30                          # seconds: connect, and stall
//   remote_parallel = 16                          # transfers at once (pull/push)
//
// Environment: BENCHMAKE_REMOTE_CACHE overrides the table, in ccache's style:
//   BENCHMAKE_REMOTE_CACHE="http://cache.lan:8080/bm|remote_write=false|token_env=TOK"
// the URL, then `|key=value` settings with the names above. An empty value
// ("" or "off") turns the remote off.
//
// Thread safety: values only.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"
#include "cache/remote_backend.h"

namespace bm::cache {

struct RemoteConfig {
  std::string url;  // empty: no remote
  bool write = true;
  std::string token_env;
  std::string ca_file;
  std::string client_cert;
  std::string client_key;
  std::string signing_key_env;
  double timeout_seconds = 30;
  int parallel = 16;

  bool enabled() const { return !url.empty(); }
};

// Sets one [benchmake.cache] key. kInvalidArgument for an unknown key (naming
// the nearest one) or a value of the wrong type. Keys the local cache owns
// (e.g. "dir") are not ours: IsRemoteSetting() says which keys to pass here.
Status ApplyRemoteSetting(RemoteConfig& config, std::string_view key, const nlohmann::json& value);
bool IsRemoteSetting(std::string_view key);

// The settings as a JSON object with the names above (what .benchmake/config.json
// keeps for the steps), and back.
nlohmann::json RemoteConfigToJson(const RemoteConfig& config);
Result<RemoteConfig> RemoteConfigFromJson(const nlohmann::json& json);

// Applies a BENCHMAKE_REMOTE_CACHE value on top of `config`.
Status ApplyRemoteSpec(RemoteConfig& config, std::string_view spec);
// Applies $BENCHMAKE_REMOTE_CACHE when it is set.
Status ApplyRemoteEnvironment(RemoteConfig& config);

// The backend for `config.url` (the registry picks it by scheme), wrapped so
// that action records are signed / verified (SignedRemote). Reads the token and
// the signing key from the environment: kInvalidArgument when a named
// variable is unset or empty.
Result<std::unique_ptr<RemoteBackend>> OpenRemote(const RemoteConfig& config,
                                                  const RemoteRegistry& registry);

// Registers "http", "https" (HttpRemote) and "file" (FileRemote).
void RegisterRemoteBackends(RemoteRegistry& registry);

// The URL without credentials ("http://user:pw@h/x" -> "http://h/x"), for messages.
std::string RedactUrl(std::string_view url);

}  // namespace bm::cache
