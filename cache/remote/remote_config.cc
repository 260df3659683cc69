#include "cache/remote/remote_config.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "base/nearest_name.h"
#include "cache/remote/file_remote.h"
#include "cache/remote/http_remote.h"
#include "cache/remote/signed_remote.h"

namespace bm::cache {
namespace {

enum class Type { kString, kBool, kNumber, kInt };

struct Setting {
  std::string_view name;
  Type type;
};

constexpr Setting kSettings[] = {
    {"remote", Type::kString},          {"remote_write", Type::kBool},
    {"token_env", Type::kString},       {"ca_file", Type::kString},
    {"client_cert", Type::kString},     {"client_key", Type::kString},
    {"signing_key_env", Type::kString}, {"remote_timeout", Type::kNumber},
    {"remote_parallel", Type::kInt},
};

const Setting* Find(std::string_view key) {
  for (const Setting& s : kSettings) {
    if (s.name == key) return &s;
  }
  return nullptr;
}

// " (did you mean 'x'?)", else the list of every setting.
std::string Hint(std::string_view key) {
  std::vector<std::string> names;
  for (const Setting& s : kSettings) names.emplace_back(s.name);
  std::string near = DidYouMean(key, names);
  return near.empty() ? fmt::format(" (settings: {})", fmt::join(names, ", ")) : near;
}

std::string_view TypeName(Type t) {
  switch (t) {
    case Type::kString:
      return "a string";
    case Type::kBool:
      return "true or false";
    case Type::kNumber:
      return "a number";
    case Type::kInt:
      return "an integer";
  }
  return "?";
}

// A BENCHMAKE_REMOTE_CACHE value ("false", "30") as the JSON type its key takes.
Result<nlohmann::json> FromText(const Setting& s, const std::string& text) {
  switch (s.type) {
    case Type::kString:
      return nlohmann::json(text);
    case Type::kBool:
      if (text == "true" || text == "1" || text == "yes") return nlohmann::json(true);
      if (text == "false" || text == "0" || text == "no") return nlohmann::json(false);
      break;
    case Type::kNumber:
    case Type::kInt: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      bool number = !text.empty() && end != nullptr && *end == '\0' && std::isfinite(v) &&
                    std::fabs(v) < 1e15;  // "nan", "inf" and such are no setting's value
      if (number && (s.type == Type::kNumber || v == std::trunc(v))) {
        return s.type == Type::kInt ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v);
      }
      break;
    }
  }
  return Errorf(ErrorCode::kInvalidArgument, "{} must be {}, not '{}'", s.name, TypeName(s.type),
                text);
}

Result<std::string> FromEnv(const std::string& var, std::string_view what) {
  const char* v = std::getenv(var.c_str());
  if (v == nullptr || *v == '\0') {
    return Errorf(ErrorCode::kInvalidArgument,
                  "remote cache: {} names the environment variable {}, which is not set", what,
                  var);
  }
  return std::string(v);
}

}  // namespace

bool IsRemoteSetting(std::string_view key) { return Find(key) != nullptr; }

Status ApplyRemoteSetting(RemoteConfig& config, std::string_view key, const nlohmann::json& value) {
  const Setting* s = Find(key);
  if (s == nullptr) {
    return Errorf(ErrorCode::kInvalidArgument, "unknown remote cache setting '{}'{}", key,
                  Hint(key));
  }
  bool ok = (s->type == Type::kString && value.is_string()) ||
            (s->type == Type::kBool && value.is_boolean()) ||
            (s->type == Type::kNumber && value.is_number()) ||
            (s->type == Type::kInt && value.is_number_integer());
  if (!ok) {
    return Errorf(ErrorCode::kInvalidArgument, "{} must be {}, not {}", key, TypeName(s->type),
                  value.dump());
  }
  if (key == "remote") config.url = value.get<std::string>();
  if (key == "remote_write") config.write = value.get<bool>();
  if (key == "token_env") config.token_env = value.get<std::string>();
  if (key == "ca_file") config.ca_file = value.get<std::string>();
  if (key == "client_cert") config.client_cert = value.get<std::string>();
  if (key == "client_key") config.client_key = value.get<std::string>();
  if (key == "signing_key_env") config.signing_key_env = value.get<std::string>();
  if (key == "remote_timeout") {
    double t = value.get<double>();
    if (!(t > 0) || !std::isfinite(t)) {
      return Errorf(ErrorCode::kInvalidArgument, "remote_timeout must be a number of seconds > 0");
    }
    config.timeout_seconds = t;
  }
  if (key == "remote_parallel") {
    int64_t p = value.get<int64_t>();
    if (p < 1 || p > 256) {
      return Errorf(ErrorCode::kInvalidArgument, "remote_parallel must be 1..256, not {}", p);
    }
    config.parallel = static_cast<int>(p);
  }
  return Status::Ok();
}

