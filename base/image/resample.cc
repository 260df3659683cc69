// Pillow's two-pass resampling (src/libImaging/Resample.c, 8 bits per channel), reproduced
// from its definition: the same double-precision coefficients, the same fixed-point
// rounding, horizontal pass first. Integer sums are exact, so the order of the
// multiply-adds is free: the passes below are vectorised where Pillow's are not.
#include "base/image/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/image/resample_kernels.h"

namespace bm::image {
namespace {

using internal::kHalf;
using internal::kPrecisionBits;
using internal::Taps;

double BoxFilter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double BilinearFilter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Keys' cubic convolution with a = -0.5, written as Pillow evaluates it.
double BicubicFilter(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct FilterDef {
  double (*fn)(double);
  double support;
};

FilterDef FilterOf(ResampleFilter filter) {
  switch (filter) {
    case ResampleFilter::kBox:
      return {BoxFilter, 0.5};
    case ResampleFilter::kBilinear:
      return {BilinearFilter, 1.0};
    case ResampleFilter::kBicubic:
      break;
  }
  return {BicubicFilter, 2.0};
}

// Pillow's taps of output positions [first, first + count) of a resize from in_size to
// out_size.
Taps ComputeTaps(int in_size, int out_size, int first, int count, const FilterDef& filter) {
  // Pillow passes the box edges as float; (in1 - in0) is computed in float, then widened.
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = filter.support * filterscale;
  const double inv_filterscale = 1.0 / filterscale;
  Taps taps;
  taps.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.start.resize(count);
  taps.count.resize(count);
  taps.weights.assign(static_cast<size_t>(count) * taps.ksize, 0);
  std::vector<double> w(taps.ksize);
  for (int i = 0; i < count; ++i) {
    const int xx = first + i;
    const double center = in0 + (xx + 0.5) * scale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = filter.fn((x + xmin - center + 0.5) * inv_filterscale);
      ww += w[x];
    }
    if (ww != 0.0) {
      for (int x = 0; x < xmax; ++x) w[x] /= ww;
    }
    int32_t* k = taps.weights.data() + static_cast<size_t>(i) * taps.ksize;
    for (int x = 0; x < xmax; ++x) {
      const double scaled = w[x] * (1 << kPrecisionBits);
      k[x] = w[x] < 0 ? static_cast<int32_t>(-0.5 + scaled) : static_cast<int32_t>(0.5 + scaled);
    }
    taps.start[i] = xmin;
    taps.count[i] = xmax;
  }
  return taps;
}

}  // namespace

RgbRows RowsOf(const Image& image) {
  RgbRows rows;
  rows.width = image.width;
  rows.rows.reserve(image.height);
  for (int y = 0; y < image.height; ++y) rows.rows.push_back(image.row(y));
  return rows;
}

Result<Image> Resample(const RgbRows& source, int out_width, int out_height, ResampleFilter filter,
                       const Window& window) {
  const int in_w = source.width, in_h = source.height();
  if (in_w < 1 || in_h < 1) {
    return Errorf(ErrorCode::kInvalidArgument, "resample: an empty source image ({}x{})", in_w,
                  in_h);
  }
  if (out_width < 1 || out_height < 1) {
    return Errorf(ErrorCode::kInvalidArgument, "resample: output size {}x{} is not positive",
                  out_width, out_height);
  }
  if (window.x < 0 || window.y < 0 || window.width < 1 || window.height < 1 ||
      window.x + window.width > out_width || window.y + window.height > out_height) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "resample: window {}x{}+{}+{} is outside the {}x{} output", window.width,
                  window.height, window.x, window.y, out_width, out_height);
  }
  const FilterDef def = FilterOf(filter);
  const bool horizontal = out_width != in_w;
  const bool vertical = out_height != in_h;

  // Rows of the source (after the horizontal pass) that the window's rows read.
  Taps vtaps;
  int row_first = window.y, row_last = window.y + window.height;
  if (vertical) {
    vtaps = ComputeTaps(in_h, out_height, window.y, window.height, def);
    row_first = vtaps.start.front();
    row_last = vtaps.start.back() + vtaps.count.back();
  }

  // Horizontal pass over rows [row_first, row_last), window columns only (all columns of
  // the window when the width does not change). Consecutive rows sharing one buffer are
  // computed once and shared.
  const int out_cols = window.width;
  const size_t row_bytes = static_cast<size_t>(out_cols) * 3;
  std::vector<uint8_t> temp;
  std::vector<const uint8_t*> mid_rows(row_last - row_first);
  if (horizontal) {
    const Taps htaps = ComputeTaps(in_w, out_width, window.x, out_cols, def);
    const internal::HorizontalKernel kernel(htaps, in_w);
    int distinct = 0;
    for (int y = row_first; y < row_last; ++y) {
      distinct += (y == row_first || source.rows[y] != source.rows[y - 1]) ? 1 : 0;
    }
    temp.resize(static_cast<size_t>(distinct) * row_bytes);
    uint8_t* next = temp.data();
    for (int y = row_first; y < row_last; ++y) {
      if (y != row_first && source.rows[y] == source.rows[y - 1]) {
        mid_rows[y - row_first] = mid_rows[y - row_first - 1];
        continue;
      }
      kernel.Row(source.rows[y], next);
      mid_rows[y - row_first] = next;
      next += row_bytes;
    }
  } else {
    for (int y = row_first; y < row_last; ++y) {
      mid_rows[y - row_first] = source.rows[y] + static_cast<size_t>(window.x) * 3;
    }
  }

  Image out;
  out.width = window.width;
  out.height = window.height;
  out.rgb.resize(row_bytes * window.height);
  if (!vertical) {
    for (int y = 0; y < window.height; ++y) {
      std::memcpy(out.row(y), mid_rows[y], row_bytes);
    }
    return out;
  }
  const int n = static_cast<int>(row_bytes);
  for (int i = 0; i < window.height; ++i) {
    internal::VerticalRow(mid_rows.data() + (vtaps.start[i] - row_first), vtaps.of(i),
                          vtaps.count[i], n, out.row(i));
  }
  return out;
}

Result<Image> Resize(const Image& source, int out_width, int out_height, ResampleFilter filter) {
  return Resample(RowsOf(source), out_width, out_height, filter,
                  Window{0, 0, out_width, out_height});
}

}  // namespace bm::image
