#include "base/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace bm {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

struct ReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteFree {
  void operator()(archive* a) const { archive_write_free(a); }
};

std::string ArchiveError(archive* a) {
  const char* e = archive_error_string(a);
  return e != nullptr ? e : "unknown error";
}

// The extracting side's errors with the system's reason: libarchive says only
// "Write failed" when the disk is full.
std::string WriteError(archive* a) {
  std::string message = ArchiveError(a);
  const int err = archive_errno(a);
  if (err > 0 && message.find(std::strerror(err)) == std::string::npos) {
    message += fmt::format(" ({})", std::strerror(err));
  }
  return message;
}

Status Gunzip(std::FILE* in, std::FILE* out, const std::string& source) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Errorf(ErrorCode::kInternal, "inflateInit2");
  std::vector<unsigned char> ibuf(1 << 16), obuf(1 << 16);
  int ret = Z_OK;
  bool any = false;
  for (;;) {
    z.avail_in = static_cast<uInt>(std::fread(ibuf.data(), 1, ibuf.size(), in));
    if (z.avail_in == 0) break;
    any = true;
    z.next_in = ibuf.data();
    while (z.avail_in > 0) {
      z.next_out = obuf.data();
      z.avail_out = static_cast<uInt>(obuf.size());
      ret = inflate(&z, Z_NO_FLUSH);
      if (ret != Z_OK && ret != Z_STREAM_END) {
        inflateEnd(&z);
        return Errorf(ErrorCode::kCorrupt, "{}: not valid gzip data ({})", source,
                      z.msg != nullptr ? z.msg : "inflate failed");
      }
      const size_t n = obuf.size() - z.avail_out;
      if (std::fwrite(obuf.data(), 1, n, out) != n) {
        inflateEnd(&z);
        return Errorf(ErrorCode::kIo, "write failed: {}", std::strerror(errno));
      }
      if (ret == Z_STREAM_END) {
        if (z.avail_in == 0) break;
        inflateReset(&z);  // concatenated members
      }
    }
  }
  inflateEnd(&z);
  if (!any || ret != Z_STREAM_END) {
    return Errorf(ErrorCode::kCorrupt, "{}: truncated gzip data", source);
  }
  return Status::Ok();
}

Status Unzstd(std::FILE* in, std::FILE* out, const std::string& source) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<char> ibuf(ZSTD_DStreamInSize()), obuf(ZSTD_DStreamOutSize());
  size_t last = 1;
  bool any = false;
  for (size_t n; (n = std::fread(ibuf.data(), 1, ibuf.size(), in)) > 0;) {
    any = true;
    ZSTD_inBuffer input{ibuf.data(), n, 0};
    while (input.pos < input.size) {
      ZSTD_outBuffer output{obuf.data(), obuf.size(), 0};
      last = ZSTD_decompressStream(ctx.get(), &output, &input);
      if (ZSTD_isError(last)) {
        return Errorf(ErrorCode::kCorrupt, "{}: not valid zstd data ({})", source,
                      ZSTD_getErrorName(last));
      }
      if (std::fwrite(obuf.data(), 1, output.pos, out) != output.pos) {
        return Errorf(ErrorCode::kIo, "write failed: {}", std::strerror(errno));
      }
    }
  }
  if (!any || last != 0) return Errorf(ErrorCode::kCorrupt, "{}: truncated zstd data", source);
  return Status::Ok();
}

// libarchive's xz filter over its "raw" format: the file's one stream.
Status Unxz(const std::string& source, std::FILE* out) {
  std::unique_ptr<archive, ReadFree> in(archive_read_new());
  archive_read_support_filter_xz(in.get());
  archive_read_support_format_raw(in.get());
  archive_entry* entry = nullptr;
  if (archive_read_open_filename(in.get(), source.c_str(), 1 << 16) != ARCHIVE_OK ||
      archive_read_next_header(in.get(), &entry) != ARCHIVE_OK) {
    return Errorf(ErrorCode::kCorrupt, "{}: not valid xz data ({})", source,
                  ArchiveError(in.get()));
  }
  if (archive_filter_code(in.get(), 0) != ARCHIVE_FILTER_XZ)
    return Errorf(ErrorCode::kCorrupt, "{}: not valid xz data (no xz header)", source);
  char buf[1 << 16];
  for (la_ssize_t n; (n = archive_read_data(in.get(), buf, sizeof buf)) != 0;) {
    if (n < 0) {
      return Errorf(ErrorCode::kCorrupt, "{}: truncated or bad xz data ({})", source,
                    ArchiveError(in.get()));
    }
    if (std::fwrite(buf, 1, static_cast<size_t>(n), out) != static_cast<size_t>(n))
      return Errorf(ErrorCode::kIo, "write failed: {}", std::strerror(errno));
  }
  return Status::Ok();
}

// The file name without its directory and compression suffix.
std::string StrippedName(std::string_view path) {
  std::string_view name =
      path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  for (std::string_view suffix : {".gz", ".zst", ".xz"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.remove_suffix(suffix.size());
      break;
    }
  }
  return std::string(name);
}

