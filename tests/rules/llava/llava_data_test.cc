// The llava_data and llava_images rules (rules/llava/): LLaVA's JSON parsing and its
// errors, the dataset's files on the committed sample
// (examples/llava1.5_13b/data/sample, made by make_llava_sample.py), failures that
// leave nothing behind, and, through the real engine on disk, that a template edit
// reruns llava_data but does not decode the images again.
//
// Exact ids and masks are checked against LLaVA's own preprocess by
// tests/gpu/llava_preprocess_golden.py (CTest llava_preprocess_golden_shim); here the
// expected values are facts of the sample and of LLaVA read by hand: the sample's
// counts (its JSON), BOS = 1 and the image placeholder = the vocabulary size (8000
// for data/kjv_sp.model), plain's two masked leading positions, LLaVA's pad colour
// int(mean * 255) = (122, 116, 104), image sizes (Pillow's Image.open(...).size).
#include "rules/llava/llava_data.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/formats/megatron_dataset.h"
#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "engine/build.h"
#include "rules/llava/image_set.h"
#include "rules/llava/llava_json.h"
#include "rules/registry.h"
#include "tests/support/test_data.h"

namespace bm::rules::llava {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Source(const std::string& rel) { return bm::testing::SourcePath(rel); }
const std::string kSample = "examples/llava1.5_13b/data/sample";

std::vector<std::vector<int32_t>> ReadAll(const std::string& prefix) {
  std::vector<std::vector<int32_t>> out;
  Result<formats::IndexedDataset> d = formats::IndexedDataset::Open(prefix);
  EXPECT_TRUE(d.ok()) << prefix << ": " << d.status().message();
  if (!d.ok()) return out;
  for (size_t i = 0; i < d->num_sequences(); ++i) {
    Result<std::vector<int32_t>> seq = d->ReadSequence(i);
    EXPECT_TRUE(seq.ok()) << prefix << ": " << seq.status().message();
    out.push_back(seq.ok() ? *seq : std::vector<int32_t>{});
  }
  return out;
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class LlavaDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("llava_data_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "out");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << text;
  }
  LlavaDataOptions Options(const std::string& json_file, Template t) {
    LlavaDataOptions o;
    o.inputs = {json_file};
    o.vocab = Source("data/kjv_sp.model");
    o.tmpl.kind = t;
    o.image_folder = Source(kSample + "/images");
    o.clip.size = 28;
    o.threads = 2;
    return o;
  }
  std::string Out() const { return (dir_ / "out").string(); }

  fs::path dir_;
};

// ---- JSON ------------------------------------------------------------------------

TEST(LlavaJsonTest, BothFormatsParse) {
  Result<std::vector<Sample>> s = ParseLlavaJson(R"([
    {"id": "004539375", "image": "00453/004539375.jpg", "conversations": [
      {"from": "human", "value": "Render a clear and concise summary of the photo.\n<image>"},
      {"from": "gpt", "value": "select luxury furniture"}]},
    {"id": 7, "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"},
      {"from": "human", "value": "Bye"}, {"from": "gpt", "value": ""}], "model": "ignored"}
  ])",
                                                 "x.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].id, "004539375");
  EXPECT_EQ((*s)[0].image, "00453/004539375.jpg");
  EXPECT_EQ((*s)[0].conversations[1].value, "select luxury furniture");
  EXPECT_EQ((*s)[1].id, "7");
  EXPECT_FALSE((*s)[1].image.has_value());
  EXPECT_EQ((*s)[1].conversations.size(), 4u);
}

