// .npz through libarchive: the only file that sees it for zip archives.
#include <archive.h>
#include <archive_entry.h>

#include <memory>

#include "base/formats/npy.h"

namespace bm::formats {
namespace {

struct ReadCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
struct WriteCloser {
  void operator()(archive* a) const { archive_write_free(a); }
};

}  // namespace

Result<std::map<std::string, NpyArray>> ReadNpz(const std::string& path) {
  std::unique_ptr<archive, ReadCloser> ar(archive_read_new());
  archive_read_support_format_zip(ar.get());
  archive_read_support_filter_none(ar.get());
  if (archive_read_open_filename(ar.get(), path.c_str(), 1 << 16) != ARCHIVE_OK) {
    const bool missing = archive_errno(ar.get()) == ENOENT;
    return Errorf(missing ? ErrorCode::kNotFound : ErrorCode::kCorrupt, "cannot open {}: {}", path,
                  archive_error_string(ar.get()) ? archive_error_string(ar.get()) : "?");
  }
  std::map<std::string, NpyArray> arrays;
  archive_entry* entry = nullptr;
  int r;
  while ((r = archive_read_next_header(ar.get(), &entry)) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(entry);
    std::string bytes;
    char buf[1 << 16];
    for (la_ssize_t n; (n = archive_read_data(ar.get(), buf, sizeof buf)) != 0;) {
      if (n < 0) {
        return Errorf(ErrorCode::kCorrupt, "{}: entry {}: {}", path, name,
                      archive_error_string(ar.get()));
      }
      bytes.append(buf, static_cast<size_t>(n));
    }
    if (name.size() > 4 && name.ends_with(".npy")) name.resize(name.size() - 4);
    BM_ASSIGN_OR_RETURN(NpyArray a, ParseNpy(bytes, path + ":" + name));
    arrays.emplace(name, std::move(a));
  }
  if (r != ARCHIVE_EOF) {
    return Errorf(ErrorCode::kCorrupt, "{}: not a valid .npz (zip) file: {}", path,
                  archive_error_string(ar.get()) ? archive_error_string(ar.get()) : "?");
  }
  return arrays;
}

Status WriteNpz(const std::string& path, const std::map<std::string, NpyArray>& arrays) {
  std::unique_ptr<archive, WriteCloser> ar(archive_write_new());
  archive_write_set_format_zip(ar.get());
  archive_write_zip_set_compression_store(ar.get());
  if (archive_write_open_filename(ar.get(), path.c_str()) != ARCHIVE_OK) {
    return Errorf(ErrorCode::kIo, "cannot create {}: {}", path, archive_error_string(ar.get()));
  }
  for (const auto& [name, array] : arrays) {
    const std::string bytes = SerializeNpy(array);
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(),
                                                               archive_entry_free);
    archive_entry_set_pathname(e.get(), (name + ".npy").c_str());
    archive_entry_set_size(e.get(), static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    if (archive_write_header(ar.get(), e.get()) != ARCHIVE_OK ||
        archive_write_data(ar.get(), bytes.data(), bytes.size()) !=
            static_cast<la_ssize_t>(bytes.size())) {
      return Errorf(ErrorCode::kIo, "cannot write {}: {}", path, archive_error_string(ar.get()));
    }
  }
  if (archive_write_close(ar.get()) != ARCHIVE_OK) {
    return Errorf(ErrorCode::kIo, "cannot write {}: {}", path, archive_error_string(ar.get()));
  }
  return Status::Ok();
}

}  // namespace bm::formats