bool IsSafeMemberPath(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (path.substr(start, end - start) == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

bool IsUnpackFormat(std::string_view format) {
  return format == "gz" || format == "zst" || format == "xz" || format == "tar" ||
         format == "tar.gz" || format == "tar.zst" || format == "tar.xz";
}

Status DecompressFile(const std::string& source, std::string_view format,
                      const std::string& dest_file) {
  File in(std::fopen(source.c_str(), "rb"));
  if (!in) return ErrnoStatus("cannot open", source);
  File out(std::fopen(dest_file.c_str(), "wb"));
  if (!out) return ErrnoStatus("cannot create", dest_file);
  Status st = format == "gz"    ? Gunzip(in.get(), out.get(), source)
              : format == "zst" ? Unzstd(in.get(), out.get(), source)
              : format == "xz"  ? Unxz(source, out.get())
                                : Errorf(ErrorCode::kInvalidArgument,
                                         "unknown compression '{}' (gz, zst, xz)", format);
  if (st.code() == ErrorCode::kIo) st = st.WithContext(dest_file);  // "write failed: ..."
  if (st.ok() && std::fflush(out.get()) != 0) st = ErrnoStatus("cannot write", dest_file);
  return st;
}

Status ExtractArchive(const std::string& source, std::string_view format,
                      const std::string& dest_dir) {
  if (format != "tar" && format != "tar.gz" && format != "tar.zst" && format != "tar.xz") {
    return Errorf(ErrorCode::kInvalidArgument, "unknown archive format '{}'", format);
  }
  std::unique_ptr<archive, ReadFree> in(archive_read_new());
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  if (format == "tar.gz") archive_read_support_filter_gzip(in.get());
  if (format == "tar.zst") archive_read_support_filter_zstd(in.get());
  if (format == "tar.xz") archive_read_support_filter_xz(in.get());
  if (archive_read_open_filename(in.get(), source.c_str(), 1 << 16) != ARCHIVE_OK) {
    return Errorf(ErrorCode::kCorrupt, "{}: not a {} archive: {}", source, format,
                  ArchiveError(in.get()));
  }
  std::unique_ptr<archive, WriteFree> out(archive_write_disk_new());
  // Member names are checked above and then prefixed with dest_dir, so the
  // absolute-path guard cannot be used; ".." and symlink guards stay on.
  archive_write_disk_set_options(out.get(), ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                ARCHIVE_EXTRACT_SECURE_SYMLINKS);
  archive_entry* entry = nullptr;
  int r;
  size_t members = 0;
  while ((r = archive_read_next_header(in.get(), &entry)) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(entry);
    const auto type = archive_entry_filetype(entry);
    if (!IsSafeMemberPath(name) || (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)) {
      return Errorf(ErrorCode::kCorrupt, "{}: refusing member '{}' (unsafe path or type)", source,
                    name);
    }
    if (type == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      if (target == nullptr || !IsSafeMemberPath(target)) {
        return Errorf(ErrorCode::kCorrupt, "{}: refusing link '{}' pointing outside", source, name);
      }
    }
    const char* hardlink = archive_entry_hardlink(entry);
    if (hardlink != nullptr) {
      if (!IsSafeMemberPath(hardlink)) {
        return Errorf(ErrorCode::kCorrupt, "{}: refusing hard link '{}'", source, name);
      }
      archive_entry_set_hardlink(entry, (dest_dir + "/" + hardlink).c_str());
    }
    archive_entry_set_pathname(entry, (dest_dir + "/" + name).c_str());
    if (archive_write_header(out.get(), entry) != ARCHIVE_OK) {
      return Errorf(ErrorCode::kIo, "{}: cannot extract '{}': {}", source, name,
                    WriteError(out.get()));
    }
    const void* buf;
    size_t size;
    la_int64_t offset;
    int d;
    while ((d = archive_read_data_block(in.get(), &buf, &size, &offset)) == ARCHIVE_OK) {
      if (archive_write_data_block(out.get(), buf, size, offset) != ARCHIVE_OK) {
        return Errorf(ErrorCode::kIo, "{}: cannot write '{}': {}", source, name,
                      WriteError(out.get()));
      }
    }
    if (d != ARCHIVE_EOF) {
      return Errorf(ErrorCode::kCorrupt, "{}: member '{}' is truncated: {}", source, name,
                    ArchiveError(in.get()));
    }
    if (archive_write_finish_entry(out.get()) != ARCHIVE_OK) {
      return Errorf(ErrorCode::kIo, "{}: '{}': {}", source, name, WriteError(out.get()));
    }
    ++members;
  }
  if (r != ARCHIVE_EOF) {
    return Errorf(ErrorCode::kCorrupt, "{}: bad {} archive: {}", source, format,
                  ArchiveError(in.get()));
  }
  if (members == 0)
    return Errorf(ErrorCode::kCorrupt, "{}: empty or not a {} archive", source, format);
  return Status::Ok();
}

bool IsCompressedOrArchive(std::string_view path) {
  return path.ends_with(".gz") || path.ends_with(".zst") || path.ends_with(".xz") ||
         path.ends_with(".tar");
}

Status ForEachMember(const std::string& path,
                     const std::function<Status(const std::string& name, std::string bytes)>& f) {
  std::unique_ptr<archive, ReadFree> in(archive_read_new());
  archive_read_support_filter_gzip(in.get());
  archive_read_support_filter_zstd(in.get());
  archive_read_support_filter_xz(in.get());
  archive_read_support_format_tar(in.get());
  archive_read_support_format_gnutar(in.get());
  // Bids below every real format: what is not a tar is one stream.
  archive_read_support_format_raw(in.get());
  if (archive_read_open_filename(in.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const bool missing = archive_errno(in.get()) == ENOENT;
    return Errorf(missing ? ErrorCode::kNotFound : ErrorCode::kCorrupt, "cannot read {}: {}", path,
                  ArchiveError(in.get()));
  }
  archive_entry* entry = nullptr;
  int r;
  while ((r = archive_read_next_header(in.get(), &entry)) == ARCHIVE_OK) {
    const bool raw = archive_format(in.get()) == ARCHIVE_FORMAT_RAW;
    const std::string name = raw ? StrippedName(path) : archive_entry_pathname(entry);
    const auto type = archive_entry_filetype(entry);
    if (type == AE_IFDIR) continue;
    if (!raw && (type != AE_IFREG || archive_entry_hardlink(entry) != nullptr)) {
      return Errorf(ErrorCode::kCorrupt, "{}: member '{}' is not a regular file", path, name);
    }
    std::string bytes;
    char buf[1 << 16];
    for (la_ssize_t n; (n = archive_read_data(in.get(), buf, sizeof buf)) != 0;) {
      if (n < 0) {
        return Errorf(ErrorCode::kCorrupt, "{}: member '{}' is truncated or bad: {}", path, name,
                      ArchiveError(in.get()));
      }
      bytes.append(buf, static_cast<size_t>(n));
    }
    BM_TRY(f(name, std::move(bytes)));
  }
  if (r != ARCHIVE_EOF) {
    return Errorf(ErrorCode::kCorrupt, "{}: bad archive: {}", path, ArchiveError(in.get()));
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> ReadZipEntries(const std::string& path) {
  std::unique_ptr<archive, ReadFree> ar(archive_read_new());
  archive_read_support_format_zip(ar.get());
  if (archive_read_open_filename(ar.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const bool missing = archive_errno(ar.get()) == ENOENT;
    return Errorf(missing ? ErrorCode::kNotFound : ErrorCode::kCorrupt, "cannot open {}: {}", path,
                  ArchiveError(ar.get()));
  }
  std::map<std::string, std::string> entries;
  archive_entry* entry = nullptr;
  int r;
  while ((r = archive_read_next_header(ar.get(), &entry)) == ARCHIVE_OK) {
    const std::string name = archive_entry_pathname(entry);
    std::string bytes;
    char buf[1 << 16];
    for (la_ssize_t n; (n = archive_read_data(ar.get(), buf, sizeof buf)) != 0;) {
      if (n < 0) {
        return Errorf(ErrorCode::kCorrupt, "{}: entry {}: {}", path, name, ArchiveError(ar.get()));
      }
      bytes.append(buf, static_cast<size_t>(n));
    }
    entries.emplace(name, std::move(bytes));
  }
  if (r != ARCHIVE_EOF) {
    return Errorf(ErrorCode::kCorrupt, "{}: not a valid zip file: {}", path,
                  ArchiveError(ar.get()));
  }
  return entries;
}

Status WriteStoredZip(const std::string& path, const std::map<std::string, std::string>& entries) {
  std::unique_ptr<archive, WriteFree> ar(archive_write_new());
  archive_write_set_format_zip(ar.get());
  archive_write_zip_set_compression_store(ar.get());
  if (archive_write_open_filename(ar.get(), path.c_str()) != ARCHIVE_OK) {
    return Errorf(ErrorCode::kIo, "cannot create {}: {}", path, ArchiveError(ar.get()));
  }
  for (const auto& [name, bytes] : entries) {
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(),
                                                               archive_entry_free);
    archive_entry_set_pathname(e.get(), name.c_str());
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    if (archive_write_header(ar.get(), e.get()) != ARCHIVE_OK ||
        archive_write_data(ar.get(), bytes.data(), bytes.size()) !=
            static_cast<la_ssize_t>(bytes.size())) {
      return Errorf(ErrorCode::kIo, "cannot write {}: {}", path, ArchiveError(ar.get()));
    }
  }
  if (archive_write_close(ar.get()) != ARCHIVE_OK) {
    return Errorf(ErrorCode::kIo, "cannot write {}: {}", path, ArchiveError(ar.get()));
  }
  return Status::Ok();
}

}  // namespace bm
