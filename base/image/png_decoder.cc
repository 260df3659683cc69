// libpng's errors leave through longjmp, which skips C++ destructors: the two functions that
// call setjmp (ReadHeader, ReadRows) hold only trivially destructible locals and write into
// buffers their caller owns.
#include "base/image/png_decoder.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

namespace bm::image {
namespace {

struct PngReader {
  const uint8_t* data;
  size_t size;
  size_t offset;
  bool ran_out;    // libpng asked for bytes past the end: a truncated file
  bool rows_done;  // every row was read; what follows (up to IEND) Pillow does not need
  char message[256];
};

extern "C" void OnPngRead(png_structp png, png_bytep out, png_size_t length) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (r->size - r->offset < length) {
    r->ran_out = true;
    png_error(png, "unexpected end of file");
  }
  std::memcpy(out, r->data + r->offset, length);
  r->offset += length;
}

extern "C" void OnPngError(png_structp png, png_const_charp message) {
  auto* r = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", message);
  png_longjmp(png, 1);
}

extern "C" void OnPngWarning(png_structp, png_const_charp) {}

struct Header {
  png_uint_32 width, height;
  int bit_depth, color_type, channels;  // channels and bit depth after the transforms
  size_t rowbytes;
};

// Transforms: palette to RGB (RGBA with tRNS), 1/2/4-bit gray to 8 bits (scaled to
// 0..255), 16-bit samples to their high byte, except 16-bit gray without alpha, kept
// whole for Pillow's clipping (see Convert below). Interlacing undone by libpng.
int ReadHeader(png_structp png, png_infop info, Header* h) {
  if (setjmp(png_jmpbuf(png))) return 1;
  png_read_info(png, info);
  h->width = png_get_image_width(png, info);
  h->height = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16 && color != PNG_COLOR_TYPE_GRAY) png_set_strip_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->bit_depth = png_get_bit_depth(png, info);
  h->color_type = png_get_color_type(png, info);
  h->channels = png_get_channels(png, info);
  h->rowbytes = png_get_rowbytes(png, info);
  return 0;
}

int ReadRows(png_structp png, png_infop info, png_bytepp rows, PngReader* reader) {
  if (setjmp(png_jmpbuf(png))) return reader->rows_done ? 0 : 1;
  png_read_image(png, rows);
  reader->rows_done = true;
  png_read_end(png, info);
  return 0;
}

// The decoded rows (channels x bit depth as Header says) to RGB8, as Pillow's convert("RGB")
// does: gray replicated, alpha dropped (not composited), 16-bit gray "I;16" clipped to 255.
void Convert(const Header& h, const uint8_t* in, uint8_t* out) {
  const size_t w = h.width;
  if (h.bit_depth == 16) {  // gray, one 16-bit big-endian sample per pixel
    for (size_t x = 0; x < w; ++x) {
      const uint8_t v = in[2 * x] == 0 ? in[2 * x + 1] : 255;
      out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = v;
    }
    return;
  }
  switch (h.channels) {
    case 1:
    case 2:
      for (size_t x = 0; x < w; ++x) {
        const uint8_t v = in[h.channels * x];
        out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = v;
      }
      return;
    case 4:
      for (size_t x = 0; x < w; ++x) std::memcpy(out + 3 * x, in + 4 * x, 3);
      return;
    default:
      std::memcpy(out, in, w * 3);
  }
}

class PngGuard {
 public:
  PngGuard(png_structp* png, png_infop* info) : png_(png), info_(info) {}
  ~PngGuard() { png_destroy_read_struct(png_, info_, nullptr); }
  PngGuard(const PngGuard&) = delete;
  PngGuard& operator=(const PngGuard&) = delete;

 private:
  png_structp* png_;
  png_infop* info_;
};

}  // namespace

Result<Image> DecodePng(std::span<const uint8_t> bytes, std::string_view name,
                        const DecodeOptions& options) {
  PngReader reader{bytes.data(), bytes.size(), 0, false, false, {}};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, OnPngError, OnPngWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  PngGuard guard(&png, &info);
  if (!png || !info) return Errorf(ErrorCode::kInternal, "{}: libpng could not start", name);
  png_set_read_fn(png, &reader, OnPngRead);
  // No limits of libpng's own below ours: ours names the setting.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  png_set_chunk_malloc_max(png, 0);

  Header h{};
  if (ReadHeader(png, info, &h) != 0) {
    return Errorf(ErrorCode::kCorrupt, "{}: {} PNG header: {}", name,
                  reader.ran_out ? "truncated" : "corrupt", reader.message);
  }
  const int64_t pixels = static_cast<int64_t>(h.width) * h.height;
  if (pixels > options.max_pixels) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: {}x{} = {} pixels is over the limit of {} (a decompression bomb for "
                  "Pillow too); raise DecodeOptions::max_pixels to read it",
                  name, h.width, h.height, pixels, options.max_pixels);
  }
  Image image;
  image.width = static_cast<int>(h.width);
  image.height = static_cast<int>(h.height);
  image.rgb.resize(static_cast<size_t>(pixels) * 3);
  const bool direct = h.channels == 3 && h.bit_depth == 8;
  std::vector<uint8_t> decoded;
  if (!direct) decoded.resize(h.rowbytes * h.height);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) {
    rows[y] = direct ? image.row(static_cast<int>(y)) : decoded.data() + y * h.rowbytes;
  }
  if (ReadRows(png, info, rows.data(), &reader) != 0) {
    if (reader.ran_out) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: truncated PNG: the data ends before the image does ({} bytes)", name,
                    bytes.size());
    }
    return Errorf(ErrorCode::kCorrupt, "{}: corrupt PNG data: {}", name, reader.message);
  }
  if (!direct) {
    for (png_uint_32 y = 0; y < h.height; ++y) {
      Convert(h, rows[y], image.row(static_cast<int>(y)));
    }
  }
  return image;
}

}  // namespace bm::image
