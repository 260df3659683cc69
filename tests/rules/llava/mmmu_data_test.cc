// The mmmu_data rule's directory (rules/llava/mmmu_data.h) on mmmu_sample, and its errors: a
// malformed question line or a missing image named as FILE:LINE, a prompt that spells
// "<image>" refused, nothing left behind after a failure. The prompts' ids and the decode table
// are checked against python sentencepiece and MMMU's own prompts by mmmu_data_check.py.
#include "rules/llava/mmmu_data.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/formats/megatron_dataset.h"
#include "rules/registry.h"
#include "tests/support/test_data.h"

namespace bm::rules::llava {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Source(const std::string& rel) { return bm::testing::SourcePath(rel); }

class MmmuDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("mmmu_data_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    fs::copy(Source("examples/llava1.5_13b/mmmu_sample"), root_ / "sample",
             fs::copy_options::recursive);
    fs::create_directories(root_ / "out");
    options_.questions = (root_ / "sample/validation.jsonl").string();
    options_.vocab = Source("data/kjv_sp.model");
    options_.clip.size = 28;
    options_.clip.pad_to_square = false;
    options_.image_tokens = 4;
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Out() const { return (root_ / "out").string(); }
  bool OutEmpty() const { return fs::is_empty(root_ / "out"); }
  // Replaces line `n` (1-based) of the questions file.
  void SetLine(int n, const std::string& text) {
    std::ifstream in(options_.questions);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    lines[n - 1] = text;
    std::ofstream out(options_.questions);
    for (const std::string& l : lines) out << l << "\n";
  }

  fs::path root_;
  MmmuDataOptions options_;
};

TEST_F(MmmuDataTest, TheSampleGivesOnePromptAndImage1PerQuestion) {
  Result<json> stats = MmmuDataToDirectory(options_, Out(), nullptr);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  // Counted by hand in validation.jsonl: 10 questions, 6 multiple choice, 4 open, each
  // image_1 a different file (Math_2 and Physics_1 have more images, not taken).
  EXPECT_EQ((*stats)["task"], "mmmu");
  EXPECT_EQ((*stats)["questions"], 10);
  EXPECT_EQ((*stats)["multiple_choice"], 6);
  EXPECT_EQ((*stats)["open"], 4);
  EXPECT_EQ((*stats)["images"], 10);
  EXPECT_EQ((*stats)["image_token_id"], 8000);  // kjv_sp.model's vocabulary size
  EXPECT_EQ((*stats)["eot_id"], 2);
  for (const char* f : {"mmmu.bin", "mmmu.idx", "mmmu_mask.bin", "mmmu_images.idx", "images.u8",
                        "images.json", "questions.jsonl", "decode.json", "stats.json"})
    EXPECT_TRUE(fs::exists(root_ / "out" / f)) << f;
  // 28 x 28 x 3 bytes an image, CLIP's crop without padding to a square.
  EXPECT_EQ(fs::file_size(root_ / "out/images.u8"), 10u * 28 * 28 * 3);
  const json meta = json::parse(std::ifstream(root_ / "out/images.json"));
  EXPECT_EQ(meta["pad_to_square"], false);
  EXPECT_EQ(meta["sources"][0], "images/validation_Art_1_1.png");
  Result<formats::IndexedDataset> images = formats::IndexedDataset::Open(Out() + "/mmmu_images");
  ASSERT_TRUE(images.ok());
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ(*images->ReadSequence(i), std::vector<int32_t>{int32_t(i)});
  // The question lines come through verbatim, in order.
  std::ifstream a(options_.questions), b(root_ / "out/questions.jsonl");
  std::string la, lb;
  int lines = 0;
  while (std::getline(a, la) && std::getline(b, lb)) EXPECT_EQ(la, lb) << ++lines;
}

TEST_F(MmmuDataTest, ABadLineIsNamedAsFileAndLineAndLeavesNothing) {
  SetLine(3, "{\"id\": \"validation_Economics_1\", \"subject\": ");
  Result<json> r = MmmuDataToDirectory(options_, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  // The user's file: exit 2; the column where Python's json.loads puts the error
  // ("Expecting value: line 1 column 45", the end of the cut line).
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind(options_.questions + ":3:45: not valid JSON: ", 0), 0u)
      << r.status().message();
  EXPECT_TRUE(OutEmpty());
}

TEST_F(MmmuDataTest, AMissingImageIsNamedWithItsQuestionAndLeavesNothing) {
  fs::remove(root_ / "sample/images/validation_Math_1_1.png");
  Result<json> r = MmmuDataToDirectory(options_, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(options_.questions + ":4"), std::string::npos) << m;
  EXPECT_NE(m.find("validation_Math_1_1.png"), std::string::npos) << m;
  EXPECT_TRUE(OutEmpty());
}

TEST_F(MmmuDataTest, AnUndecodableImageIsNamedWithItsQuestion) {
  std::ofstream(root_ / "sample/images/validation_Math_1_1.png") << "not a png";
  Result<json> r = MmmuDataToDirectory(options_, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("validation_Math_1_1.png"), std::string::npos) << m;
  EXPECT_NE(m.find("validation_Math_1"), std::string::npos) << m;
  EXPECT_TRUE(OutEmpty());
}

TEST_F(MmmuDataTest, AQuestionSpellingTheImageTagIsRefused) {
  SetLine(4, R"({"id": "validation_Math_1", "subject": "Math", "question_type": "open", )"
             R"("question": "How many circles are in <image>?", "options": [], "answer": "3", )"
             R"("images": ["images/validation_Math_1_1.png"]})");
  Result<json> r = MmmuDataToDirectory(options_, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(options_.questions +
                                      ":4 (validation_Math_1): the prompt holds 2 \"<image>\""),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(OutEmpty());
}

TEST_F(MmmuDataTest, AnImagePathLeavingTheFolderIsRefused) {
  fs::create_directories(root_ / "elsewhere");
  fs::copy(root_ / "sample/images/validation_Math_1_1.png", root_ / "elsewhere/m.png");
  SetLine(4, R"({"id": "validation_Math_1", "subject": "Math", "question_type": "open", )"
             R"("question": "How many circles?", "options": [], "answer": "3", )"
             R"("images": ["../elsewhere/m.png"]})");
  Result<json> r = MmmuDataToDirectory(options_, Out(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(options_.questions + ":4 (validation_Math_1): image_1 "),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(OutEmpty());
}

TEST(MmmuDataRuleTest, CheckRejectsBadParameters) {
  engine::RuleRegistry rules;
  RegisterBuiltinRules(rules);
  const engine::Rule* rule = rules.Find("mmmu_data");
  ASSERT_NE(rule, nullptr);
  const auto errors = rule->Check({{"split", "a/b"}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].param, "split");
  // The counts' ranges are declared; the engine checks them where the BENCHFILE is read.
  std::map<std::string, int64_t> mins;
  for (const engine::ParamSpec& s : rule->params()) mins[s.name] = s.min;
  EXPECT_EQ(mins.at("image_size"), 1);
  EXPECT_EQ(mins.at("image_tokens"), 1);
  EXPECT_EQ(mins.at("threads"), 0);
}

}  // namespace
}  // namespace bm::rules::llava