nlohmann::json RemoteConfigToJson(const RemoteConfig& c) {
  return {{"remote", c.url},
          {"remote_write", c.write},
          {"token_env", c.token_env},
          {"ca_file", c.ca_file},
          {"client_cert", c.client_cert},
          {"client_key", c.client_key},
          {"signing_key_env", c.signing_key_env},
          {"remote_timeout", c.timeout_seconds},
          {"remote_parallel", c.parallel}};
}

Result<RemoteConfig> RemoteConfigFromJson(const nlohmann::json& json) {
  RemoteConfig c;
  if (!json.is_object()) return c;
  for (const auto& [key, value] : json.items()) BM_TRY(ApplyRemoteSetting(c, key, value));
  return c;
}

Status ApplyRemoteSpec(RemoteConfig& config, std::string_view spec) {
  if (spec.empty() || spec == "off") {
    config.url.clear();
    return Status::Ok();
  }
  size_t bar = spec.find('|');
  config.url = std::string(spec.substr(0, bar));
  while (bar != std::string_view::npos) {
    size_t next = spec.find('|', bar + 1);
    std::string_view item = spec.substr(
        bar + 1, next == std::string_view::npos ? std::string_view::npos : next - bar - 1);
    bar = next;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "BENCHMAKE_REMOTE_CACHE: '{}' is not key=value (URL|key=value|...)", item);
    }
    std::string_view key = item.substr(0, eq);
    if (key == "remote") {
      return Errorf(ErrorCode::kInvalidArgument, "BENCHMAKE_REMOTE_CACHE: the URL comes first");
    }
    const Setting* s = Find(key);
    if (s == nullptr) {
      return ApplyRemoteSetting(config, key, nullptr).WithContext("BENCHMAKE_REMOTE_CACHE");
    }
    Result<nlohmann::json> value = FromText(*s, std::string(item.substr(eq + 1)));
    if (!value.ok()) return value.status().WithContext("BENCHMAKE_REMOTE_CACHE");
    BM_TRY(ApplyRemoteSetting(config, key, *value).WithContext("BENCHMAKE_REMOTE_CACHE"));
  }
  return Status::Ok();
}

Status ApplyRemoteEnvironment(RemoteConfig& config) {
  const char* spec = std::getenv("BENCHMAKE_REMOTE_CACHE");
  if (spec == nullptr) return Status::Ok();
  return ApplyRemoteSpec(config, spec);
}

Result<std::unique_ptr<RemoteBackend>> OpenRemote(const RemoteConfig& config,
                                                  const RemoteRegistry& registry) {
  RemoteOptions options;
  options.timeout_seconds = config.timeout_seconds;
  options.read_only = !config.write;
  options.ca_file = config.ca_file;
  options.client_cert = config.client_cert;
  options.client_key = config.client_key;
  if (!config.token_env.empty()) {
    BM_ASSIGN_OR_RETURN(options.bearer_token, FromEnv(config.token_env, "token_env"));
  }
  std::string signing_key;
  if (!config.signing_key_env.empty()) {
    BM_ASSIGN_OR_RETURN(signing_key, FromEnv(config.signing_key_env, "signing_key_env"));
  }
  BM_ASSIGN_OR_RETURN(std::unique_ptr<RemoteBackend> backend, registry.Create(config.url, options));
  return std::unique_ptr<RemoteBackend>(
      std::make_unique<SignedRemote>(std::move(backend), std::move(signing_key)));
}

void RegisterRemoteBackends(RemoteRegistry& registry) {
  auto http = [](const std::string& url,
                 const RemoteOptions& o) -> Result<std::unique_ptr<RemoteBackend>> {
    http::ClientOptions c;
    c.bearer_token = o.bearer_token;
    c.ca_file = o.ca_file;
    c.client_cert = o.client_cert;
    c.client_key = o.client_key;
    c.connect_timeout_seconds = o.timeout_seconds;
    c.stall_seconds = o.timeout_seconds;
    c.stall_bytes_per_second = 1;
    return std::unique_ptr<RemoteBackend>(std::make_unique<HttpRemote>(url, std::move(c)));
  };
  registry.Register("http", http);
  registry.Register("https", http);
  registry.Register(
      "file",
      [](const std::string& url, const RemoteOptions&) -> Result<std::unique_ptr<RemoteBackend>> {
        BM_ASSIGN_OR_RETURN(std::unique_ptr<FileRemote> r, FileRemote::Create(url));
        return std::unique_ptr<RemoteBackend>(std::move(r));
      });
}

std::string RedactUrl(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  size_t host = scheme + 3;
  size_t slash = url.find('/', host);
  size_t at = url.substr(0, slash).find('@', host);
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, host)) + std::string(url.substr(at + 1));
}

}  // namespace bm::cache