TEST(LlavaJsonTest, ErrorsNameTheFileAndTheSample) {
  auto error = [](const std::string& text) {
    Result<std::vector<Sample>> s = ParseLlavaJson(text, "mix.json");
    EXPECT_FALSE(s.ok()) << text;
    return s.ok() ? std::string() : s.status().message();
  };
  EXPECT_NE(error("[{").find("mix.json:1:3: not valid JSON"), std::string::npos);
  EXPECT_NE(error("{}").find("mix.json: not a JSON list"), std::string::npos);
  const std::string ok = R"({"id": "a", "conversations": [{"from": "human", "value": "Hi"}]})";
  EXPECT_EQ(error("[" + ok + ", " + ok + R"(, {"id": "abc", "conversations": [{"from": "human",
    "value": 3}]}])"),
            "mix.json: sample 2 (id \"abc\"): conversations[0].value is not a string");
  EXPECT_EQ(error(R"([{"id": "q", "image": "/etc/passwd", "conversations": []}])"),
            "mix.json: sample 0 (id \"q\"): \"image\" /etc/passwd is absolute; it must be "
            "relative to the image folder");
  EXPECT_NE(error(R"([{"image": "a/../../b.jpg", "conversations": []}])")
                .find("mix.json: sample 0: \"image\" a/../../b.jpg leaves the image folder"),
            std::string::npos);
  EXPECT_NE(error(R"([{"id": "z", "image": ["a.jpg"], "conversations": []}])")
                .find("sample 0 (id \"z\"): \"image\" is not a string"),
            std::string::npos);
  EXPECT_NE(error(R"([{"id": "z"}])").find("has no \"conversations\" list"), std::string::npos);
}

// A syntax error deep in a 665K-sample file: its line and column, where Python's
// json.loads puts it ("Expecting value: line 3 column 31": the "}" after "[").
TEST(LlavaJsonTest, ASyntaxErrorNamesItsLineAndColumn) {
  Result<std::vector<Sample>> s = ParseLlavaJson(
      "[\n"
      "{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"Hi\"}]},\n"
      "{\"id\": \"b\", \"conversations\": [}\n"
      "]",
      "mix.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidArgument);  // the user's file: exit 2
  EXPECT_NE(s.status().message().find("mix.json:3:31: not valid JSON"), std::string::npos)
      << s.status().message();
}

// LLaVA's preprocess_v1 reads source[0]["from"]: an empty conversation list fails there
// (IndexError), so it is the JSON's mistake, not a sample to train fully masked.
TEST(LlavaJsonTest, AnEmptyConversationIsAnError) {
  Result<std::vector<Sample>> s = ParseLlavaJson(
      R"([{"id": "a", "conversations": [{"from": "human", "value": "Hi"}]},
          {"id": "b", "image": "b.jpg", "conversations": []}])",
      "mix.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "mix.json: sample 1 (id \"b\"): \"conversations\" is empty");
}

// LLaVA's training never reads "id" (LazySupervisedDataset takes "image" and
// "conversations"): any JSON number is an id, as the header says, written as JSON
// writes it (Python's json.dumps(2.5) == "2.5").
TEST(LlavaJsonTest, AnyNumberIsAnId) {
  Result<std::vector<Sample>> s = ParseLlavaJson(
      R"([{"id": 2.5, "conversations": [{"from": "human", "value": "Hi"}]}])", "mix.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ((*s)[0].id, "2.5");
}

// mix665k's ids are strings or numbers; an error names a numeric id as well.
TEST(LlavaJsonTest, ANumericIdIsNamedInErrors) {
  Result<std::vector<Sample>> s = ParseLlavaJson(
      R"([{"id": 1234, "conversations": [{"from": "human", "value": null}]}])", "mix.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(),
            "mix.json: sample 0 (id \"1234\"): conversations[0].value is not a string");
}

TEST(LlavaJsonTest, MissingFileIsNamed) {
  Result<std::vector<Sample>> s = ReadLlavaJson("/nonexistent/blip.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent/blip.json"), std::string::npos);
}

// ---- the dataset on the sample ----------------------------------------------------------

