#include "cache/remote_backend.h"

namespace bm::cache {

std::string_view NamespaceName(Namespace ns) { return ns == Namespace::kCas ? "cas" : "ac"; }

std::vector<Result<bool>> RemoteBackend::GetMany(const std::vector<RemoteFetch>& fetches,
                                                 int /*max_parallel*/) {
  std::vector<Result<bool>> results;
  results.reserve(fetches.size());
  for (const RemoteFetch& f : fetches) results.push_back(Get(f.ns, f.key, f.dest_path));
  return results;
}

std::vector<Status> RemoteBackend::PutMany(const std::vector<RemotePush>& pushes,
                                           int /*max_parallel*/) {
  std::vector<Status> results;
  results.reserve(pushes.size());
  for (const RemotePush& p : pushes) results.push_back(Put(p.ns, p.key, p.src_path));
  return results;
}

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
