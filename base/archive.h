// Archives and compressed files: the only file of benchmake that sees zlib,
// libzstd and libarchive.
//
// Unpack formats (the download rule's `unpack`):
//   "gz"      one gzip stream (or several, concatenated) → one file
//   "zst"     one zstd stream (or several) → one file
//   "xz"      one xz stream (or several) → one file
//   "tar"     a tar archive → its files under a directory
//   "tar.gz"  "tar.zst"  "tar.xz"  the same, compressed
// Archive members with absolute paths or ".." components, and links that
// point outside the destination, are refused (kCorrupt) before anything is
// written for them; device files and FIFOs are refused too.
// Zip entries (for .npz) are read into memory and written stored.
//
// Thread safety: reentrant functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace bm {

bool IsUnpackFormat(std::string_view format);

// Decompresses a "gz", "zst" or "xz" file into dest_file. Errors: kCorrupt
// (bad or truncated stream), kIo, kNotFound.
Status DecompressFile(const std::string& source, std::string_view format,
                      const std::string& dest_file);

// Extracts a "tar", "tar.gz", "tar.zst" or "tar.xz" archive into dest_dir
// (which must exist). Errors: kCorrupt (bad archive or unsafe member), kIo.
Status ExtractArchive(const std::string& source, std::string_view format,
                      const std::string& dest_dir);

// True when `path` names a compressed file or an archive ForEachMember reads:
// it ends in .gz, .zst, .xz or .tar.
bool IsCompressedOrArchive(std::string_view path);

// Reads a compressed file or a tar archive member by member, in archive
// order, without writing anything: f(member name, bytes) for each regular
// file. The compression (gzip, zstd, xz or none) and whether a tar lies inside
// are found from the bytes, as `tar xf` does — OpenWebText's
// urlsf_subset*_data.xz files are tars of .txt files compressed with xz, with
// no ".tar" in their names. A compressed file that holds no tar is one member
// named after the file without its directory and compression suffix.
// Directories are skipped; links and special files are refused. An error of f
// stops the reading and is returned. Errors: kNotFound, kCorrupt (bad or
// truncated data, a refused member).
Status ForEachMember(const std::string& path,
                     const std::function<Status(const std::string& name, std::string bytes)>& f);

// The entries of a zip file, by name. Errors: kNotFound, kCorrupt.
Result<std::map<std::string, std::string>> ReadZipEntries(const std::string& path);
// Writes a zip of stored (uncompressed) entries, as np.savez does.
Status WriteStoredZip(const std::string& path, const std::map<std::string, std::string>& entries);

}  // namespace bm
