// RemoteBackend: what a remote cache (HTTP, ...) implements, and the registry
// that creates one from a URL by its scheme. The local cache (cache/cache.h)
// stays in front: a remote is asked only on a local miss, a remote hit is
// copied into the local cache, and a successful step is written to both.
//
// Three verbs, two ways to fail (STYLE §7): every call returns a Status whose
// code is kTimeout (the remote did not answer in time) or another error code
// (it answered badly or could not be reached). The Cache marks a failing remote
// dead for the rest of the process and counts the call as a miss: a remote
// never fails a build.
//
// Keys: `ns` picks the namespace (`cas/<hex>` for blobs, `ac/<hex>` for action
// records). Values travel as files so that multi-GB blobs never sit in memory.
//
// Thread safety: implementations must allow concurrent calls.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/digest.h"
#include "base/result.h"

namespace bm::cache {

enum class Namespace { kCas, kAc };
std::string_view NamespaceName(Namespace ns);  // "cas" / "ac"

// One value to fetch into dest_path, or to push from src_path (GetMany/PutMany).
struct RemoteFetch {
  Namespace ns = Namespace::kCas;
  Digest key;
  std::string dest_path;
};
struct RemotePush {
  Namespace ns = Namespace::kCas;
  Digest key;
  std::string src_path;
};

class RemoteBackend {
 public:
  virtual ~RemoteBackend() = default;

  virtual std::string url() const = 0;  // for messages; credentials stripped

  // Writes the value to dest_path (created or replaced). false: not present.
  virtual Result<bool> Get(Namespace ns, const Digest& key, const std::string& dest_path) = 0;
  // Stores the bytes of src_path under key.
  virtual Status Put(Namespace ns, const Digest& key, const std::string& src_path) = 0;
  virtual Result<bool> Exists(Namespace ns, const Digest& key) = 0;

  // Many transfers, up to max_parallel at once where the backend can; one
  // result per entry, in order, each as Get / Put would return it. The
  // defaults run them one at a time.
  virtual std::vector<Result<bool>> GetMany(const std::vector<RemoteFetch>& fetches,
                                            int max_parallel);
  virtual std::vector<Status> PutMany(const std::vector<RemotePush>& pushes, int max_parallel);
};

struct RemoteOptions {
  double timeout_seconds = 30;  // connect timeout, and stall timeout (no bytes moving)
  bool read_only = false;
  std::string bearer_token;  // the value, already read from token_env
  std::string ca_file;       // TLS: CA bundle to verify the server
  std::string client_cert;   // TLS: client certificate and key (PEM)
  std::string client_key;
};

using RemoteFactory = std::function<Result<std::unique_ptr<RemoteBackend>>(
    const std::string& url, const RemoteOptions& options)>;

// Remote backends by URL scheme ("http", "https", ...). Registration happens
// in main() (or a test) before any Create().
class RemoteRegistry {
 public:
  static RemoteRegistry& Global();
  void Register(const std::string& scheme, RemoteFactory factory);
  // kInvalidArgument for a URL without a scheme or with an unknown one.
  Result<std::unique_ptr<RemoteBackend>> Create(const std::string& url,
                                                const RemoteOptions& options) const;

 private:
  std::map<std::string, RemoteFactory> factories_;
};

}  // namespace bm::cache
