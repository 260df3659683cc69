// libjpeg's errors leave through longjmp, which skips C++ destructors: the two functions
// that call setjmp (ReadHeader, ReadPixels) hold only trivially destructible locals and
// write into buffers their caller owns.
#include "base/image/jpeg_decoder.h"

#include <csetjmp>
#include <cstdio>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace bm::image {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // first: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool premature_end;  // libjpeg ran out of data and made up the rest (JWRN_JPEG_EOF)
};

extern "C" void OnJpegError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) are tolerated as Pillow tolerates them ("Corrupt JPEG data: extraneous
// bytes" decodes), except running out of data: Pillow raises "image file is truncated".
extern "C" void OnJpegMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->premature_end = true;
  cinfo->err->num_warnings++;
}

struct Decoder {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  bool created;
};

int ReadHeader(Decoder* d, const uint8_t* data, size_t size) {
  d->cinfo.err = jpeg_std_error(&d->err.pub);
  d->err.pub.error_exit = OnJpegError;
  d->err.pub.emit_message = OnJpegMessage;
  d->err.premature_end = false;
  d->err.message[0] = '\0';
  if (setjmp(d->err.jump)) return 1;
  jpeg_create_decompress(&d->cinfo);
  d->created = true;
  jpeg_mem_src(&d->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&d->cinfo, TRUE);
  return 0;
}

// Pillow reads 4-channel JPEGs as Adobe-inverted CMYK ("CMYK;I"), then converts to RGB
// with cmyk2rgb: nk = 255 - k, out = CLIP8(nk - MULDIV255(c, nk)), MULDIV255 rounding
// through ((t >> 8) + t) >> 8 of t = a * b + 128.
inline uint8_t CmykChannel(uint8_t stored_c, uint8_t stored_k) {
  const int c = 255 - stored_c, nk = 255 - (255 - stored_k);
  const int t = c * nk + 128;
  const int v = nk - (((t >> 8) + t) >> 8);
  return static_cast<uint8_t>(v <= 0 ? 0 : (v < 256 ? v : 255));
}

// Decodes into out (width * height * 3); scratch holds one scanline of the output colour
// space. Returns 0, 1 on a libjpeg error, 2 when the data ended early.
int ReadPixels(Decoder* d, int components, uint8_t* out, uint8_t* scratch) {
  if (setjmp(d->err.jump)) return 1;
  j_decompress_ptr cinfo = &d->cinfo;
  cinfo->out_color_space = components == 1 ? JCS_GRAYSCALE : (components == 4 ? JCS_CMYK : JCS_RGB);
  jpeg_start_decompress(cinfo);
  const size_t width = cinfo->output_width;
  while (cinfo->output_scanline < cinfo->output_height) {
    uint8_t* dst = out + static_cast<size_t>(cinfo->output_scanline) * width * 3;
    JSAMPROW row = components == 3 ? dst : scratch;
    if (jpeg_read_scanlines(cinfo, &row, 1) != 1) return 2;
    if (components == 1) {
      for (size_t x = 0; x < width; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = row[x];
    } else if (components == 4) {
      for (size_t x = 0; x < width; ++x) {
        const uint8_t* p = row + 4 * x;
        dst[3 * x + 0] = CmykChannel(p[0], p[3]);
        dst[3 * x + 1] = CmykChannel(p[1], p[3]);
        dst[3 * x + 2] = CmykChannel(p[2], p[3]);
      }
    }
  }
  if (d->err.premature_end) return 2;
  jpeg_finish_decompress(cinfo);
  return 0;
}

class DecoderGuard {
 public:
  explicit DecoderGuard(Decoder* d) : d_(d) {}
  ~DecoderGuard() {
    if (d_->created) jpeg_destroy_decompress(&d_->cinfo);
  }
  DecoderGuard(const DecoderGuard&) = delete;
  DecoderGuard& operator=(const DecoderGuard&) = delete;

 private:
  Decoder* d_;
};

Status UnsupportedPrecision(std::string_view name, int precision) {
  return Errorf(ErrorCode::kUnsupported,
                "{}: {}-bit JPEG samples; only 8-bit JPEGs are read (Pillow refuses them too)",
                name, precision);
}

}  // namespace

Result<Image> DecodeJpeg(std::span<const uint8_t> bytes, std::string_view name,
                         const DecodeOptions& options) {
  Decoder d{};
  DecoderGuard guard(&d);
  if (ReadHeader(&d, bytes.data(), bytes.size()) != 0) {
    if (d.err.premature_end) {
      return Errorf(ErrorCode::kCorrupt, "{}: truncated JPEG: the file ends inside its header ({})",
                    name, d.err.message);
    }
    // An 8-bit libjpeg refuses 12-bit files in jpeg_read_header, after reading the precision.
    if (d.err.pub.msg_code == JERR_BAD_PRECISION) {
      return UnsupportedPrecision(name, d.cinfo.data_precision);
    }
    return Errorf(ErrorCode::kCorrupt, "{}: corrupt JPEG header: {}", name, d.err.message);
  }
  const jpeg_decompress_struct& c = d.cinfo;
  if (c.data_precision != 8) return UnsupportedPrecision(name, c.data_precision);
  const int components = c.num_components;
  if (components != 1 && components != 3 && components != 4) {
    return Errorf(ErrorCode::kUnsupported,
                  "{}: a JPEG of {} components; 1 (grayscale), 3 (YCbCr/RGB) or 4 (CMYK) are read",
                  name, components);
  }
  const int64_t pixels = static_cast<int64_t>(c.image_width) * c.image_height;
  if (pixels > options.max_pixels) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: {}x{} = {} pixels is over the limit of {} (a decompression bomb for "
                  "Pillow too); raise DecodeOptions::max_pixels to read it",
                  name, c.image_width, c.image_height, pixels, options.max_pixels);
  }
  Image image;
  image.width = static_cast<int>(c.image_width);
  image.height = static_cast<int>(c.image_height);
  image.rgb.resize(static_cast<size_t>(pixels) * 3);
  std::vector<uint8_t> scratch(static_cast<size_t>(image.width) * 4);
  switch (ReadPixels(&d, components, image.rgb.data(), scratch.data())) {
    case 0:
      return image;
    case 2:
      return Errorf(ErrorCode::kCorrupt,
                    "{}: truncated JPEG: the data ends before the last scanline ({} bytes read)",
                    name, bytes.size());
    default:
      return Errorf(ErrorCode::kCorrupt, "{}: corrupt JPEG data: {}", name, d.err.message);
  }
}

}  // namespace bm::image