TEST_F(LlavaDataTest, PretrainSampleWithThePlainTemplate) {
  LlavaDataOptions o = Options(Source(kSample + "/blip_laion_cc_sbu_558k.json"), Template::kPlain);
  std::ostringstream log;
  Result<json> stats = LlavaDataToDirectory(o, Out(), &log);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(Listing(Out()), (std::vector<std::string>{
                                "images.json", "images.u8", "stats.json", "train.bin", "train.idx",
                                "train_images.bin", "train_images.idx", "train_mask.bin",
                                "train_mask.idx", "valid.bin", "valid.idx", "valid_images.bin",
                                "valid_images.idx", "valid_mask.bin", "valid_mask.idx"}));
  EXPECT_EQ((*stats)["samples"], 24);
  EXPECT_EQ((*stats)["samples_with_image"], 24);
  EXPECT_EQ((*stats)["images"], 24);
  EXPECT_EQ((*stats)["image_token_id"], 8000);
  EXPECT_EQ((*stats)["vocab_size"], 8000);
  EXPECT_EQ((*stats)["template"], "plain");
  EXPECT_EQ((*stats)["mismatched"], 0);

  const auto ids = ReadAll(Out() + "/train");
  const auto masks = ReadAll(Out() + "/train_mask");
  const auto images = ReadAll(Out() + "/train_images");
  ASSERT_EQ(ids.size(), 24u);
  ASSERT_EQ(masks.size(), 24u);
  ASSERT_EQ(images.size(), 24u);
  uint64_t labels = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    // BOS, the placeholder, the caption and "\n": the first two masked, the rest labels.
    ASSERT_GT(ids[i].size(), 3u);
    EXPECT_EQ(ids[i][0], 1) << i;
    EXPECT_EQ(ids[i][1], 8000) << i;
    EXPECT_EQ(std::count(ids[i].begin(), ids[i].end(), 8000), 1) << i;
    EXPECT_EQ(masks[i][0], 0);
    EXPECT_EQ(masks[i][1], 0);
    EXPECT_EQ(std::count(masks[i].begin(), masks[i].end(), 1),
              static_cast<long>(ids[i].size()) - 2);
    labels += ids[i].size() - 2;
    // The sample's images are in order of first use, one each: image i.
    EXPECT_EQ(images[i], std::vector<int32_t>{static_cast<int32_t>(i)});
  }
  EXPECT_EQ((*stats)["labels"], labels);

  Result<ImageSet> set = ReadImageSet(Out());
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->meta["sources"][9], "00000/000000009.jpg");
  EXPECT_EQ(set->meta["size"], 28);
  EXPECT_EQ(fs::file_size(Out() + "/images.u8"), 24u * 28 * 28 * 3);
  // 00000/000000009.jpg is 120 x 60: padded to 120 x 120 with 30 rows of LLaVA's pad
  // colour above it; at 28 x 28 the first 5 rows are that colour alone (Pillow agrees).
  std::ifstream u8(Out() + "/images.u8", std::ios::binary);
  std::vector<char> image(28 * 28 * 3);
  u8.seekg(9 * 28 * 28 * 3);
  u8.read(image.data(), static_cast<std::streamsize>(image.size()));
  for (int x = 0; x < 28; ++x) {
    for (int y : {0, 4}) {
      const auto* px = reinterpret_cast<const uint8_t*>(&image[(y * 28 + x) * 3]);
      EXPECT_EQ(px[0], 122) << x << "," << y;
      EXPECT_EQ(px[1], 116);
      EXPECT_EQ(px[2], 104);
    }
  }
}

