// Sha256: streaming SHA-256 (FIPS 180-4) for download checksums, the only
// file of benchmake that sees OpenSSL's digests.
//
//   Sha256 h; h.Update(data, n); std::string hex = h.FinishHex();
//
// Thread safety: one thread per object.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace bm {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view bytes) { Update(bytes.data(), bytes.size()); }
  // 64 lowercase hex digits. Call once.
  std::string FinishHex();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string Sha256Hex(std::string_view bytes);
// The SHA-256 of a file's bytes. Errors: kNotFound, kIo.
Result<std::string> Sha256OfFile(const std::string& path);

}  // namespace bm
