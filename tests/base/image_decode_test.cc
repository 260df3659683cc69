// Decoding: the conversions of base/image/image.h on small committed images whose pixel values
// are known by construction (tests/data/images/make_images.py), and every bad input: an error
// naming the file and what is wrong, never an image.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/image/image.h"
#include "tests/support/test_data.h"

namespace bm::image {
namespace {

std::vector<uint8_t> Load(const std::string& name) {
  const std::string s = testing::ReadTestData("images/" + name);
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::vector<uint8_t> Pixels(const Result<Image>& img) {
  return img.ok() ? img->rgb : std::vector<uint8_t>{};
}

TEST(ImageDecodeTest, PaletteGoesThroughItsPalette) {
  Result<Image> img = DecodeImage(Load("palette_2x2.png"), "palette_2x2.png");
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->width, 2);
  EXPECT_EQ(img->height, 2);
  EXPECT_EQ(img->rgb, (std::vector<uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255}));
}

TEST(ImageDecodeTest, AlphaIsDroppedNotComposited) {
  EXPECT_EQ(Pixels(DecodeImage(Load("rgba_2x1.png"), "rgba")),
            (std::vector<uint8_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(Pixels(DecodeImage(Load("la_1x1.png"), "la")), (std::vector<uint8_t>{90, 90, 90}));
}

TEST(ImageDecodeTest, SixteenBitsAsPillowConvertsThem) {
  // RGB: the high byte of each sample. Gray ("I;16"): values above 255 clip to 255.
  EXPECT_EQ(Pixels(DecodeImage(Load("rgb16_1x1.png"), "rgb16")),
            (std::vector<uint8_t>{0x12, 0xab, 0x00}));
  EXPECT_EQ(Pixels(DecodeImage(Load("gray16_2x2.png"), "gray16")),
            (std::vector<uint8_t>{0x12, 0x12, 0x12, 255, 255, 255, 255, 255, 255, 255, 255, 255}));
}

TEST(ImageDecodeTest, GrayAndCmykJpegs) {
  Result<Image> gray = DecodeImage(Load("gray77_16x16.jpg"), "gray");
  ASSERT_TRUE(gray.ok()) << gray.status().message();
  ASSERT_EQ(gray->rgb.size(), 16u * 16 * 3);
  for (uint8_t v : gray->rgb) ASSERT_EQ(v, 77);
  // Solid CMYK (0, 255, 255, 0) is red through Pillow's inversion and cmyk2rgb.
  Result<Image> cmyk = DecodeImage(Load("cmyk_red_16x16.jpg"), "cmyk");
  ASSERT_TRUE(cmyk.ok()) << cmyk.status().message();
  for (size_t i = 0; i < cmyk->rgb.size(); i += 3) {
    ASSERT_EQ(cmyk->rgb[i], 255);
    ASSERT_EQ(cmyk->rgb[i + 1], 0);
    ASSERT_EQ(cmyk->rgb[i + 2], 0);
  }
}

TEST(ImageDecodeTest, SniffsBySignatureNotName) {
  EXPECT_EQ(SniffImageFormat(Load("rgb_32x24.jpg")), ImageFormat::kJpeg);
  EXPECT_EQ(SniffImageFormat(Load("rgb_32x24.png")), ImageFormat::kPng);
  Result<Image> a = DecodeImage(Load("rgb_32x24.jpg"), "misnamed.png");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->width, 32);
  EXPECT_EQ(a->height, 24);
}

// Every error names the file and says what is wrong.
void ExpectError(const Result<Image>& r, ErrorCode code, const std::string& name,
                 const std::string& what) {
  ASSERT_FALSE(r.ok()) << name << ": decoded, expected an error with '" << what << "'";
  EXPECT_EQ(r.status().code(), code) << r.status().message();
  EXPECT_EQ(r.status().message().rfind(name + ": ", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
}

// A 2x2 frame at (1, 0) of a 3x2 screen, indices 0 1 / 2 3 through a 4-colour global table,
// transparency index 2: the column outside the frame is colour 2 (Pillow fills the canvas
// with the transparency index), and the transparent pixel keeps its colour. The LZW data
// (code size 2: clear 4, literals 0 1 2 in 3 bits, 3 and end 5 in 4 bits) is packed by hand.
std::vector<uint8_t> SmallGif() {
  const std::string head = "GIF89a";
  std::vector<uint8_t> gif(head.begin(), head.end());
  for (int b : {3,    0,    2,    0,    0x81, 0,  0,  // screen, 4-colour table
                10,   20,   30,   40,   50,   60, 70,  80, 90, 100, 110, 120,  // the table
                0x21, 0xf9, 4,    1,    0,    0,  2,   0,                      // transparency 2
                0x2c, 1,    0,    0,    0,    2,  0,   2,  0,  0,  // frame at (1, 0), 2x2
                2,    3,    0x44, 0x34, 0x05, 0,  0x3b}) {         // LZW data, trailer
    gif.push_back(static_cast<uint8_t>(b));
  }
  return gif;
}

TEST(ImageDecodeTest, GifFirstFrameOnItsCanvas) {
  const std::vector<uint8_t> gif = SmallGif();
  EXPECT_EQ(SniffImageFormat(gif), ImageFormat::kGif);
  Result<Image> img = DecodeImage(gif, "small.jpg");  // an OCR-VQA GIF named .jpg
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->width, 3);
  EXPECT_EQ(img->height, 2);
  EXPECT_EQ(img->rgb, (std::vector<uint8_t>{70, 80, 90, 10, 20, 30, 40, 50, 60,  //
                                            70, 80, 90, 70, 80, 90, 100, 110, 120}));
  // Without the trailer and the block terminator the pixels are all there (Pillow reads it).
  const std::vector<uint8_t> cut(gif.begin(), gif.end() - 2);
  EXPECT_EQ(Pixels(DecodeImage(cut, "cut.gif")), img->rgb);
  // One data byte less: the last pixels are missing.
  const std::vector<uint8_t> short_data(gif.begin(), gif.end() - 3);
  ExpectError(DecodeImage(short_data, "short.gif"), ErrorCode::kCorrupt, "short.gif",
              "truncated GIF: the data ends before the first image's last pixel");
  // An LZW minimum code size of 9: legal for Pillow (up to 12), not for giflib.
  std::vector<uint8_t> wide = gif;
  ASSERT_EQ(wide[43], 2);
  wide[43] = 9;
  ExpectError(DecodeImage(wide, "wide.gif"), ErrorCode::kUnsupported, "wide.gif",
              "an LZW minimum code size of 9");
  wide[43] = 13;  // not a GIF Pillow reads either
  ExpectError(DecodeImage(wide, "bad.gif"), ErrorCode::kCorrupt, "bad.gif",
              "corrupt GIF image descriptor");
}

TEST(ImageDecodeTest, NotAnImageEmptyOrMissing) {
  const std::string text = "hello, not an image";
  ExpectError(DecodeImage({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, "a.jpg"),
              ErrorCode::kUnsupported, "a.jpg", "not a JPEG, PNG or GIF");
  ExpectError(DecodeImage({}, "empty.png"), ErrorCode::kCorrupt, "empty.png", "empty file");
  ExpectError(DecodeImageFile("/nonexistent/cat.jpg"), ErrorCode::kNotFound, "/nonexistent/cat.jpg",
              "cannot open");
}

TEST(ImageDecodeTest, TruncatedJpeg) {
  std::vector<uint8_t> jpg = Load("rgb_32x24.jpg");
  // Cut 40 bytes into the entropy-coded data after the start-of-scan marker.
  size_t sos = 0;
  for (size_t i = 2; i + 1 < jpg.size(); ++i) {
    if (jpg[i] == 0xff && jpg[i + 1] == 0xda) {
      sos = i;
      break;
    }
  }
  ASSERT_GT(sos, 0u);
  ASSERT_GT(jpg.size(), sos + 100);
  std::vector<uint8_t> in_scan(jpg.begin(), jpg.begin() + static_cast<long>(sos + 40));
  ExpectError(DecodeImage(in_scan, "cut.jpg"), ErrorCode::kCorrupt, "cut.jpg",
              "truncated JPEG: the data ends before the last scanline");
  std::vector<uint8_t> in_header(jpg.begin(), jpg.begin() + 40);
  ExpectError(DecodeImage(in_header, "head.jpg"), ErrorCode::kCorrupt, "head.jpg",
              "truncated JPEG: the file ends inside its header");
}

TEST(ImageDecodeTest, CorruptJpegHeader) {
  std::vector<uint8_t> jpg = Load("rgb_32x24.jpg");
  // Find the start-of-frame marker and make its precision 12 bits (a 12-bit JPEG, such as
  // libjpeg-turbo's testimages/monkey12.jpg, which Pillow refuses too), then garbage.
  size_t sof = 0;
  for (size_t i = 2; i + 1 < jpg.size(); ++i) {
    if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {
      sof = i;
      break;
    }
  }
  ASSERT_GT(sof, 0u);
  std::vector<uint8_t> bad = jpg;
  bad[sof + 4] = 12;
  ExpectError(DecodeImage(bad, "twelve.jpg"), ErrorCode::kUnsupported, "twelve.jpg",
              "12-bit JPEG samples; only 8-bit JPEGs are read");
  bad = jpg;
  for (size_t i = sof; i < sof + 12; ++i) bad[i] = 0x5a;
  ExpectError(DecodeImage(bad, "garbled.jpg"), ErrorCode::kCorrupt, "garbled.jpg", "corrupt JPEG");
}

TEST(ImageDecodeTest, TruncatedAndCorruptPng) {
  std::vector<uint8_t> png = Load("rgb_32x24.png");
  std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<long>(png.size() - 40));
  ExpectError(DecodeImage(cut, "cut.png"), ErrorCode::kCorrupt, "cut.png", "truncated PNG");
  std::vector<uint8_t> header_cut(png.begin(), png.begin() + 20);
  ExpectError(DecodeImage(header_cut, "hcut.png"), ErrorCode::kCorrupt, "hcut.png",
              "truncated PNG");
  std::vector<uint8_t> bad = png;
  bad[18] ^= 0x40;  // inside IHDR: its CRC no longer matches
  ExpectError(DecodeImage(bad, "crc.png"), ErrorCode::kCorrupt, "crc.png", "corrupt PNG");
  bad = png;
  bad[png.size() - 30] ^= 0xff;  // inside IDAT's compressed data
  ExpectError(DecodeImage(bad, "data.png"), ErrorCode::kCorrupt, "data.png", "PNG");
}

// rgb_32x24.png is 244 bytes: IHDR, one IDAT (data 41..227, its zlib Adler-32 at 224..227, its
// CRC at 228..231), IEND. Pillow 9.4 reads every cut from 223 bytes on, with all the pixels
// (its inflate stops at the last row); a cut at 222 or less it calls truncated.
TEST(ImageDecodeTest, PngCutAfterItsLastRowReadsAsInPillow) {
  const std::vector<uint8_t> png = Load("rgb_32x24.png");
  ASSERT_EQ(png.size(), 244u);
  Result<Image> whole = DecodeImage(png, "whole.png");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  for (size_t n = 223; n < png.size(); ++n) {
    const std::vector<uint8_t> cut(png.begin(), png.begin() + static_cast<long>(n));
    Result<Image> img = DecodeImage(cut, "cut.png");
    ASSERT_TRUE(img.ok()) << n << " bytes: " << img.status().message();
    EXPECT_EQ(img->rgb, whole->rgb) << n << " bytes";
  }
  const std::vector<uint8_t> cut(png.begin(), png.begin() + 222);
  ExpectError(DecodeImage(cut, "cut222.png"), ErrorCode::kCorrupt, "cut222.png",
              "truncated PNG: the data ends before the image does");
}

// Pillow checks the CRC of every chunk before the first IDAT, ancillary ones too ("broken PNG
// file", UnidentifiedImageError), and of no chunk from the IDAT on.
TEST(ImageDecodeTest, PngCrcsCheckedAsInPillow) {
  const std::vector<uint8_t> png = Load("rgb_32x24.png");
  Result<Image> whole = DecodeImage(png, "whole.png");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  std::vector<uint8_t> bad = png;
  bad[228] ^= 1;  // the IDAT's CRC
  Result<Image> idat = DecodeImage(bad, "idat_crc.png");
  ASSERT_TRUE(idat.ok()) << idat.status().message();
  EXPECT_EQ(idat->rgb, whole->rgb);
  // A tEXt chunk "k\0v" between IHDR and IDAT, its CRC off by one bit.
  const uint8_t text[] = {'t', 'E', 'X', 't', 'k', 0, 'v'};
  const uint32_t crc = static_cast<uint32_t>(crc32(0, text, sizeof(text))) ^ 1u;
  std::vector<uint8_t> chunk = {0, 0, 0, 3};
  chunk.insert(chunk.end(), text, text + sizeof(text));
  for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<uint8_t>(crc >> (24 - 8 * i)));
  bad = png;
  bad.insert(bad.begin() + 33, chunk.begin(), chunk.end());
  ExpectError(DecodeImage(bad, "text_crc.png"), ErrorCode::kCorrupt, "text_crc.png",
              "corrupt PNG header: tEXt: CRC error");
}

// rgb_32x24.png with a chunk inserted at byte `at` (33: before the IDAT, 232: before IEND);
// `length` overrides the length field; with `keep`, the file ends after that many bytes of it.
std::vector<uint8_t> WithChunk(size_t at, const std::string& type, const std::vector<uint8_t>& data,
                               uint32_t length = 0, size_t keep = SIZE_MAX) {
  std::vector<uint8_t> typed(type.begin(), type.end());
  typed.insert(typed.end(), data.begin(), data.end());
  const uint32_t crc = static_cast<uint32_t>(crc32(0, typed.data(), typed.size()));
  if (length == 0) length = static_cast<uint32_t>(data.size());
  std::vector<uint8_t> chunk;
  for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<uint8_t>(length >> (24 - 8 * i)));
  chunk.insert(chunk.end(), typed.begin(), typed.end());
  for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<uint8_t>(crc >> (24 - 8 * i)));
  std::vector<uint8_t> png = Load("rgb_32x24.png");
  png.insert(png.begin() + static_cast<long>(at), chunk.begin(), chunk.end());
  if (keep < chunk.size()) png.resize(at + keep);
  return png;
}