TEST_F(LlavaDataTest, FinetuneMixWithTextOnlySamplesAndASharedImage) {
  LlavaDataOptions o = Options(Source(kSample + "/llava_v1_5_mix665k.json"), Template::kVicunaV1);
  Result<json> stats = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  // The sample: 16 images, 17 samples with an image (one image used twice), 8 text-only.
  EXPECT_EQ((*stats)["samples"], 25);
  EXPECT_EQ((*stats)["samples_with_image"], 17);
  EXPECT_EQ((*stats)["images"], 16);
  EXPECT_EQ((*stats)["mismatched"], 0);
  Result<std::vector<Sample>> samples = ReadLlavaJson(o.inputs[0]);
  ASSERT_TRUE(samples.ok());
  {
    // One of them is a GIF named .jpg, as OCR-VQA's downloads have them: decoded, not an
    // error (its pixels against Pillow's: tests/gpu/llava_preprocess_golden.py --pixels).
    const std::string gif = "ocr_vqa/images/100518.jpg";
    std::ifstream in(Source(kSample + "/images/" + gif), std::ios::binary);
    char magic[6] = {};
    in.read(magic, 6);
    EXPECT_EQ(std::string(magic, 6).substr(0, 4), "GIF8") << gif;
    Result<ImageSet> set = ReadImageSet(Out());
    ASSERT_TRUE(set.ok());
    const auto& sources = set->meta["sources"];
    EXPECT_NE(std::find(sources.begin(), sources.end(), gif), sources.end());
  }
  const auto ids = ReadAll(Out() + "/train");
  const auto masks = ReadAll(Out() + "/train_mask");
  const auto images = ReadAll(Out() + "/train_images");
  Result<ImageSet> set = ReadImageSet(Out());
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(ids.size(), samples->size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const Sample& s = (*samples)[i];
    const long placeholders = std::count(ids[i].begin(), ids[i].end(), 8000);
    EXPECT_EQ(ids[i][0], 1);
    EXPECT_EQ(masks[i][0], 0);
    if (s.image) {
      EXPECT_EQ(placeholders, 1) << i;
      ASSERT_EQ(images[i].size(), 1u);
      EXPECT_EQ(set->meta["sources"][images[i][0]], *s.image) << i;
      // The placeholder is in the first human turn: masked.
      const size_t at = std::find(ids[i].begin(), ids[i].end(), 8000) - ids[i].begin();
      EXPECT_EQ(masks[i][at], 0);
    } else {
      EXPECT_EQ(placeholders, 0) << i;
      EXPECT_TRUE(images[i].empty()) << i;
    }
    // Every gpt turn ends with "</s>" (2), a label; the sequence ends with it.
    EXPECT_EQ(ids[i].back(), 2) << i;
    EXPECT_EQ(masks[i].back(), 1) << i;
    long eos = 0;
    for (size_t k = 0; k < ids[i].size(); ++k) eos += ids[i][k] == 2 && masks[i][k] == 1;
    long gpt_turns = 0;
    for (size_t k = 0; k < s.conversations.size(); ++k)
      gpt_turns +=
          s.conversations[k].from == "gpt" && (k > 0 || s.conversations[0].from == "human");
    EXPECT_EQ(eos, gpt_turns) << i;
  }
}

TEST_F(LlavaDataTest, SplitSendsImagesAlongWithTheirSamples) {
  LlavaDataOptions o = Options(Source(kSample + "/llava_v1_5_mix665k.json"), Template::kVicunaV1);
  o.split.valid_fraction = 0.3;
  Result<json> stats = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  const auto train = ReadAll(Out() + "/train"), valid = ReadAll(Out() + "/valid");
  const auto ti = ReadAll(Out() + "/train_images"), vi = ReadAll(Out() + "/valid_images");
  EXPECT_EQ(train.size() + valid.size(), 25u);
  EXPECT_GT(valid.size(), 0u);
  ASSERT_EQ(ti.size(), train.size());
  ASSERT_EQ(vi.size(), valid.size());
  for (size_t i = 0; i < train.size(); ++i)
    EXPECT_EQ(static_cast<size_t>(std::count(train[i].begin(), train[i].end(), 8000)),
              ti[i].size());
  for (size_t i = 0; i < valid.size(); ++i)
    EXPECT_EQ(static_cast<size_t>(std::count(valid[i].begin(), valid[i].end(), 8000)),
              vi[i].size());
  EXPECT_EQ((*stats)["train"]["samples"].get<uint64_t>(), train.size());
  EXPECT_EQ((*stats)["valid"]["samples"].get<uint64_t>(), valid.size());
}

TEST_F(LlavaDataTest, SameBytesForOneAndThreeThreads) {
  LlavaDataOptions o = Options(Source(kSample + "/llava_v1_5_mix665k.json"), Template::kVicunaV1);
  o.threads = 1;
  ASSERT_TRUE(LlavaDataToDirectory(o, Out(), nullptr).ok());
  fs::create_directories(dir_ / "out3");
  o.threads = 3;
  ASSERT_TRUE(LlavaDataToDirectory(o, (dir_ / "out3").string(), nullptr).ok());
  for (const std::string& name : Listing(Out())) {
    EXPECT_EQ(DiskFilesystem().HashFile(Out() + "/" + name)->Hex(),
              DiskFilesystem().HashFile((dir_ / "out3" / name).string())->Hex())
        << name;
  }
}

