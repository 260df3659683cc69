// The first frame of a GIF, decoded with giflib, placed the way Pillow 9.4's GifImagePlugin
// places it (read from its source and checked against it, tests/base/image_pil_test.cc):
//   - the canvas is the logical screen, grown to hold the frame when the frame reaches past
//     it (Pillow does the same);
//   - the canvas outside the frame holds colour index 0, or the transparency index when a
//     graphic control extension before the frame names one (the background index is not
//     used for frame 0);
//   - every index goes through the frame's palette: its local colour table, else the global
//     one; an index past the table's end, and every index of a GIF with no table at all,
//     is the gray (i, i, i) (Pillow's palette starts as that ramp; a table that is itself
//     the ramp opens as mode "L", which gives the same pixels);
//   - the transparency index keeps its palette colour: convert("RGB") drops transparency;
//   - interlaced rows come in the four GIF passes and are put back in order;
//   - Pillow decodes only whole data sub-blocks and stops at the frame's last pixel: the
//     block terminator, what follows the frame and the trailer are not needed, so a file
//     cut there still reads; one cut before the last pixel is "truncated".
// Unknown bytes between blocks are skipped, as Pillow skips them.
#include "base/image/gif_decoder.h"

#include <gif_lib.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace bm::image {
namespace {

// The bytes giflib reads. `end` is where reading stops: the file's end, or, once the frame's
// data sub-blocks are known, the end of the last whole one; a zero byte there (the block
// terminator Pillow does not need) lets giflib finish a frame whose pixels are all there.
struct GifReader {
  const uint8_t* data;
  size_t end;
  size_t offset;
  bool terminator;  // serve one 0 byte at `end`
  bool ran_out;     // giflib asked for bytes past the end
};

extern "C" int OnGifRead(GifFileType* gif, GifByteType* out, int length) {
  auto* r = static_cast<GifReader*>(gif->UserData);
  if (length <= 0) return 0;
  size_t n = std::min(static_cast<size_t>(length), r->end - r->offset);
  std::memcpy(out, r->data + r->offset, n);
  r->offset += n;
  if (n < static_cast<size_t>(length) && r->terminator) {
    out[n++] = 0;
    r->terminator = false;
  }
  if (n < static_cast<size_t>(length)) r->ran_out = true;
  return static_cast<int>(n);
}

class GifGuard {
 public:
  explicit GifGuard(GifFileType* gif) : gif_(gif) {}
  ~GifGuard() {
    int error = 0;
    if (gif_) DGifCloseFile(gif_, &error);
  }
  GifGuard(const GifGuard&) = delete;
  GifGuard& operator=(const GifGuard&) = delete;

 private:
  GifFileType* gif_;
};

const char* GifMessage(int code) {
  const char* m = GifErrorString(code);
  return m ? m : "unknown giflib error";
}

// Where the frame's data sub-blocks stop being whole, from `start` (after the LZW code size).
// Returns bytes.size() when the chain ends with its terminator inside the file.
size_t EndOfWholeBlocks(std::span<const uint8_t> bytes, size_t start, bool* cut) {
  size_t pos = start;
  while (pos < bytes.size()) {
    const size_t n = bytes[pos];
    if (n == 0) {
      *cut = false;
      return bytes.size();
    }
    if (bytes.size() - pos - 1 < n) break;
    pos += 1 + n;
  }
  *cut = true;
  return pos;
}

}  // namespace

