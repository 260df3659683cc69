#include "cache/remote/signed_remote.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace bm::cache {
namespace {

constexpr std::string_view kMagic = "benchmake-signed 1\n";
constexpr std::string_view kMacTag = "hmac-sha256 ";
constexpr size_t kMacHex = 64;

std::string Mac(const std::string& secret, const std::string& key_hex, std::string_view record) {
  std::string message = "ac/" + key_hex + "\n";
  message.append(record);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), out, &len);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", out[i]);
  return hex;
}

Result<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errorf(ErrorCode::kIo, "reading {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteAll(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Errorf(ErrorCode::kIo, "writing {}", path);
  return Status::Ok();
}

std::string TempPath(const std::string& near) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{}.envelope-{:016x}", near, rng());
}

}  // namespace

std::string SignRecord(const std::string& secret, const std::string& key_hex,
                       std::string_view record) {
  std::string out(kMagic);
  out += kMacTag;
  out += Mac(secret, key_hex, record);
  out += "\n";
  out.append(record);
  return out;
}

Result<std::string> VerifyRecord(const std::string& secret, const std::string& key_hex,
                                 std::string_view envelope) {
  size_t header = kMagic.size() + kMacTag.size() + kMacHex + 1;
  if (envelope.substr(0, kMagic.size()) != kMagic) {
    return Errorf(ErrorCode::kCorrupt, "rejected: action record {} is not signed", key_hex);
  }
  if (envelope.size() < header || envelope.substr(kMagic.size(), kMacTag.size()) != kMacTag ||
      envelope[header - 1] != '\n') {
    return Errorf(ErrorCode::kCorrupt, "rejected: action record {} has a malformed signature",
                  key_hex);
  }
  std::string_view given = envelope.substr(kMagic.size() + kMacTag.size(), kMacHex);
  std::string_view record = envelope.substr(header);
  std::string expected = Mac(secret, key_hex, record);
  if (CRYPTO_memcmp(given.data(), expected.data(), kMacHex) != 0) {
    return Errorf(ErrorCode::kCorrupt,
                  "rejected: action record {} has a signature that does not verify (forged, "
                  "or signed with another key)",
                  key_hex);
  }
  return std::string(record);
}

std::string StripEnvelope(std::string_view bytes) {
  size_t header = kMagic.size() + kMacTag.size() + kMacHex + 1;
  if (bytes.substr(0, kMagic.size()) != kMagic || bytes.size() < header) return std::string(bytes);
  return std::string(bytes.substr(header));
}

SignedRemote::SignedRemote(std::unique_ptr<RemoteBackend> inner, std::string key)
    : inner_(std::move(inner)), key_(std::move(key)) {}

Result<bool> SignedRemote::Get(Namespace ns, const Digest& key, const std::string& dest_path) {
  if (ns != Namespace::kAc) return inner_->Get(ns, key, dest_path);
  BM_ASSIGN_OR_RETURN(bool found, inner_->Get(ns, key, dest_path));
  if (!found) return false;
  Result<std::string> bytes = ReadAll(dest_path);
  Result<std::string> record = bytes;
  if (bytes.ok()) {
    record = key_.empty() ? Result<std::string>(StripEnvelope(*bytes))
                          : VerifyRecord(key_, key.Hex(), *bytes);
  }
  if (record.ok()) {
    Status s = WriteAll(dest_path, *record);
    if (s.ok()) return true;
    record = s;
  }
  std::remove(dest_path.c_str());
  return record.status();
}

Status SignedRemote::Put(Namespace ns, const Digest& key, const std::string& src_path) {
  if (ns != Namespace::kAc || key_.empty()) return inner_->Put(ns, key, src_path);
  BM_ASSIGN_OR_RETURN(std::string record, ReadAll(src_path));
  std::string tmp = TempPath(std::filesystem::temp_directory_path() / "bm-record");
  BM_TRY(WriteAll(tmp, SignRecord(key_, key.Hex(), record)));
  Status s = inner_->Put(ns, key, tmp);
  std::remove(tmp.c_str());
  return s;
}

Result<bool> SignedRemote::Exists(Namespace ns, const Digest& key) {
  return inner_->Exists(ns, key);
}

std::vector<Result<bool>> SignedRemote::GetMany(const std::vector<RemoteFetch>& fetches,
                                                int max_parallel) {
  bool any_ac = false;
  for (const RemoteFetch& f : fetches) any_ac |= f.ns == Namespace::kAc;
  if (!any_ac) return inner_->GetMany(fetches, max_parallel);
  std::vector<Result<bool>> results;
  for (const RemoteFetch& f : fetches) results.push_back(Get(f.ns, f.key, f.dest_path));
  return results;
}

std::vector<Status> SignedRemote::PutMany(const std::vector<RemotePush>& pushes, int max_parallel) {
  bool any_ac = false;
  for (const RemotePush& p : pushes) any_ac |= p.ns == Namespace::kAc;
  if (!any_ac || key_.empty()) return inner_->PutMany(pushes, max_parallel);
  std::vector<Status> results;
  for (const RemotePush& p : pushes) results.push_back(Put(p.ns, p.key, p.src_path));
  return results;
}

}  // namespace bm::cache