// `prefix` then n zero bytes, deflated.
std::vector<uint8_t> Deflated(std::vector<uint8_t> prefix, size_t n) {
  const std::vector<uint8_t> zeros(n, 0);
  uLongf size = compressBound(static_cast<uLong>(n));
  std::vector<uint8_t> z(size);
  EXPECT_EQ(compress2(z.data(), &size, zeros.data(), static_cast<uLong>(n), 9), Z_OK);
  prefix.insert(prefix.end(), z.begin(), z.begin() + static_cast<long>(size));
  return prefix;
}

// A critical chunk neither knows ("CRIT") before the IDAT: Pillow 9.4 skips it and reads the
// image; libpng alone stopped ("unhandled critical chunk").
TEST(ImageDecodeTest, PngUnknownCriticalChunkSkippedAsInPillow) {
  Result<Image> whole = DecodeImage(Load("rgb_32x24.png"), "whole.png");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  Result<Image> img = DecodeImage(WithChunk(33, "CRIT", {'x'}), "crit.png");
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->rgb, whole->rgb);
}

// Pillow 9.4's answers on these files: it inflates zTXt, compressed iTXt and iCCP chunks up to
// 1 MiB (1048576 bytes read; 1048577 is ValueError "Decompressed Data Too Large", before or
// after the IDAT), and a chunk whose data the file does not hold is OSError "Truncated File
// Read". libpng alone inflated the 1 KB chunk whole, and allocated a chunk's claimed 2 GiB.
TEST(ImageDecodeTest, PngMetadataBombsRefusedAsInPillow) {
  const size_t mib = size_t{1} << 20;
  EXPECT_TRUE(DecodeImage(WithChunk(33, "zTXt", Deflated({'k', 0, 0}, mib)), "mib.png").ok());
  EXPECT_TRUE(
      DecodeImage(WithChunk(33, "iTXt", Deflated({'k', 0, 0, 0, 0, 0}, mib + 1)), "raw.png").ok())
      << "an iTXt whose compression flag is 0 is not inflated";
  const std::string too_large = "chunk inflates to more than 1048576 bytes";
  ExpectError(DecodeImage(WithChunk(33, "zTXt", Deflated({'k', 0, 0}, mib + 1)), "z.png"),
              ErrorCode::kInvalidArgument, "z.png", "its zTXt " + too_large);
  ExpectError(DecodeImage(WithChunk(232, "zTXt", Deflated({'k', 0, 0}, mib + 1)), "after.png"),
              ErrorCode::kInvalidArgument, "after.png", "its zTXt " + too_large);
  ExpectError(DecodeImage(WithChunk(33, "iTXt", Deflated({'k', 0, 1, 0, 0, 0}, mib + 1)), "i.png"),
              ErrorCode::kInvalidArgument, "i.png", "its iTXt " + too_large);
  ExpectError(DecodeImage(WithChunk(33, "iCCP", Deflated({'p', 0, 0}, mib + 1)), "icc.png"),
              ErrorCode::kInvalidArgument, "icc.png", "its iCCP " + too_large);
  ExpectError(DecodeImage(WithChunk(33, "tEXt", {'k', 0, 'v'}, 0x7ff00000, 11), "len.png"),
              ErrorCode::kCorrupt, "len.png", "truncated PNG: the file ends inside its tEXt chunk");
  ExpectError(DecodeImage(WithChunk(232, "tEXt", {'k', 0, 'v', 'v', 'v', 'v'}, 0, 12), "end.png"),
              ErrorCode::kCorrupt, "end.png", "truncated PNG: the file ends inside its tEXt chunk");
}

