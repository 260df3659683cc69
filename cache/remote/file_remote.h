// FileRemote: a remote cache in a directory on a shared filesystem (NFS, a
// mounted volume), for URLs file:///path (percent-escapes decoded:
// file:///mnt/team%20cache is "/mnt/team cache"). Same layout as HttpRemote:
//
//   <root>/cas/<hex32>   blobs      <root>/ac/<hex32>   action records
//
// Put writes <root>/<ns>/.tmp-<hex32>-<random>, fsyncs it and renames it into
// place, so a reader (or a crash) never sees a partial value under its key.
// Get copies into dest_path while hashing CAS blobs; a mismatch is kCorrupt and
// leaves nothing at dest_path. The directory is created on first Put; a root
// that does not exist makes Get/Exists answer "missing", and Put fail.
//
// Thread safety: all calls may run concurrently.
#pragma once

#include <string>

#include "cache/remote_backend.h"

namespace bm::cache {

class FileRemote : public RemoteBackend {
 public:
  // url: file:///absolute/path (file://localhost/path also accepted).
  static Result<std::unique_ptr<FileRemote>> Create(const std::string& url);

  std::string url() const override { return "file://" + root_; }
  Result<bool> Get(Namespace ns, const Digest& key, const std::string& dest_path) override;
  Status Put(Namespace ns, const Digest& key, const std::string& src_path) override;
  Result<bool> Exists(Namespace ns, const Digest& key) override;

  std::string PathOf(Namespace ns, const Digest& key) const;

 private:
  explicit FileRemote(std::string root) : root_(std::move(root)) {}
  std::string root_;
};

}  // namespace bm::cache
