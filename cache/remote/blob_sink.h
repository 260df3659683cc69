// BlobSink: where a value fetched from a remote lands — a file written as the
// bytes arrive, hashed on the way for CAS blobs (XXH3-128), so a multi-GB
// blob is verified without a second read. Bytes that do not match their
// digest never stay on disk under the destination name: Finish() deletes the
// file and returns kCorrupt; so does the destructor for an unfinished sink.
//
//   BlobSink sink(Namespace::kCas, key, dest);
//   BM_TRY(sink.Open());
//   ... sink.Write(p, n) for each piece ...
//   BM_TRY(sink.Finish());   // OK: dest holds exactly the blob
//
// Not thread-safe; one per transfer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/digest.h"
#include "base/result.h"
#include "cache/remote_backend.h"

namespace bm::cache {

class BlobSink {
 public:
  BlobSink(Namespace ns, const Digest& key, std::string dest_path);
  ~BlobSink();
  BlobSink(const BlobSink&) = delete;
  BlobSink& operator=(const BlobSink&) = delete;

  Status Open();  // creates or truncates dest_path
  Status Write(const char* data, size_t size);
  // Drops what was written so far (a retry from the start, a resumed transfer
  // that the server answered from byte 0).
  Status Restart();
  // Closes the file and, for CAS, checks the digest. kCorrupt: removed.
  Status Finish();
  // Removes the file (after a failed transfer).
  void Discard();

  uint64_t bytes() const { return bytes_; }

 private:
  Namespace ns_;
  Digest key_;
  std::string path_;
  int fd_ = -1;
  bool finished_ = false;
  uint64_t bytes_ = 0;
  std::unique_ptr<Hasher> hasher_;
};

}  // namespace bm::cache
