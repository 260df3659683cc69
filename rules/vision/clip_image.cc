// The steps are LLaVA's (llava/train/train.py, LazySupervisedDataset: expand2square with
// tuple(int(x * 255) for x in image_mean)) and CLIPImageProcessor's (transformers:
// get_resize_output_image_size without default_to_square, PIL resize, center_crop, rescale,
// normalize). Padding is not materialised where it need not be: the pad rows of a wide
// image all point at one row, which the resampler then filters once.
#include "rules/vision/clip_image.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/image/resample.h"

namespace bm::vision {
namespace {

using image::RgbRows;

// Pixels of a padded square and the rows pointing into them.
struct Padded {
  RgbRows rows;
  std::vector<uint8_t> storage;
};

Padded PadToSquare(const Image& in, const std::array<uint8_t, 3>& colour) {
  Padded p;
  const int s = std::max(in.width, in.height);
  p.rows.width = s;
  p.rows.rows.resize(s);
  if (in.width >= in.height) {
    // Pasted at (0, (w - h) // 2): bands above and below share one row of the colour.
    p.storage.resize(static_cast<size_t>(s) * 3);
    for (int x = 0; x < s; ++x) std::memcpy(p.storage.data() + 3 * x, colour.data(), 3);
    const int top = (in.width - in.height) / 2;
    for (int y = 0; y < s; ++y) {
      const bool inside = y >= top && y < top + in.height;
      p.rows.rows[y] = inside ? in.row(y - top) : p.storage.data();
    }
    return p;
  }
  // Pasted at ((h - w) // 2, 0): every row has pad on both sides, copied from one pad row.
  const int left = (in.height - in.width) / 2;
  const size_t row_bytes = static_cast<size_t>(s) * 3;
  const size_t left_bytes = static_cast<size_t>(left) * 3;
  const size_t image_bytes = static_cast<size_t>(in.width) * 3;
  std::vector<uint8_t> pad_row(row_bytes);
  for (int x = 0; x < s; ++x) std::memcpy(pad_row.data() + 3 * x, colour.data(), 3);
  p.storage.resize(row_bytes * s);
  for (int y = 0; y < s; ++y) {
    uint8_t* row = p.storage.data() + row_bytes * y;
    std::memcpy(row, pad_row.data(), left_bytes);
    std::memcpy(row + left_bytes, in.row(y), image_bytes);
    std::memcpy(row + left_bytes + image_bytes, pad_row.data(),
                row_bytes - left_bytes - image_bytes);
    p.rows.rows[y] = row;
  }
  return p;
}

}  // namespace

std::array<uint8_t, 3> ClipPadColour(const ClipImageOptions& options) {
  std::array<uint8_t, 3> colour{};
  for (int c = 0; c < 3; ++c) {
    // Python's int(x * 255) on the mean as a double (the config's JSON number).
    const double v = static_cast<double>(options.mean[c]) * 255.0;
    colour[c] = static_cast<uint8_t>(std::clamp(static_cast<int>(v), 0, 255));
  }
  return colour;
}

Result<Image> ClipResizedImage(const Image& decoded, const ClipImageOptions& options) {
  if (decoded.width < 1 || decoded.height < 1 ||
      decoded.rgb.size() != static_cast<size_t>(decoded.width) * decoded.height * 3) {
    return Errorf(ErrorCode::kInvalidArgument, "clip image: an empty or inconsistent {}x{} image",
                  decoded.width, decoded.height);
  }
  if (options.size < 1) {
    return Errorf(ErrorCode::kInvalidArgument, "clip image: size {} is not positive", options.size);
  }
  Padded padded;
  if (options.pad_to_square && decoded.width != decoded.height) {
    padded = PadToSquare(decoded, ClipPadColour(options));
  } else {
    padded.rows = image::RowsOf(decoded);
  }
  const int w = padded.rows.width, h = padded.rows.height();
  // Shortest edge to size, the other int(size * long / short) (a float division in Python).
  const int short_edge = std::min(w, h), long_edge = std::max(w, h);
  const int new_long = static_cast<int>(static_cast<double>(options.size) * long_edge / short_edge);
  const int out_w = w <= h ? options.size : new_long;
  const int out_h = w <= h ? new_long : options.size;
  // Center crop: top = (h - size) // 2, left = (w - size) // 2.
  const image::Window window{(out_w - options.size) / 2, (out_h - options.size) / 2, options.size,
                             options.size};
  return image::Resample(padded.rows, out_w, out_h, image::ResampleFilter::kBicubic, window);
}

void ClipNormalize(const Image& resized, const ClipImageOptions& options, float* chw_out) {
  // Per channel and byte value: float32(v * (1/255) in double), then (x - mean) / std in
  // float32, as transformers' rescale and normalize compute them.
  float lut[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const float x = static_cast<float>(static_cast<double>(v) * (1.0 / 255.0));
      lut[c][v] = (x - options.mean[c]) / options.std[c];
    }
  }
  const size_t plane = static_cast<size_t>(resized.width) * resized.height;
  const uint8_t* p = resized.rgb.data();
  for (size_t i = 0; i < plane; ++i, p += 3) {
    chw_out[i] = lut[0][p[0]];
    chw_out[plane + i] = lut[1][p[1]];
    chw_out[2 * plane + i] = lut[2][p[2]];
  }
}

}  // namespace bm::vision
