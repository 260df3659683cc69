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

#include "base/digest.h"
#include "base/result.h"

namespace bm::cache {

enum class Namespace { kCas, kAc };
std::string_view NamespaceName(Namespace ns);  // "cas" / "ac"

class RemoteBackend {
 public:
  virtual ~RemoteBackend() = default;

  virtual std::string url() const = 0;  // for messages; credentials stripped

  // Writes the value to dest_path (created or replaced). false: not present.
  virtual Result<bool> Get(Namespace ns, const Digest& key, const std::string& dest_path) = 0;
  // Stores the bytes of src_path under key.
  virtual Status Put(Namespace ns, const Digest& key, const std::string& src_path) = 0;
  virtual Result<bool> Exists(Namespace ns, const Digest& key) = 0;
};

struct RemoteOptions {
  double timeout_seconds = 30;
  bool read_only = false;
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
