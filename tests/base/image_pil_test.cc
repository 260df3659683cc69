// base/image against Pillow on images of mixed sizes, aspect ratios and modes, written at test
// time by tests/support/pil_images.py: the decoded pixels equal Pillow's
// Image.open(f).convert("RGB") and every resize equals Pillow's resize, byte for byte.
#include <gtest/gtest.h>

#include <set>

#include "base/image/image.h"
#include "base/image/resample.h"
#include "base/image/resample_kernels.h"
#include "tests/support/pil_reference.h"

namespace bm::image {
namespace {

class ImagePilTest : public ::testing::Test {
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
testing::PilReference* ImagePilTest::ref_ = nullptr;

// "n bytes differ, the first at byte i (ours a, Pillow's b), the largest by d", or "".
std::string Diff(const std::vector<uint8_t>& ours, const std::vector<uint8_t>& theirs) {
  if (ours.size() != theirs.size()) {
    return fmt::format("sizes differ: {} against {}", ours.size(), theirs.size());
  }
  size_t count = 0, first = 0;
  int largest = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    const int d = std::abs(int{ours[i]} - int{theirs[i]});
    if (d == 0) continue;
    if (count++ == 0) first = i;
    largest = std::max(largest, d);
  }
  if (count == 0) return "";
  return fmt::format(
      "{} bytes differ, the first at byte {} (ours {}, Pillow's {}), the largest by {}", count,
      first, ours[first], theirs[first], largest);
}

ResampleFilter FilterNamed(const std::string& name) {
  if (name == "bilinear") return ResampleFilter::kBilinear;
  if (name == "box") return ResampleFilter::kBox;
  return ResampleFilter::kBicubic;
}

TEST_F(ImagePilTest, ReferenceCoversEveryModeAndShape) {
  std::set<std::string> modes;
  bool wide = false, tall = false, tiny = false, big = false;
  for (const auto& e : ref_->manifest["images"]) {
    modes.insert(e["mode"].get<std::string>());
    const int w = e["width"], h = e["height"];
    wide |= w > 2 * h;
    tall |= h > 2 * w;
    tiny |= w * h == 1;
    big |= w >= 1000;
  }
  // Pillow's modes on open: JPEG RGB, L, CMYK; PNG RGB, RGBA, P, L, LA, 1, I (16-bit gray).
  EXPECT_EQ(modes, (std::set<std::string>{"1", "CMYK", "I", "L", "LA", "P", "RGB", "RGBA"}))
      << "Pillow " << ref_->manifest["pillow"];
  EXPECT_TRUE(wide && tall && tiny && big);
  EXPECT_GE(ref_->manifest["images"].size(), 20u);
}

TEST_F(ImagePilTest, DecodedPixelsEqualPillowsConvertRgb) {
  for (const auto& e : ref_->manifest["images"]) {
    const std::string name = e["name"];
    Result<Image> img = DecodeImageFile(ref_->Path(e["file"]));
    ASSERT_TRUE(img.ok()) << img.status().message();
    EXPECT_EQ(img->width, e["width"].get<int>()) << name;
    EXPECT_EQ(img->height, e["height"].get<int>()) << name;
    EXPECT_EQ(Diff(img->rgb, ref_->Bytes(name + ".dec.rgb")), "")
        << name << " (Pillow mode " << e["mode"] << ", Pillow " << ref_->manifest["pillow"] << ")";
  }
}

// The GIF cases of pil_images.py are all there: the first frame of palette, gray-table,
// interlaced, transparent and multi-frame files, offset frames, local, missing, short and
// ramp colour tables, a full LZW table without a clear code, a file without its trailer.
TEST_F(ImagePilTest, ReferenceCoversTheGifCases) {
  std::set<std::string> gifs, modes;
  for (const auto& e : ref_->manifest["images"]) {
    const std::string file = e["file"];
    if (file.ends_with(".gif")) {
      gifs.insert(e["name"].get<std::string>());
      modes.insert(e["mode"].get<std::string>());
    }
  }
  EXPECT_EQ(gifs.size(), 14u);
  for (const char* name :
       {"gif_interlaced_120x90", "gif_transparent_120x90", "gif_frames_120x90",
        "gif_offset_trns_100x80", "gif_past_screen_60x30", "gif_local_table_70x40",
        "gif_no_table_70x40", "gif_deferred_clear_150x160", "gif_no_trailer_70x40"}) {
    EXPECT_TRUE(gifs.contains(name)) << name;
  }
  EXPECT_EQ(modes, (std::set<std::string>{"L", "P"})) << "Pillow " << ref_->manifest["pillow"];
  EXPECT_EQ(ref_->manifest["errors"].size(), 5u);
}

// GIFs Pillow refuses (cut in the data or the header, no image, an empty frame, an end code
// before any pixel), named .jpg: each is an error naming the file, never an image.
TEST_F(ImagePilTest, BrokenGifsAreErrorsAsInPillow) {
  for (const auto& e : ref_->manifest["errors"]) {
    const std::string name = e["name"], path = ref_->Path(e["file"]);
    EXPECT_FALSE(e["pillow"].is_null()) << name << ": Pillow read it";
    Result<Image> img = DecodeImageFile(path);
    ASSERT_FALSE(img.ok()) << name << ": decoded, Pillow says " << e["pillow"];
    EXPECT_EQ(img.status().code(), ErrorCode::kCorrupt) << img.status().message();
    EXPECT_EQ(img.status().message().rfind(path + ": ", 0), 0u) << img.status().message();
    EXPECT_NE(img.status().message().find(e["ours"].get<std::string>()), std::string::npos)
        << img.status().message();
  }
}

// GIFs cut short at many lengths: where Pillow reads the file (the cut is after the last data
// sub-block the first frame needs: the trailer, the block terminator, later frames) the
// pixels are Pillow's; where Pillow raises, ours is an error naming the file.
TEST_F(ImagePilTest, CutGifsReadWhereverPillowReadsThem) {
  int read = 0, refused = 0;
  for (const auto& e : ref_->manifest["gif_cuts"]) {
    const std::string name = e["name"], path = ref_->Path(e["file"]);
    Result<Image> img = DecodeImageFile(path);
    const std::string where =
        fmt::format("{} ({} of {} bytes)", name, e["bytes"].get<int>(), e["of"].get<int>());
    if (e["pillow"].is_null()) {
      ++read;
      ASSERT_TRUE(img.ok()) << where << ": Pillow reads it; " << img.status().message();
      EXPECT_EQ(Diff(img->rgb, ref_->Bytes(name + ".dec.rgb")), "") << where;
    } else {
      ++refused;
      ASSERT_FALSE(img.ok()) << where << ": decoded, Pillow says " << e["pillow"];
      EXPECT_EQ(img.status().code(), ErrorCode::kCorrupt) << img.status().message();
      EXPECT_EQ(img.status().message().rfind(path + ": truncated GIF", 0), 0u)
          << img.status().message();
    }
  }
  EXPECT_GE(read, 4) << "cuts Pillow reads";
  EXPECT_GE(refused, 12) << "cuts Pillow refuses";
}

// Every resize of the manifest against Pillow's; returns the number of cases.
int ExpectResizesEqualPillow(const testing::PilReference& ref) {
  int cases = 0;
  for (const auto& e : ref.manifest["images"]) {
    const std::string name = e["name"];
    Image decoded;
    decoded.width = e["width"];
    decoded.height = e["height"];
    decoded.rgb = ref.Bytes(name + ".dec.rgb");  // Pillow's pixels: resize alone is tested
    EXPECT_EQ(decoded.rgb.size(), size_t{3} * decoded.width * decoded.height) << name;
    for (const auto& c : e["resize"]) {
      const int w = c["width"], h = c["height"];
      Result<Image> out = Resize(decoded, w, h, FilterNamed(c["filter"]));
      EXPECT_TRUE(out.ok()) << out.status().message();
      if (!out.ok()) continue;
      EXPECT_EQ(Diff(out->rgb, ref.Bytes(c["file"])), "")
          << name << " " << decoded.width << "x" << decoded.height << " -> " << w << "x" << h << " "
          << c["filter"];
      ++cases;
    }
  }
  return cases;
}

TEST_F(ImagePilTest, ResizeEqualsPillowByteForByte) {
  EXPECT_GE(ExpectResizesEqualPillow(*ref_), 150);
}

// The same with the kernels limited to SSE4.1 (the horizontal pass one position at a time,
// the vertical one scalar) and to plain C++: every path equals Pillow, whatever the CPU.
TEST_F(ImagePilTest, NarrowerKernelsEqualPillowToo) {
  for (internal::KernelLevel level :
       {internal::KernelLevel::kSse41, internal::KernelLevel::kScalar}) {
    internal::LimitKernels(level);
    const int cases = ExpectResizesEqualPillow(*ref_);
    internal::LimitKernels(internal::KernelLevel::kBest);
    EXPECT_GE(cases, 150) << static_cast<int>(level);
  }
}

// A window of a resize is that part of the whole resize (Pillow's resize, then a crop).
TEST_F(ImagePilTest, WindowIsTheCropOfPillowsResize) {
  for (const auto& e : ref_->manifest["images"]) {
    const std::string name = e["name"];
    if (e["width"].get<int>() < 100) continue;
    Image decoded;
    decoded.width = e["width"];
    decoded.height = e["height"];
    decoded.rgb = ref_->Bytes(name + ".dec.rgb");
    const auto& c = e["resize"][1];  // a downscale in both directions
    const int w = c["width"], h = c["height"];
    const Window win{w / 5, h / 3, w / 2, h / 2};
    Result<Image> out = Resample(RowsOf(decoded), w, h, ResampleFilter::kBicubic, win);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const std::vector<uint8_t> whole = ref_->Bytes(c["file"]);
    std::vector<uint8_t> crop;
    for (int y = win.y; y < win.y + win.height; ++y) {
      const auto* row = whole.data() + (static_cast<size_t>(y) * w + win.x) * 3;
      crop.insert(crop.end(), row, row + static_cast<size_t>(win.width) * 3);
    }
    EXPECT_EQ(Diff(out->rgb, crop), "") << name;
  }
}

}  // namespace
}  // namespace bm::image