TEST_F(LlavaDataTest, AnImageSetIsLinkedNotRedone) {
  std::vector<ImageSource> images;
  std::unordered_map<std::string, int64_t> index;
  const std::string file = Source(kSample + "/blip_laion_cc_sbu_558k.json");
  Result<std::vector<Sample>> samples = ReadLlavaJson(file);
  ASSERT_TRUE(samples.ok());
  CollectImages(*samples, file, &images, &index);
  fs::create_directories(dir_ / "images");
  vision::ClipImageOptions clip;
  clip.size = 28;
  ASSERT_TRUE(WriteImageSet(images, Source(kSample + "/images"), clip, 2,
                            (dir_ / "images").string(), nullptr)
                  .ok());
  LlavaDataOptions o = Options(file, Template::kPlain);
  o.image_folder = "";
  o.images_dir = (dir_ / "images").string();
  ASSERT_TRUE(LlavaDataToDirectory(o, Out(), nullptr).ok());
  EXPECT_TRUE(fs::equivalent(dir_ / "images/images.u8", dir_ / "out/images.u8"));
  EXPECT_EQ(ReadAll(Out() + "/train_images")[3], std::vector<int32_t>{3});
}

TEST_F(LlavaDataTest, TextOnlyJsonGetsAnEmptyImageSet) {
  Write("d.json", R"([
    {"id": "t0", "conversations": [{"from": "human", "value": "Hi <image>"},
      {"from": "gpt", "value": "Yo"}]}])");
  LlavaDataOptions o = Options((dir_ / "d.json").string(), Template::kVicunaV1);
  o.image_folder = "";
  Result<json> stats = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ((*stats)["images"], 0);
  EXPECT_EQ(fs::file_size(Out() + "/images.u8"), 0u);
  Result<ImageSet> set = ReadImageSet(Out());
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->meta["count"], 0);
  // Without an image the "<image>" text stays text: no placeholder.
  const auto ids = ReadAll(Out() + "/train");
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(std::count(ids[0].begin(), ids[0].end(), 8000), 0);
  EXPECT_TRUE(ReadAll(Out() + "/train_images")[0].empty());
}

// ---- failures ------------------------------------------------------------------------

TEST_F(LlavaDataTest, AMissingImageNamesTheFileAndTheSampleAndLeavesNothing) {
  Write("imgs/a.jpg", "not an image");
  Write("d.json", R"([
    {"id": "s0", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}]},
    {"id": "s1", "image": "b.jpg", "conversations": [{"from": "human", "value": "<image>\nA"},
      {"from": "gpt", "value": "B"}]}])");
  LlavaDataOptions o = Options((dir_ / "d.json").string(), Template::kVicunaV1);
  o.image_folder = (dir_ / "imgs").string();
  Result<json> r = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find((dir_ / "imgs/b.jpg").string()), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("d.json: sample 1 (id \"s1\")"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(Out())) << Listing(Out()).size();
}

TEST_F(LlavaDataTest, ACorruptImageIsAnErrorNamingIt) {
  Write("imgs/a.jpg", "not an image");
  Write("d.json", R"([{"id": "s0", "image": "a.jpg", "conversations": [
      {"from": "human", "value": "<image>"}, {"from": "gpt", "value": "B"}]}])");
  LlavaDataOptions o = Options((dir_ / "d.json").string(), Template::kPlain);
  o.image_folder = (dir_ / "imgs").string();
  Result<json> r = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find((dir_ / "imgs/a.jpg").string()), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(Out()));
}

TEST_F(LlavaDataTest, ABadConversationNamesTheSampleAndLeavesNothing) {
  Write("d.json", R"([
    {"id": "ok", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Yo"}]},
    {"id": "bad", "conversations": [{"from": "human", "value": "Hi"}, {"from": "human", "value": "?"}]}])");
  LlavaDataOptions o = Options((dir_ / "d.json").string(), Template::kVicunaV1);
  Result<json> r = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("d.json: sample 1 (id \"bad\")"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(Out()));
}

