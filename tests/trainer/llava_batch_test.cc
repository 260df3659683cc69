// LLaVA batches from hand-built llava_data outputs: placeholders expanded,
// truncation, shifted targets and masks, pixel values normalised, the rows of
// data-parallel ranks, and bad datasets named.
#include "trainer/data/llava_batch.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/trainer/llava_test_data.h"
#include "tests/trainer/test_data.h"

namespace bm::train {
namespace {

constexpr int32_t kI = 10;  // the placeholder: vocab 10

// Two 2x2 images. Image 0: all pixels (0, 128, 255); image 1: pixel p has (51*p, 255, 0).
std::vector<uint8_t> Pixels() {
  std::vector<uint8_t> px(24);
  for (int p = 0; p < 4; ++p) {
    px[3 * p] = 0, px[3 * p + 1] = 128, px[3 * p + 2] = 255;
    px[12 + 3 * p] = static_cast<uint8_t>(51 * p), px[12 + 3 * p + 1] = 255, px[12 + 3 * p + 2] = 0;
  }
  return px;
}

std::string Write(const std::string& name, const std::vector<testing::LlavaSampleSpec>& samples) {
  const std::string dir = testing::TempDir(name);
  testing::WriteLlavaData(dir, "train", samples, 10, 3, 2, Pixels());
  return dir;
}

TEST(LlavaBatchTest, ExpandsShiftsAndNormalises) {
  const std::string dir = Write(
      "llava_expand", {{{1, kI, 4, 5}, {0, 0, 1, 1}, {1}}, {{kI, 2, kI, 3}, {0, 1, 0, 1}, {0, 1}}});
  Result<LlavaData> data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_EQ(data->num_samples(), 2);
  Batch b;
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 2, 10, &b).ok());
  // row 0: 1 I I I 4 5 (6 positions); row 1: I I I 2 I I I 3 (8 positions)
  EXPECT_EQ(b.inputs, (std::vector<int32_t>{1, 0, 0, 0, 4, 5, 0, 0, 0, 0,  //
                                            0, 0, 0, 2, 0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{0, 0, 0, 4, 5, 0, 0, 0, 0, 0,  //
                                             0, 0, 2, 0, 0, 0, 3, 0, 0, 0}));
  EXPECT_EQ(b.mask, (std::vector<uint8_t>{0, 0, 0, 1, 1, 0, 0, 0, 0, 0,  //
                                          0, 0, 1, 0, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(b.MaskedCount(), 4);
  EXPECT_EQ(b.lengths, (std::vector<int64_t>{6, 8}));
  ASSERT_EQ(b.images, 3);
  EXPECT_EQ(b.image_positions, (std::vector<int64_t>{1, 2, 3, 10, 11, 12, 14, 15, 16}));
  // images in row order: 1, 0, 1; CHW, (x/255 - mean)/std with mean 0.5, std (0.25, 0.5, 0.25)
  ASSERT_EQ(b.pixel_values.size(), 3u * 12);
  const float* img1 = b.pixel_values.data();
  const float* img0 = b.pixel_values.data() + 12;
  // image 0: R = 0 -> -2; G = 128 -> (128/255 - 0.5)/0.5 = 0.00392157; B = 255 -> 2
  for (int p = 0; p < 4; ++p) {
    EXPECT_FLOAT_EQ(img0[p], -2.0f);
    EXPECT_NEAR(img0[4 + p], 0.00392157f, 1e-6);
    EXPECT_FLOAT_EQ(img0[8 + p], 2.0f);
  }
  // image 1: R = 0, 51, 102, 153 -> -2, -1.2, -0.4, 0.4; G = 255 -> 1; B = 0 -> -2
  const float red[4] = {-2.0f, -1.2f, -0.4f, 0.4f};
  for (int p = 0; p < 4; ++p) {
    EXPECT_NEAR(img1[p], red[p], 1e-6);
    EXPECT_FLOAT_EQ(img1[4 + p], 1.0f);
    EXPECT_FLOAT_EQ(img1[8 + p], -2.0f);
  }
  EXPECT_EQ(std::vector<float>(b.pixel_values.begin() + 24, b.pixel_values.end()),
            std::vector<float>(img1, img1 + 12));
  MicroBatch m = b.View();
  EXPECT_EQ(m.images, 3);
  EXPECT_EQ(m.image_positions, b.image_positions.data());
  EXPECT_EQ(m.pixel_values, b.pixel_values.data());
}

// The same two rows trimmed to the longest (8 positions), by hand from the layout above: the
// padding columns 8 and 9 go, row 1 starts at 8, its image positions move down by 2.
TEST(LlavaBatchTest, TrimCutsToTheLongestRow) {
  const std::string dir = Write(
      "llava_trim", {{{1, kI, 4, 5}, {0, 0, 1, 1}, {1}}, {{kI, 2, kI, 3}, {0, 1, 0, 1}, {0, 1}}});
  Result<LlavaData> data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  Batch b;
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 2, 10, &b).ok());
  const std::vector<float> pixels = b.pixel_values;
  TrimLlavaBatch(&b);
  EXPECT_EQ(b.T, 8);
  EXPECT_EQ(b.inputs, (std::vector<int32_t>{1, 0, 0, 0, 4, 5, 0, 0,  //
                                            0, 0, 0, 2, 0, 0, 0, 3}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{0, 0, 0, 4, 5, 0, 0, 0,  //
                                             0, 0, 2, 0, 0, 0, 3, 0}));
  EXPECT_EQ(b.mask, (std::vector<uint8_t>{0, 0, 0, 1, 1, 0, 0, 0,  //
                                          0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(b.image_positions, (std::vector<int64_t>{1, 2, 3, 8, 9, 10, 12, 13, 14}));
  EXPECT_EQ(b.pixel_values, pixels);
  TrimLlavaBatch(&b);  // already at the longest: unchanged
  EXPECT_EQ(b.T, 8);
  // Rounded up to a multiple: 8 -> 9 of 10 positions; row 1 starts at 9.
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 2, 10, &b).ok());
  TrimLlavaBatch(&b, 3);
  EXPECT_EQ(b.T, 9);
  EXPECT_EQ(b.inputs, (std::vector<int32_t>{1, 0, 0, 0, 4, 5, 0, 0, 0,  //
                                            0, 0, 0, 2, 0, 0, 0, 3, 0}));
  EXPECT_EQ(b.image_positions, (std::vector<int64_t>{1, 2, 3, 9, 10, 11, 13, 14, 15}));
  // Never wider than T: a multiple of 64 leaves the 10 positions.
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 2, 10, &b).ok());
  TrimLlavaBatch(&b, 64);
  EXPECT_EQ(b.T, 10);
}

TEST(LlavaBatchTest, TruncatesToTAndPadsMissingSamples) {
  const std::string dir = Write("llava_truncate", {{{1, kI, 4, 5}, {1, 0, 1, 1}, {1}}});
  Result<LlavaData> data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  Batch b;
  // T = 3: 1 I I | (the image's third position and 4 5 cut off); row 1: no sample (padding)
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 2, 3, &b).ok());
  EXPECT_EQ(b.inputs, (std::vector<int32_t>{1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.mask, (std::vector<uint8_t>(6, 0)));
  ASSERT_EQ(b.images, 1);
  EXPECT_EQ(b.image_positions, (std::vector<int64_t>{1, 2, -1}));
  EXPECT_EQ(b.lengths, (std::vector<int64_t>{3, 0}));
  // T = 5: the image whole, then 4 as the last input (predicting nothing)
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 1, 5, &b).ok());
  EXPECT_EQ(b.inputs, (std::vector<int32_t>{1, 0, 0, 0, 4}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{0, 0, 0, 4, 0}));
  EXPECT_EQ(b.mask, (std::vector<uint8_t>{0, 0, 0, 1, 0}));
  EXPECT_EQ(b.image_positions, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(b.lengths, (std::vector<int64_t>{5}));
  // T = 1: the image does not start inside the row: no image at all
  ASSERT_TRUE(ReadLlavaSamples(*data, 0, 1, 1, &b).ok());
  EXPECT_EQ(b.images, 0);
  EXPECT_EQ(b.View().pixel_values, nullptr);
}

