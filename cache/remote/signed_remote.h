// SignedRemote: authenticity for action records on a shared remote. A remote
// cache's CAS is self-verifying (a blob's key is its content digest), but an
// action record maps an action key to output digests, and anyone who can PUT
// can map a key to any outputs. With a signing key, records are wrapped in an
// HMAC-SHA256 envelope on Put and refused on Get unless the envelope verifies:
//
//   envelope := "benchmake-signed 1\n" "hmac-sha256 " hex64 "\n" record
//   hex64    := HMAC-SHA256(key, "ac/" hex32(action key) "\n" record)
//
// The action key is inside the MAC, so a valid record cannot be replayed under
// another key. The local cache keeps plain records (it trusts its own disk).
//
// Without a key (empty), Put stores plain records and Get strips an envelope
// if present without checking it, so unsigned clients can read a signed cache.
// With a key, Get of an unsigned, forged, or other-key record returns kCorrupt
// ("rejected: ...") and leaves nothing at dest_path. CAS calls pass through.
//
// Thread safety: as the wrapped backend.
#pragma once

#include <memory>
#include <string>

#include "cache/remote_backend.h"

namespace bm::cache {

class SignedRemote : public RemoteBackend {
 public:
  SignedRemote(std::unique_ptr<RemoteBackend> inner, std::string key);

  std::string url() const override { return inner_->url(); }
  Result<bool> Get(Namespace ns, const Digest& key, const std::string& dest_path) override;
  Status Put(Namespace ns, const Digest& key, const std::string& src_path) override;
  Result<bool> Exists(Namespace ns, const Digest& key) override;
  std::vector<Result<bool>> GetMany(const std::vector<RemoteFetch>& fetches,
                                    int max_parallel) override;
  std::vector<Status> PutMany(const std::vector<RemotePush>& pushes, int max_parallel) override;

  RemoteBackend& inner() { return *inner_; }

 private:
  std::unique_ptr<RemoteBackend> inner_;
  std::string key_;
};

// The envelope of `record` for action key `key_hex`, signed with `secret`.
std::string SignRecord(const std::string& secret, const std::string& key_hex,
                       std::string_view record);
// The record inside `envelope` when it verifies with `secret`; kCorrupt when
// the bytes are not an envelope or the MAC does not match.
Result<std::string> VerifyRecord(const std::string& secret, const std::string& key_hex,
                                 std::string_view envelope);
// The record inside an envelope without checking it; plain bytes unchanged.
std::string StripEnvelope(std::string_view bytes);

}  // namespace bm::cache