TEST(ImageDecodeTest, PixelLimit) {
  DecodeOptions small;
  small.max_pixels = 32 * 24 - 1;
  ExpectError(DecodeImage(Load("rgb_32x24.png"), "p.png", small), ErrorCode::kInvalidArgument,
              "p.png", "over the limit of 767");
  ExpectError(DecodeImage(Load("rgb_32x24.jpg"), "j.jpg", small), ErrorCode::kInvalidArgument,
              "j.jpg", "over the limit of 767");
  small.max_pixels = 5;  // the 3x2 GIF canvas, not only its 2x2 frame, counts
  ExpectError(DecodeImage(SmallGif(), "g.gif", small), ErrorCode::kInvalidArgument, "g.gif",
              "3x2 = 6 pixels is over the limit of 5");
  small.max_pixels = 32 * 24;
  EXPECT_TRUE(DecodeImage(Load("rgb_32x24.png"), "p.png", small).ok());
}

// Headers claiming 20000 x 20000 (400 M pixels, over Pillow's 178956970): refused from the
// header, before any pixel is allocated.
TEST(ImageDecodeTest, DecompressionBombs) {
  std::vector<uint8_t> png = Load("rgb_32x24.png");
  const uint8_t dims[8] = {0, 0, 0x4e, 0x20, 0, 0, 0x4e, 0x20};
  std::copy(dims, dims + 8, png.begin() + 16);
  const uint32_t crc = static_cast<uint32_t>(crc32(0, png.data() + 12, 17));
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  ExpectError(DecodeImage(png, "bomb.png"), ErrorCode::kInvalidArgument, "bomb.png",
              "20000x20000 = 400000000 pixels is over the limit of 178956970");
  std::vector<uint8_t> jpg = Load("rgb_32x24.jpg");
  for (size_t i = 2; i + 8 < jpg.size(); ++i) {
    if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {
      jpg[i + 5] = 0x4e, jpg[i + 6] = 0x20, jpg[i + 7] = 0x4e, jpg[i + 8] = 0x20;
      break;
    }
  }
  ExpectError(DecodeImage(jpg, "bomb.jpg"), ErrorCode::kInvalidArgument, "bomb.jpg",
              "20000x20000 = 400000000 pixels");
  // GIF: a 20000 x 20000 logical screen around the small frame, then a frame reaching to
  // (20000, 20000) on a small screen (Pillow grows the canvas to hold it, then refuses it).
  std::vector<uint8_t> gif = SmallGif();
  gif[6] = 0x20, gif[7] = 0x4e, gif[8] = 0x20, gif[9] = 0x4e;
  ExpectError(DecodeImage(gif, "bomb.gif"), ErrorCode::kInvalidArgument, "bomb.gif",
              "20000x20000 = 400000000 pixels");
  gif = SmallGif();
  gif[34] = 0x1e, gif[35] = 0x4e, gif[36] = 0x1e, gif[37] = 0x4e;  // frame at (19998, 19998)
  ExpectError(DecodeImage(gif, "far.gif"), ErrorCode::kInvalidArgument, "far.gif",
              "20000x20000 = 400000000 pixels");
}

TEST(ImageDecodeTest, DecodeImageFileReadsTheFile) {
  Result<Image> img = DecodeImageFile(testing::TestDataPath("images/palette_2x2.png"));
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_EQ(img->rgb.size(), 12u);
  const std::string dir = ::testing::TempDir() + "/bm_image_decode_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/cut.png";
  std::vector<uint8_t> png = Load("rgb_32x24.png");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(png.data()), 60);
  ExpectError(DecodeImageFile(path), ErrorCode::kCorrupt, path, "truncated PNG");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace bm::image
