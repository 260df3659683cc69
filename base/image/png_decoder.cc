// libpng's errors leave through longjmp, which skips C++ destructors: the two functions that
// call setjmp (ReadHeader, ReadRows) hold only trivially destructible locals and write into
// buffers their caller owns.
#include "base/image/png_decoder.h"

#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
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
  char inflates_past[5];  // the chunk that inflates past kMaxInflatedChunk ("" if none)
};

// Pillow inflates zTXt, compressed iTXt and iCCP chunks at most this far (MAX_TEXT_CHUNK, its
// ImageFile.SAFEBLOCK) and refuses the file when there is more: "Decompressed Data Too Large",
// its guard against a small file holding a huge metadata chunk. libpng would inflate them whole.
constexpr size_t kMaxInflatedChunk = size_t{1} << 20;

// Whether a zlib stream inflates to more than `limit` bytes; a broken stream does not (Pillow
// ignores the chunk then). The output is counted, not kept.
bool InflatesPast(const uint8_t* data, size_t size, size_t limit) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return false;
  uint8_t out[1 << 14];
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = static_cast<uInt>(size);
  size_t total = 0;
  int rc = Z_OK;
  while (rc == Z_OK && total <= limit) {
    z.next_out = out;
    z.avail_out = sizeof(out);
    rc = inflate(&z, Z_NO_FLUSH);
    total += sizeof(out) - z.avail_out;
    if (rc == Z_OK && z.avail_out != 0 && z.avail_in == 0) break;  // the input ran out
  }
  inflateEnd(&z);
  return total > limit;
}

// The compressed part of a zTXt, iTXt or iCCP chunk as Pillow splits it (empty when Pillow
// inflates nothing): after "keyword\0method" (zTXt, iCCP) or, for an iTXt with its
// compression flag set, after "keyword\0 flag method language\0 translated keyword\0".
std::span<const uint8_t> CompressedPart(std::string_view type, std::span<const uint8_t> d) {
  const auto after_nul = [](std::span<const uint8_t> s) -> std::span<const uint8_t> {
    const auto nul = std::find(s.begin(), s.end(), uint8_t{0});
    return nul == s.end() ? std::span<const uint8_t>{} : s.subspan(nul - s.begin() + 1);
  };
  std::span<const uint8_t> rest = after_nul(d);
  if (type != "iTXt") return rest.size() < 1 ? rest : rest.subspan(1);
  if (rest.size() < 2 || rest[0] == 0 || rest[1] != 0) return {};
  return after_nul(after_nul(rest.subspan(2)));
}

