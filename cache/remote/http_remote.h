// HttpRemote: a remote cache on any HTTP server that answers GET, HEAD and PUT
// (nginx with WebDAV PUT, bazel-remote, an object store behind a proxy), the
// layout of Bazel's HTTP cache protocol:
//
//   GET|HEAD|PUT  <base>/cas/<hex32>   blobs by XXH3-128 content digest
//   GET|HEAD|PUT  <base>/ac/<hex32>    action records by action key
//
// `base` is the configured URL (http://host:port/prefix, or https://). Keys are
// Digest values printed as 32 hex digits, so no request can name a path outside
// the prefix. Values stream to and from files: multi-GB blobs never sit in
// memory. A CAS blob is hashed while it downloads; bytes that do not match the
// digest are deleted before Get returns kCorrupt, so they are never
// materialized. Only base/http_client sees libcurl.
//
// Errors follow RemoteBackend: a missing key is Get/Exists == false; anything
// else is a failed Status, kTimeout when the server was too slow.
//
// Thread safety: all calls may run concurrently (a pool of http::Clients, each
// keeping its connections alive).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/http_client.h"
#include "cache/remote_backend.h"

namespace bm::cache {

class HttpRemote : public RemoteBackend {
 public:
  // base_url: http(s)://host[:port][/prefix], no trailing slash needed.
  HttpRemote(std::string base_url, http::ClientOptions options);

  // The base URL with any user:password@ removed, for messages.
  std::string url() const override;
  Result<bool> Get(Namespace ns, const Digest& key, const std::string& dest_path) override;
  Status Put(Namespace ns, const Digest& key, const std::string& src_path) override;
  Result<bool> Exists(Namespace ns, const Digest& key) override;
  std::vector<Result<bool>> GetMany(const std::vector<RemoteFetch>& fetches,
                                    int max_parallel) override;
  std::vector<Status> PutMany(const std::vector<RemotePush>& pushes, int max_parallel) override;

  // <base>/<ns>/<hex>.
  std::string KeyUrl(Namespace ns, const Digest& key) const;

 private:
  // A client from the pool (or a new one); give it back with Release.
  std::unique_ptr<http::Client> Acquire();
  void Release(std::unique_ptr<http::Client> client);

  std::string base_url_;
  http::ClientOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<http::Client>> idle_;  // guarded by mu_
};

}  // namespace bm::cache