Result<Image> DecodeGif(std::span<const uint8_t> bytes, std::string_view name,
                        const DecodeOptions& options) {
  GifReader reader{bytes.data(), bytes.size(), 0, false, false};
  int error = 0;
  GifFileType* gif = DGifOpen(&reader, OnGifRead, &error);
  GifGuard guard(gif);
  if (!gif) {
    if (reader.ran_out) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: truncated GIF: the file ends inside its header ({} bytes)", name,
                    bytes.size());
    }
    return Errorf(ErrorCode::kCorrupt, "{}: corrupt GIF header: {}", name, GifMessage(error));
  }

  // The records before the first image: extensions (a graphic control extension may name a
  // transparency index) and bytes Pillow skips.
  int transparency = -1;
  for (;;) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) {
      if (reader.ran_out) {
        return Errorf(ErrorCode::kCorrupt,
                      "{}: truncated GIF: the file ends before its first image ({} bytes)", name,
                      bytes.size());
      }
      continue;  // not a block introducer: Pillow skips the byte
    }
    if (type == IMAGE_DESC_RECORD_TYPE) break;
    if (type == TERMINATE_RECORD_TYPE) {
      return Errorf(ErrorCode::kCorrupt, "{}: a GIF with no image (its trailer comes first)", name);
    }
    int code = 0;
    GifByteType* block = nullptr;
    bool first = true;
    if (DGifGetExtension(gif, &code, &block) != GIF_ERROR) {
      while (block != nullptr) {
        if (first && code == GRAPHICS_EXT_FUNC_CODE) {
          // block[0] is the length; flags, delay (2 bytes), transparency index.
          if (block[0] < 3 || ((block[1] & 1) && block[0] < 4)) {
            return Errorf(ErrorCode::kCorrupt,
                          "{}: corrupt GIF: a graphic control extension of {} bytes (4 expected)",
                          name, block[0]);
          }
          if (block[1] & 1) transparency = block[4];
        }
        first = false;
        if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) break;
      }
    }
    if (gif->Error == D_GIF_ERR_READ_FAILED && reader.ran_out) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: truncated GIF: the file ends inside an extension block ({} bytes)", name,
                    bytes.size());
    }
  }
  if (DGifGetImageDesc(gif) == GIF_ERROR) {
    if (reader.ran_out) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: truncated GIF: the file ends inside the first image's descriptor ({} "
                    "bytes)",
                    name, bytes.size());
    }
    // giflib stops right after the LZW minimum code size when it is over 8 (Pillow reads up
    // to 12; no common encoder writes more than 8, the most a palette needs).
    if (reader.offset > 0 && bytes[reader.offset - 1] > 8 && bytes[reader.offset - 1] <= 12) {
      return Errorf(ErrorCode::kUnsupported,
                    "{}: unsupported GIF: an LZW minimum code size of {} (giflib reads up to 8)",
                    name, bytes[reader.offset - 1]);
    }
    return Errorf(ErrorCode::kCorrupt, "{}: corrupt GIF image descriptor: {}", name,
                  GifMessage(gif->Error));
  }
  const GifImageDesc& frame = gif->Image;
  if (frame.Width <= 0 || frame.Height <= 0) {
    return Errorf(ErrorCode::kCorrupt, "{}: corrupt GIF: the first image is empty ({}x{})", name,
                  frame.Width, frame.Height);
  }
  const int64_t width = std::max<int64_t>(gif->SWidth, int64_t{frame.Left} + frame.Width);
  const int64_t height = std::max<int64_t>(gif->SHeight, int64_t{frame.Top} + frame.Height);
  const int64_t pixels = width * height;
  if (pixels > options.max_pixels) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: {}x{} = {} pixels is over the limit of {} (a decompression bomb for "
                  "Pillow too); raise DecodeOptions::max_pixels to read it",
                  name, width, height, pixels, options.max_pixels);
  }

  // The palette: the ramp, then the frame's table over it.
  std::array<uint8_t, 256 * 3> palette;
  for (int i = 0; i < 256; ++i) {
    palette[3 * i] = palette[3 * i + 1] = palette[3 * i + 2] = static_cast<uint8_t>(i);
  }
  const ColorMapObject* table = frame.ColorMap ? frame.ColorMap : gif->SColorMap;
  if (table) {
    for (int i = 0; i < std::min(table->ColorCount, 256); ++i) {
      palette[3 * i] = table->Colors[i].Red;
      palette[3 * i + 1] = table->Colors[i].Green;
      palette[3 * i + 2] = table->Colors[i].Blue;
    }
  }

  // Read only whole data sub-blocks, as Pillow does.
  bool cut = false;
  reader.end = EndOfWholeBlocks(bytes, reader.offset, &cut);
  reader.terminator = cut;

  Image image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.rgb.resize(static_cast<size_t>(pixels) * 3);
  const uint8_t* fill = &palette[3 * (transparency >= 0 ? transparency : 0)];
  for (int64_t i = 0; i < pixels; ++i) std::memcpy(&image.rgb[3 * i], fill, 3);

  std::vector<GifPixelType> line(static_cast<size_t>(frame.Width));
  static constexpr int kPassStart[4] = {0, 4, 2, 1}, kPassStep[4] = {8, 8, 4, 2};
  int done = 0;
  for (int pass = 0; pass < (frame.Interlace ? 4 : 1); ++pass) {
    const int start = frame.Interlace ? kPassStart[pass] : 0;
    const int step = frame.Interlace ? kPassStep[pass] : 1;
    for (int y = start; y < frame.Height; y += step, ++done) {
      if (DGifGetLine(gif, line.data(), frame.Width) == GIF_ERROR) {
        if (cut && reader.offset >= reader.end) {
          return Errorf(ErrorCode::kCorrupt,
                        "{}: truncated GIF: the data ends before the first image's last pixel "
                        "({} of {} rows read, {} bytes)",
                        name, done, frame.Height, bytes.size());
        }
        return Errorf(ErrorCode::kCorrupt, "{}: corrupt GIF data: {} ({} of {} rows read)", name,
                      GifMessage(gif->Error), done, frame.Height);
      }
      uint8_t* out = image.row(frame.Top + y) + static_cast<size_t>(frame.Left) * 3;
      for (int x = 0; x < frame.Width; ++x) std::memcpy(out + 3 * x, &palette[3 * line[x]], 3);
    }
  }
  return image;
}

}  // namespace bm::image
