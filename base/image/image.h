// Decoded images: interleaved 8-bit RGB, rows top-down, and the decoder entry points.
//
//   Result<Image> img = DecodeImageFile("photos/cat.jpg");
//   if (!img.ok()) return img.status();  // "photos/cat.jpg: truncated JPEG ..."
//
// The pixels are what Pillow's `Image.open(path).convert("RGB")` gives on the same file
// (docs/IMAGES.md: the conversions below are Pillow's, byte for byte):
//   JPEG (libjpeg-turbo, base/image/jpeg_decoder.cc): 8-bit baseline and progressive;
//     grayscale -> R=G=B; YCbCr/RGB as libjpeg converts them (accurate integer IDCT,
//     fancy upsampling: libjpeg's defaults, which Pillow keeps); CMYK and YCCK as Pillow
//     reads them (Adobe-inverted CMYK, then R = CLIP8(k - c*k/255) with Pillow's
//     rounding); EXIF orientation is not applied (Pillow's convert does not either).
//   PNG (libpng, base/image/png_decoder.cc): palette through its palette, grayscale of
//     1/2/4/8 bits scaled to 0..255, alpha (RGBA, LA) and tRNS dropped, not composited;
//     16-bit RGB/RGBA keeps the high byte of each sample (Pillow's "RGB;16B" unpacker);
//     16-bit grayscale as Pillow converts "I;16" to "RGB": values above 255 become 255.
//     Gamma, sRGB and ICC chunks are ignored, as Pillow ignores them. CRCs are checked
//     before the first IDAT only, and a file cut after its last row's data reads whole
//     (Pillow does both). zTXt, iTXt and iCCP chunks inflating past 1 MiB are refused
//     (kInvalidArgument), as Pillow refuses them, and never inflated whole.
//   GIF (giflib, base/image/gif_decoder.cc): the first frame only, on a canvas the size of
//     the logical screen (grown when the frame reaches past it) filled with colour index 0,
//     or the transparency index when the frame has one; indices through the frame's local
//     colour table, else the global one; an index past the table, or any index with no
//     table, is the gray (i, i, i); transparency is dropped; interlacing undone.
// Errors (ErrorCode::kCorrupt unless said), each naming the file and what is wrong:
//   not a JPEG, PNG or GIF signature (kUnsupported), a GIF with no image, a corrupt header or data
//   stream, a truncated file (Pillow raises "image file is truncated" on these too), 12-bit JPEG
//   (kUnsupported), more than max_pixels pixels (kInvalidArgument; Pillow's
//   DecompressionBombError limit by default), and the file cannot be read (kIo/kNotFound).
// No partial image is ever returned.
//
// Thread safety: the functions are reentrant; call them from any number of threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::image {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3 bytes, interleaved RGB8, rows top-down

  const uint8_t* row(int y) const { return rgb.data() + static_cast<size_t>(y) * width * 3; }
  uint8_t* row(int y) { return rgb.data() + static_cast<size_t>(y) * width * 3; }
};

// Pillow's Image.MAX_IMAGE_PIXELS is 89478485 (a warning above it); it raises
// DecompressionBombError above twice that. We refuse what Pillow refuses.
inline constexpr int64_t kDefaultMaxImagePixels = 2 * 89478485LL;

struct DecodeOptions {
  int64_t max_pixels = kDefaultMaxImagePixels;  // width * height above this: an error
};

enum class ImageFormat { kUnknown, kJpeg, kPng, kGif };

// The format told by the first bytes (JPEG: FF D8 FF; PNG: its 8-byte signature; GIF:
// "GIF87a" or "GIF89a", the two Pillow accepts).
ImageFormat SniffImageFormat(std::span<const uint8_t> bytes);

// Decodes a whole JPEG, PNG or GIF held in memory; `name` (a path) prefixes every error.
Result<Image> DecodeImage(std::span<const uint8_t> bytes, std::string_view name,
                          const DecodeOptions& options = {});

// Reads `path` and decodes it (format by signature, not by extension).
Result<Image> DecodeImageFile(const std::string& path, const DecodeOptions& options = {});

}  // namespace bm::image
