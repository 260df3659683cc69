#include "base/image/image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/image/gif_decoder.h"
#include "base/image/jpeg_decoder.h"
#include "base/image/png_decoder.h"

namespace bm::image {
namespace {

Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return Errorf(e == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "{}: cannot open: {}", path,
                  std::strerror(e));
  }
  std::vector<uint8_t> bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
  uint8_t buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return Errorf(ErrorCode::kIo, "{}: cannot read: {}", path, std::strerror(e));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  ::close(fd);
  return bytes;
}

}  // namespace

ImageFormat SniffImageFormat(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
    return ImageFormat::kJpeg;
  }
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return ImageFormat::kPng;
  if (bytes.size() >= 6 && (std::memcmp(bytes.data(), "GIF87a", 6) == 0 ||
                            std::memcmp(bytes.data(), "GIF89a", 6) == 0)) {
    return ImageFormat::kGif;
  }
  return ImageFormat::kUnknown;
}

Result<Image> DecodeImage(std::span<const uint8_t> bytes, std::string_view name,
                          const DecodeOptions& options) {
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kJpeg:
      return DecodeJpeg(bytes, name, options);
    case ImageFormat::kPng:
      return DecodePng(bytes, name, options);
    case ImageFormat::kGif:
      return DecodeGif(bytes, name, options);
    case ImageFormat::kUnknown:
      break;
  }
  if (bytes.empty()) return Errorf(ErrorCode::kCorrupt, "{}: an empty file, not an image", name);
  return Errorf(ErrorCode::kUnsupported,
                "{}: not a JPEG, PNG or GIF (the first bytes are none of their signatures); "
                "convert it to one of them",
                name);
}

Result<Image> DecodeImageFile(const std::string& path, const DecodeOptions& options) {
  BM_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(path));
  return DecodeImage(bytes, path, options);
}

}  // namespace bm::image
