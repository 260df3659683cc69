#include "cache/remote_backend.h"

namespace bm::cache {

std::string_view NamespaceName(Namespace ns) { return ns == Namespace::kCas ? "cas" : "ac"; }

RemoteRegistry& RemoteRegistry::Global() {
  static RemoteRegistry registry;
  return registry;
}

void RemoteRegistry::Register(const std::string& scheme, RemoteFactory factory) {
  factories_[scheme] = std::move(factory);
}

Result<std::unique_ptr<RemoteBackend>> RemoteRegistry::Create(const std::string& url,
                                                              const RemoteOptions& options) const {
  size_t colon = url.find("://");
  if (colon == std::string::npos) {
    return Errorf(ErrorCode::kInvalidArgument, "remote cache URL '{}' has no scheme (http://...)",
                  url);
  }
  std::string scheme = url.substr(0, colon);
  auto it = factories_.find(scheme);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [s, f] : factories_) known += (known.empty() ? "" : ", ") + s;
    return Errorf(ErrorCode::kInvalidArgument, "unknown remote cache scheme '{}' (known: {})",
                  scheme, known.empty() ? "none" : known);
  }
  return it->second(url, options);
}

}  // namespace bm::cache