TEST_F(LlavaDataTest, PlainNeedsTwoTurnsWithAnImage) {
  Write("d.json", R"([{"id": "t", "image": "00000/000000000.jpg", "conversations": [
      {"from": "human", "value": "<image>"}, {"from": "gpt", "value": "B"},
      {"from": "human", "value": "C"}]}])");
  LlavaDataOptions o = Options((dir_ / "d.json").string(), Template::kPlain);
  Result<json> r = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("d.json: sample 0 (id \"t\")"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(Out()));
}

TEST_F(LlavaDataTest, ImagesWithoutAFolderOrSetIsAnError) {
  LlavaDataOptions o = Options(Source(kSample + "/llava_v1_5_mix665k.json"), Template::kVicunaV1);
  o.image_folder = "";
  Result<json> r = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("llava_v1_5_mix665k.json: sample 0 (id \"000000100000\") "
                                      "has an image (coco/train2017/000000100000.jpg)"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(Out()));
}

TEST_F(LlavaDataTest, AnImageSetOfOtherJsonIsAnError) {
  const std::string pretrain = Source(kSample + "/blip_laion_cc_sbu_558k.json");
  Result<std::vector<Sample>> samples = ReadLlavaJson(pretrain);
  ASSERT_TRUE(samples.ok());
  std::vector<ImageSource> images;
  std::unordered_map<std::string, int64_t> index;
  CollectImages(*samples, pretrain, &images, &index);
  fs::create_directories(dir_ / "images");
  vision::ClipImageOptions clip;
  clip.size = 28;
  ASSERT_TRUE(WriteImageSet(images, Source(kSample + "/images"), clip, 1,
                            (dir_ / "images").string(), nullptr)
                  .ok());
  LlavaDataOptions o = Options(Source(kSample + "/llava_v1_5_mix665k.json"), Template::kVicunaV1);
  o.image_folder = "";
  o.images_dir = (dir_ / "images").string();
  Result<json> r = LlavaDataToDirectory(o, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("image coco/train2017/000000100000.jpg is not in the image "
                                      "set"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(Out()));
}

TEST_F(LlavaDataTest, ATruncatedImageSetIsRefused) {
  Write("set/images.json", R"({"sources": ["a.jpg", "b.jpg"], "bytes_per_image": 12, "size": 2})");
  Write("set/images.u8", std::string(12, '\0'));
  Result<ImageSet> set = ReadImageSet((dir_ / "set").string());
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("12 bytes where images.json says 24"), std::string::npos)
      << set.status().message();
}

TEST(LlavaInputsTest, DirectoriesGiveTheirJsonFilesSorted) {
  const fs::path d = fs::temp_directory_path() / ("llava_inputs_" + std::to_string(::getpid()));
  fs::create_directories(d);
  for (const char* n : {"b.json", "a.json", "c.txt", ".hidden.json"}) std::ofstream(d / n) << "[]";
  Result<std::vector<std::string>> r = ResolveJsonInputs({d.string()});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<std::string>{(d / "a.json").string(), (d / "b.json").string()}));
  EXPECT_FALSE(ResolveJsonInputs({(d / "none.json").string()}).ok());
  fs::remove_all(d);
}

// ---- parameters ----------------------------------------------------------------------

TEST(LlavaRulesTest, CheckRejectsBadParameters) {
  auto data = MakeLlavaDataRule();
  auto errors =
      data->Check({{"template", "llama_2"}, {"valid_fraction", 1.0}, {"images", {"a", "b"}}});
  std::vector<std::string> params;
  for (const auto& e : errors) params.push_back(e.param);
  EXPECT_EQ(params, (std::vector<std::string>{"template", "valid_fraction", "images"}));
  // The counts' ranges are declared; the engine checks them where the BENCHFILE is read.
  auto min_of = [](const engine::Rule& rule, const std::string& name) {
    for (const engine::ParamSpec& s : rule.params())
      if (s.name == name) return s.min;
    return int64_t{-999};
  };
  EXPECT_EQ(min_of(*data, "threads"), 0);
  EXPECT_EQ(min_of(*data, "image_size"), 1);
  EXPECT_EQ(min_of(*data, "model_max_length"), 1);
  EXPECT_EQ(min_of(*data, "image_tokens"), 1);
  auto both = data->Check({{"images", {"set"}}, {"image_folder", {"dir"}}});
  ASSERT_EQ(both.size(), 1u);
  EXPECT_EQ(both[0].param, "image_folder");
  EXPECT_TRUE(data->Check({{"template", "v1"}, {"images", {"set"}}}).empty());
  EXPECT_TRUE(data->Check({{"template", "plain"}, {"image_folder", {"dir"}}}).empty());
  auto images = MakeLlavaImagesRule();
  EXPECT_EQ(min_of(*images, "image_size"), 1);
  EXPECT_TRUE(images->Check({{"image_size", 336}, {"threads", 0}}).empty());
}

