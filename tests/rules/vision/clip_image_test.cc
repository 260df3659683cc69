// LLaVA's preprocessing: ClipResizedImage against Pillow doing LLaVA's expand2square and
// CLIPImageProcessor's resize and crop (byte for byte), ClipNormalize against NumPy doing its
// rescale and normalize (within 1e-5), on the images tests/support/pil_images.py writes at test
// time; and values known by hand.
#include "rules/vision/clip_image.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/image/image.h"
#include "tests/support/pil_reference.h"

namespace bm::vision {
namespace {

TEST(ClipImageTest, PadColourIsIntOfMeanTimes255) {
  // int(0.48145466 * 255) = int(122.77), int(0.4578275 * 255) = int(116.75),
  // int(0.40821073 * 255) = int(104.09).
  EXPECT_EQ(ClipPadColour({}), (std::array<uint8_t, 3>{122, 116, 104}));
}

// CLIP's normalised range, per channel: (0 - mean) / std and (1 - mean) / std; CHW order.
TEST(ClipImageTest, NormalizeEnds) {
  Image img;
  img.width = 2;
  img.height = 1;
  img.rgb = {0, 0, 0, 255, 255, 255};
  float chw[6];
  ClipNormalize(img, {}, chw);
  // Worked in double from the means and stds above (a float32 result is within 1e-6).
  const float expected[6] = {-1.7922625f, 1.9303363f,  -1.7520971f,
                             2.0748838f,  -1.4802198f, 2.1458970f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(chw[i], expected[i], 1e-6) << i;
}

TEST(ClipImageTest, ShapesAndErrors) {
  Image wide;
  wide.width = 40;
  wide.height = 10;
  wide.rgb.assign(40 * 10 * 3, 200);
  Result<Image> padded = ClipResizedImage(wide, {});
  ASSERT_TRUE(padded.ok()) << padded.status().message();
  EXPECT_EQ(padded->width, 336);
  EXPECT_EQ(padded->height, 336);
  // The first and last rows are all padding, far from the image: the pad colour itself.
  for (int x = 0; x < 336; ++x) {
    EXPECT_EQ(padded->row(0)[3 * x], 122);
    EXPECT_EQ(padded->row(335)[3 * x + 2], 104);
  }
  ClipImageOptions no_pad;
  no_pad.pad_to_square = false;
  no_pad.size = 24;
  Result<Image> cropped = ClipResizedImage(wide, no_pad);
  ASSERT_TRUE(cropped.ok());
  EXPECT_EQ(cropped->width, 24);
  EXPECT_EQ(cropped->height, 24);
  for (uint8_t v : cropped->rgb) ASSERT_EQ(v, 200);
  EXPECT_EQ(ClipResizedImage(Image{}, {}).status().code(), ErrorCode::kInvalidArgument);
  no_pad.size = 0;
  EXPECT_EQ(ClipResizedImage(wide, no_pad).status().code(), ErrorCode::kInvalidArgument);
}

class ClipImagePilTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ref_ = new testing::PilReference(testing::MakePilReference()); }
  static void TearDownTestSuite() {
    ref_->Remove();
    delete ref_;
    ref_ = nullptr;
  }
  void SetUp() override {
    if (!ref_->ok && !ref_->dir.empty()) FAIL() << ref_->skip_reason;
    if (!ref_->ok) GTEST_SKIP() << ref_->skip_reason;
  }
  static testing::PilReference* ref_;
};
testing::PilReference* ClipImagePilTest::ref_ = nullptr;

std::vector<float> Floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> f(bytes.size() / 4);
  std::memcpy(f.data(), bytes.data(), f.size() * 4);
  return f;
}

TEST_F(ClipImagePilTest, PixelValuesEqualPillowAndNumpy) {
  int checked = 0;
  double worst = 0;
  for (const auto& e : ref_->manifest["images"]) {
    const std::string name = e["name"];
    Result<Image> decoded = image::DecodeImageFile(ref_->Path(e["file"]));
    ASSERT_TRUE(decoded.ok()) << decoded.status().message();
    for (const bool pad : {true, false}) {
      const std::string tag = pad ? ".clip_pad" : ".clip_nopad";
      ClipImageOptions options;
      options.pad_to_square = pad;
      Result<Image> u8 = ClipResizedImage(*decoded, options);
      ASSERT_TRUE(u8.ok()) << u8.status().message();
      ASSERT_EQ(u8->width, 336);
      ASSERT_EQ(u8->height, 336);
      const std::vector<uint8_t> theirs = ref_->Bytes(name + tag + ".u8");
      ASSERT_EQ(u8->rgb.size(), theirs.size()) << name << tag;
      size_t differ = 0;
      for (size_t i = 0; i < theirs.size(); ++i) differ += u8->rgb[i] != theirs[i];
      EXPECT_EQ(differ, 0u) << name << tag << ": bytes differing from Pillow's";
      std::vector<float> chw(3 * 336 * 336);
      ClipNormalize(*u8, options, chw.data());
      const std::vector<float> want = Floats(ref_->Bytes(name + tag + ".f32"));
      ASSERT_EQ(want.size(), chw.size()) << name << tag;
      double max_diff = 0;
      for (size_t i = 0; i < chw.size(); ++i) {
        max_diff = std::max(max_diff, std::abs(double{chw[i]} - double{want[i]}));
      }
      EXPECT_LE(max_diff, 1e-5) << name << tag;
      worst = std::max(worst, max_diff);
      ++checked;
    }
  }
  EXPECT_GE(checked, 40);
  std::printf("pixel_values of %d preprocessings: max |ours - NumPy's| = %.3g\n", checked, worst);
}

}  // namespace
}  // namespace bm::vision