// The rows of two data-parallel ranks (and of two micro-batches) are one process's rows.
TEST(LlavaBatchTest, RanksRowsAreOneProcesssRows) {
  std::vector<testing::LlavaSampleSpec> samples;
  for (int32_t i = 0; i < 7; ++i) samples.push_back({{i, kI, (i + 1) % 10}, {1, 0, 1}, {i % 2}});
  const std::string dir = Write("llava_ranks", samples);
  Result<LlavaData> data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  Batch whole, r0, r1;
  ASSERT_TRUE(SampleLlavaTrainBatch(*data, 5, 3, 0, 4, 6, &whole).ok());
  ASSERT_TRUE(SampleLlavaTrainBatch(*data, 5, 3, 0, 2, 6, &r0).ok());
  ASSERT_TRUE(SampleLlavaTrainBatch(*data, 5, 3, 2, 2, 6, &r1).ok());
  std::vector<int32_t> joined = r0.inputs;
  joined.insert(joined.end(), r1.inputs.begin(), r1.inputs.end());
  EXPECT_EQ(joined, whole.inputs);
  std::vector<float> pixels = r0.pixel_values;
  pixels.insert(pixels.end(), r1.pixel_values.begin(), r1.pixel_values.end());
  EXPECT_EQ(pixels, whole.pixel_values);
  // each row is the drawn sample: its first token is the sample's index
  for (int64_t b = 0; b < 4; ++b)
    EXPECT_EQ(whole.inputs[b * 6], LlavaTrainSample(*data, 5, 3, b)) << b;
  // the draws move with the step and the seed
  std::vector<int64_t> a, c, d;
  for (int64_t row = 0; row < 16; ++row) {
    a.push_back(LlavaTrainSample(*data, 5, 3, row));
    c.push_back(LlavaTrainSample(*data, 5, 4, row));
    d.push_back(LlavaTrainSample(*data, 6, 3, row));
  }
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(LlavaBatchTest, BadDatasetsAreNamed) {
  // a sample with one placeholder and two images
  std::string dir = Write("llava_bad_count", {{{1, kI, 4}, {1, 0, 1}, {0, 1}}});
  Result<LlavaData> data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok()) << data.status().message();
  Batch b;
  Status s = ReadLlavaSamples(*data, 0, 1, 8, &b);
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("sample 0 has 1 <image> placeholders"), std::string::npos)
      << s.message();
  // an image index past images.u8
  dir = Write("llava_bad_index", {{{1, kI, 4}, {1, 0, 1}, {2}}});
  data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok());
  s = ReadLlavaSamples(*data, 0, 1, 8, &b);
  EXPECT_EQ(s.code(), ErrorCode::kCorrupt);
  EXPECT_NE(s.message().find("names image 2"), std::string::npos) << s.message();
  // a token past the vocabulary that is not the placeholder
  dir = Write("llava_bad_token", {{{1, 11, 4}, {1, 0, 1}, {}}});
  data = LlavaData::Open(dir, "train");
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(ReadLlavaSamples(*data, 0, 1, 8, &b).code(), ErrorCode::kCorrupt);
  // images.u8 shorter than images.json says
  dir = Write("llava_bad_pixels", {{{1, kI, 4}, {1, 0, 1}, {0}}});
  std::filesystem::resize_file(dir + "/images.u8", 20);
  data = LlavaData::Open(dir, "train");
  EXPECT_EQ(data.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(data.status().message().find("images.u8 holds 20 bytes"), std::string::npos)
      << data.status().message();
  // stats.json without image_token_id: what to set is named
  dir = Write("llava_bad_stats", {{{1, kI, 4}, {1, 0, 1}, {0}}});
  std::ofstream(dir + "/stats.json") << R"({"vocab_size": 10, "image_tokens": 3})";
  data = LlavaData::Open(dir, "train");
  EXPECT_EQ(data.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(data.status().message().find("\"image_token_id\""), std::string::npos);
  // no split; no _images file
  EXPECT_EQ(LlavaData::Open(dir, "valid").status().code(), ErrorCode::kNotFound);
  std::filesystem::remove(dir + "/train_images.idx");
  EXPECT_EQ(LlavaData::Open(dir, "train").status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace bm::train