// ---- through the engine -------------------------------------------------------------

// A template edit reruns llava_data only: the images are not decoded again (the
// llava_images step is up to date; llava_data links its images.u8).
TEST_F(LlavaDataTest, ATemplateEditDoesNotDecodeTheImagesAgain) {
  ::setenv("BENCHMAKE_CACHE_DIR", (dir_ / "cache").c_str(), 1);
  ::setenv("BENCHMAKE_PLATFORM", R"({"trainer_build": "test", "gpu_count": 0})", 1);
  const std::string json_file = Source(kSample + "/blip_laion_cc_sbu_558k.json");
  Write(
      "ws/BENCHFILE.toml",
      fmt::format("[target.images]\nrule = \"llava_images\"\ninput = [\"{}\"]\n"
                  "image_folder = \"{}\"\nimage_size = 28\n\n"
                  "[target.data]\nrule = \"llava_data\"\ninput = [\"{}\"]\n"
                  "vocab = \"{}\"\ntemplate = \"plain\"\nimages = [\"images\"]\n",
                  json_file, Source(kSample + "/images"), json_file, Source("data/kjv_sp.model")));
  engine::RuleRegistry rules;
  RegisterBuiltinRules(rules);
  SubprocessRunner runner;
  engine::Workspace ws;
  ws.fs = &DiskFilesystem();
  ws.runner = &runner;
  ws.rules = &rules;
  ws.root = (dir_ / "ws").string();
  ws.benchfile = ws.root + "/BENCHFILE.toml";
  ws.tools_dir = ws.root;
  ws.self_exe = ws.root + "/benchmake";
  auto build = [&]() {
    std::ostringstream console;
    engine::StepOptions options;
    options.console = &console;
    Result<engine::InProcessSummary> r = engine::BuildInProcess(ws, options);
    EXPECT_TRUE(r.ok()) << r.status().message() << "\n" << console.str();
    return r.ok() ? *r : engine::InProcessSummary{};
  };
  engine::InProcessSummary first = build();
  EXPECT_EQ(first.ran, 2);
  const std::string u8 = ws.OutDirOf("images") + "/images.u8";
  ASSERT_TRUE(fs::exists(u8));
  struct stat before {};
  ASSERT_EQ(::stat(u8.c_str(), &before), 0);
  const auto plain_ids = ReadAll(ws.OutDirOf("data") + "/train");

  std::string text = *DiskFilesystem().ReadFile(ws.benchfile);
  text.replace(text.find("\"plain\""), 7, "\"vicuna_v1\"");
  std::ofstream(ws.benchfile, std::ios::trunc) << text;
  engine::InProcessSummary second = build();
  EXPECT_EQ(second.outcomes["images"], engine::StepOutcome::kUpToDate);
  EXPECT_EQ(second.ran, 1);
  // The same file (the cache touches its files' times, so the inode tells, not mtime).
  struct stat after {};
  ASSERT_EQ(::stat(u8.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the images were written again";
  EXPECT_NE(ReadAll(ws.OutDirOf("data") + "/train"), plain_ids);  // the template did change
  Result<ImageSet> set = ReadImageSet(ws.OutDirOf("data"));
  EXPECT_TRUE(set.ok()) << set.status().message();
  ::unsetenv("BENCHMAKE_PLATFORM");
  ::unsetenv("BENCHMAKE_CACHE_DIR");
}

}  // namespace
}  // namespace bm::rules::llava
