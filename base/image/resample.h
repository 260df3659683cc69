// Resampling of RGB8 images, equal byte for byte to Pillow's Image.resize on mode "RGB"
// (src/libImaging/Resample.c, the 8-bit path), for the filters below:
//   - coefficients per output position in double precision: center = (i + 0.5) * scale,
//     support = filter support * max(scale, 1) (antialiasing when shrinking), taps from
//     (int)(center - support + 0.5) to (int)(center + support + 0.5) clamped to the image,
//     weights filter((j - center + 0.5) / max(scale, 1)) normalised to sum 1;
//   - then fixed point: round-half-away(w * 2^22), sums from 2^21, the result >> 22
//     clamped to 0..255;
//   - two passes, horizontal first (only over the source rows the vertical pass reads),
//     then vertical; a pass whose size does not change is skipped.
// Pillow's resize(reducing_gap=None), its default and what transformers calls; no box.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

#include "base/image/image.h"
#include "base/result.h"

namespace bm::image {

enum class ResampleFilter {
  kBox,       // Image.Resampling.BOX
  kBilinear,  // Image.Resampling.BILINEAR
  kBicubic,   // Image.Resampling.BICUBIC (a = -0.5)
};

// A source image as row pointers, so that identical rows (a padding band) can share one
// buffer: Resample computes a row shared by consecutive entries only once.
struct RgbRows {
  int width = 0;
  std::vector<const uint8_t*> rows;  // rows.size() = height; each width * 3 bytes
  int height() const { return static_cast<int>(rows.size()); }
};
RgbRows RowsOf(const Image& image);

// A window of the resized image: [x, x + width) x [y, y + height).
struct Window {
  int x = 0, y = 0, width = 0, height = 0;
};

// Resizes `source` to out_width x out_height and returns the `window` of that result
// (identical to resizing everything and cropping: each output pixel depends only on its
// own position). Errors (kInvalidArgument): an empty source, a non-positive output size,
// a window outside the output.
Result<Image> Resample(const RgbRows& source, int out_width, int out_height, ResampleFilter filter,
                       const Window& window);

// The whole image: Pillow's image.resize((out_width, out_height), filter).
Result<Image> Resize(const Image& source, int out_width, int out_height, ResampleFilter filter);

}  // namespace bm::image
