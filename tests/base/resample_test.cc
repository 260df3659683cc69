// Resampling values counted by hand from Pillow's definition (base/image/resample.h); the
// byte-for-byte comparison with Pillow itself is image_pil_test.cc.
#include "base/image/resample.h"

#include <gtest/gtest.h>

namespace bm::image {
namespace {

Image Make(int w, int h, std::vector<uint8_t> rgb) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgb = std::move(rgb);
  return img;
}

// 2x1 -> 1x1, bicubic: scale 2, the two taps at -0.25 and +0.25 of the (widened) kernel weigh
// 0.5 each = 2^21 in fixed point; (0 + 255 * 2^21 + 2^21) >> 22 = 128 (rounds half up).
TEST(ResampleTest, HalvingTwoPixelsRoundsHalfUp) {
  Result<Image> out = Resize(Make(2, 1, {0, 10, 255, 255, 11, 0}), 1, 1, ResampleFilter::kBicubic);
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->rgb, (std::vector<uint8_t>{128, 11, 128}));  // (10+11)/2 = 10.5 -> 11
}

TEST(ResampleTest, ConstantStaysConstantAndSameSizeIsACopy) {
  Result<Image> up = Resize(Make(1, 1, {7, 200, 255}), 5, 3, ResampleFilter::kBicubic);
  ASSERT_TRUE(up.ok());
  for (size_t i = 0; i < up->rgb.size(); i += 3) {
    EXPECT_EQ(up->rgb[i], 7);
    EXPECT_EQ(up->rgb[i + 1], 200);
    EXPECT_EQ(up->rgb[i + 2], 255);
  }
  const Image src = Make(2, 2, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Result<Image> same = Resize(src, 2, 2, ResampleFilter::kBicubic);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->rgb, src.rgb);
}

// Bicubic overshoot at a hard edge, clipped to 0..255: 0,0,255,255 -> 8 columns. Output 2's
// center is 1.25 - 0.5... counted: its taps (0..3) at distances 1.3125.. give a negative lobe
// on the 255s' far side; we check only the clip bounds and the symmetry Pillow's math has.
TEST(ResampleTest, EdgeOvershootIsClippedAndSymmetric) {
  Result<Image> out = Resize(Make(4, 1, {0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255}), 8, 1,
                             ResampleFilter::kBicubic);
  ASSERT_TRUE(out.ok());
  for (int x = 0; x < 8; ++x) {
    EXPECT_EQ(int{out->rgb[3 * x]} + int{out->rgb[3 * (7 - x)]}, 255) << x;
  }
  EXPECT_EQ(out->rgb[0], 0);
  EXPECT_EQ(out->rgb[21], 255);
}

TEST(ResampleTest, BadSizesAndWindows) {
  const Image src = Make(2, 2, std::vector<uint8_t>(12, 1));
  EXPECT_EQ(Resize(src, 0, 3, ResampleFilter::kBicubic).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(Resize(Image{}, 3, 3, ResampleFilter::kBicubic).status().code(),
            ErrorCode::kInvalidArgument);
  Result<Image> r = Resample(RowsOf(src), 4, 4, ResampleFilter::kBicubic, Window{2, 2, 3, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("outside the 4x4 output"), std::string::npos);
}

// Rows shared by pointer (a padding band) give what separate equal rows give.
TEST(ResampleTest, SharedRowsEqualCopiedRows) {
  std::vector<uint8_t> band(9 * 3);
  for (size_t i = 0; i < band.size(); ++i) band[i] = static_cast<uint8_t>(i * 29);
  Image copied = Make(9, 6, {});
  RgbRows shared;
  shared.width = 9;
  for (int y = 0; y < 6; ++y) {
    copied.rgb.insert(copied.rgb.end(), band.begin(), band.end());
    shared.rows.push_back(band.data());
  }
  Result<Image> a = Resize(copied, 4, 13, ResampleFilter::kBicubic);
  Result<Image> b = Resample(shared, 4, 13, ResampleFilter::kBicubic, Window{0, 0, 4, 13});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->rgb, b->rgb);
}

}  // namespace
}  // namespace bm::image
