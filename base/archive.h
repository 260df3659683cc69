// Archives and compressed files: the only file of benchmake that sees zlib,
// libzstd and libarchive.
//
// Unpack formats (the download rule's `unpack`):
//   "gz"      one gzip stream (or several, concatenated) → one file
//   "zst"     one zstd stream (or several) → one file
//   "tar"     a tar archive → its files under a directory
//   "tar.gz"  "tar.zst"  the same, compressed
// Archive members with absolute paths or ".." components, and links that
// point outside the destination, are refused (kCorrupt) before anything is
// written for them; device files and FIFOs are refused too.
// Zip entries (for .npz) are read into memory and written stored.
//
// Thread safety: reentrant functions.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace bm {

bool IsUnpackFormat(std::string_view format);

// Decompresses a "gz" or "zst" file into dest_file. Errors: kCorrupt (bad or
// truncated stream), kIo, kNotFound.
Status DecompressFile(const std::string& source, std::string_view format,
                      const std::string& dest_file);

// Extracts a "tar", "tar.gz" or "tar.zst" archive into dest_dir (which must
// exist). Errors: kCorrupt (bad archive or unsafe member), kIo.
Status ExtractArchive(const std::string& source, std::string_view format,
                      const std::string& dest_dir);

// The entries of a zip file, by name. Errors: kNotFound, kCorrupt.
Result<std::map<std::string, std::string>> ReadZipEntries(const std::string& path);
// Writes a zip of stored (uncompressed) entries, as np.savez does.
Status WriteStoredZip(const std::string& path, const std::map<std::string, std::string>& entries);

}  // namespace bm