// libpng hands zTXt, iTXt and iCCP chunks here instead of inflating them (they are made
// "unknown"; no other is kept): an error when one inflates past Pillow's limit. Chunks
// libpng does not know come here too and are skipped, critical ones included (libpng
// would stop at those: "unhandled critical chunk"), as Pillow skips them.
extern "C" int OnUnknownChunk(png_structp png, png_unknown_chunkp chunk) {
  const std::string_view type(reinterpret_cast<const char*>(chunk->name), 4);
  if (type != "zTXt" && type != "iTXt" && type != "iCCP") return 1;
  const std::span<const uint8_t> part = CompressedPart(type, {chunk->data, chunk->size});
  if (part.empty() || !InflatesPast(part.data(), part.size(), kMaxInflatedChunk)) return 1;
  auto* r = static_cast<PngReader*>(png_get_user_chunk_ptr(png));
  std::memcpy(r->inflates_past, chunk->name, 4);
  return -1;
}

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
//
// CRCs as Pillow checks them: every chunk before the first IDAT, ancillary ones included (a
// mismatch is "broken PNG file"), none from the IDAT on (Pillow never reads those CRCs).
int ReadHeader(png_structp png, png_infop info, Header* h) {
  if (setjmp(png_jmpbuf(png))) return 1;
  png_set_crc_action(png, PNG_CRC_DEFAULT, PNG_CRC_ERROR_QUIT);
  png_read_info(png, info);
  png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
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

// libpng has every row once its row counter passed the last row of the last pass.
bool AllRowsRead(png_structp png, png_infop info) {
  if (png_get_interlace_type(png, info) != PNG_INTERLACE_NONE) {
    return png_get_current_pass_number(png) >= 7;
  }
  return png_get_current_row_number(png) >= png_get_image_height(png, info);
}

// libpng reads the end of the zlib stream (its Adler-32) and the IDAT's CRC within the last
// row's call: a file cut there has every row, and Pillow, whose inflate stops at the last
// row, reads it. A corrupt end of stream is still an error, as it is for Pillow.
int ReadRows(png_structp png, png_infop info, png_bytepp rows, PngReader* reader) {
  if (setjmp(png_jmpbuf(png))) {
    if (reader->inflates_past[0] != 0) return 1;
    return reader->rows_done || (reader->ran_out && AllRowsRead(png, info)) ? 0 : 1;
  }
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

// One decoding pass. byte_at_a_time: libpng inflates the IDAT data one byte at a time
// instead of taking the rest of the chunk (up to 8 KiB) in one read. *truncated: the data
// ended early.
Result<Image> DecodePngPass(std::span<const uint8_t> bytes, std::string_view name,
                            const DecodeOptions& options, bool byte_at_a_time, bool* truncated) {
  PngReader reader{bytes.data(), bytes.size(), 0, false, false, {}, {}};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, OnPngError, OnPngWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  PngGuard guard(&png, &info);
  if (!png || !info) return Errorf(ErrorCode::kInternal, "{}: libpng could not start", name);
  png_set_read_fn(png, &reader, OnPngRead);
  // No limits of libpng's own on the size: ours names the setting. A chunk's data is never
  // larger than the file, so a chunk claiming more is truncated, found without allocating it.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  png_set_chunk_malloc_max(png, std::max<size_t>(bytes.size(), 1));
  static constexpr png_byte kInflated[] = "zTXt\0iTXt\0iCCP";
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kInflated, 3);
  png_set_read_user_chunk_fn(png, &reader, OnUnknownChunk);
  if (byte_at_a_time) png_set_compression_buffer_size(png, 1);  // IDAT read size, on reading

  Header h{};
  const auto inflates_past = [&] {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: its {} chunk inflates to more than {} bytes (Pillow refuses it too: "
                  "\"Decompressed Data Too Large\", a decompression bomb)",
                  name, reader.inflates_past, kMaxInflatedChunk);
  };
  if (ReadHeader(png, info, &h) != 0) {
    if (reader.inflates_past[0] != 0) return inflates_past();
    *truncated = reader.ran_out;
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
    if (reader.inflates_past[0] != 0) return inflates_past();
    *truncated = reader.ran_out;
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

// The first chunk other than IDAT whose data runs past the end of the file ("" if none):
// libpng would allocate the length it claims (up to 2 GiB) before finding the file short,
// and Pillow, which reads such a chunk before or after the image data, calls it truncated.
std::string TruncatedChunk(std::span<const uint8_t> bytes) {
  size_t at = 8;  // after the signature
  while (bytes.size() - at >= 8) {
    const uint8_t* c = bytes.data() + at;
    const size_t length = (size_t{c[0]} << 24) | (size_t{c[1]} << 16) | (size_t{c[2]} << 8) | c[3];
    const std::string type(reinterpret_cast<const char*>(c + 4), 4);
    const auto letter = [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    };
    if (type == "IEND" || !std::all_of(type.begin(), type.end(), letter)) break;  // libpng's
    if (type != "IDAT" && length > bytes.size() - at - 8) return type;
    if (length > bytes.size() - at - 8 || bytes.size() - at - 8 - length < 4) break;
    at += 12 + length;
  }
  return "";
}

}  // namespace

Result<Image> DecodePng(std::span<const uint8_t> bytes, std::string_view name,
                        const DecodeOptions& options) {
  if (const std::string type = TruncatedChunk(bytes); !type.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: truncated PNG: the file ends inside its {} chunk ({} bytes)", name, type,
                  bytes.size());
  }
  bool truncated = false;
  Result<Image> image = DecodePngPass(bytes, name, options, false, &truncated);
  if (image.ok() || !truncated) return image;
  // libpng asks for the rest of an IDAT chunk in one read, so a file cut a few bytes short
  // of its zlib stream's end loses rows whose data it holds. Pillow inflates what there is
  // and reads such a file whole; so does a second pass fed byte by byte (truncated files
  // only: it is slower).
  return DecodePngPass(bytes, name, options, true, &truncated);
}

}  // namespace bm::image
