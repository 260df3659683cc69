// LLaVA's templates and masks on data/kjv_sp.model (a LLaMA-style BPE model).
// Expected ids: the segments' ids from Debian's python3-sentencepiece
// (EncodeAsIds on data/kjv_sp.model; "no prefix" = the same model with
// NormalizerSpec.add_dummy_prefix off), assembled by hand the way LLaVA's
// preprocess_v1 / preprocess_plain / tokenizer_image_token assemble them.
// Expected masks: counted by hand from LLaVA's round arithmetic, per case.
#include "rules/llava/llava_template.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace bm::rules::llava {
namespace {

constexpr int32_t kBos = 1, kEos = 2, kImg = 8000;

// "<system prompt> USER: " (54 ids; the last, 7928, is the lone "▁" of the
// trailing space).
const std::vector<int32_t> kSysUser = {
    287,  1373, 281,  1348, 262,  6948, 534,  269,  270,  380,  923,  423, 648, 2800,
    2919, 578,  675,  810,  1979, 597,  478,  7951, 456,  1979, 597,  478, 846, 618,
    1627, 967,  7943, 6796, 3309, 7943, 270,  291,  591,  734,  768,  432, 292, 261,
    534,  269,  7984, 7935, 6022, 7951, 1202, 7967, 7979, 7963, 7956, 7928};
// "<system prompt> USER: Who? ASSISTANT: God" (66 ids; "...ASSISTANT: " alone is
// the same 65 then "▁" instead of "▁God" (391)).
const std::vector<int32_t> kRound0 = {
    287,  1373, 281,  1348, 262,  6948, 534,  269,  270,  380,  923,  423, 648,  2800,
    2919, 578,  675,  810,  1979, 597,  478,  7951, 456,  1979, 597,  478, 846,  618,
    1627, 967,  7943, 6796, 3309, 7943, 270,  291,  591,  734,  768,  432, 292,  261,
    534,  269,  7984, 7935, 6022, 7951, 1202, 7967, 7979, 7963, 7956, 998, 7972, 287,
    7967, 7967, 7955, 7967, 7962, 7953, 7986, 7962, 7956, 391};
// "\nWho made it? ASSISTANT: God" with the dummy prefix (18 ids: "▁", <0x0A>, ...).
const std::vector<int32_t> kWhoMade = {7928, 13,   7981, 433,  547,  359,  7972, 287,  7967,
                                       7967, 7955, 7967, 7962, 7953, 7986, 7962, 7956, 391};
// "USER: And then? ASSISTANT: Light": with the prefix (20 ids, "▁U" "S" "E" "R")
// and without it (19 ids, "US" "E" "R").
const std::vector<int32_t> kRound1Prefix = {1202, 7967, 7979, 7963, 7956, 300,  645,
                                            7972, 287,  7967, 7967, 7955, 7967, 7962,
                                            7953, 7986, 7962, 7956, 320,  447};
const std::vector<int32_t> kRound1NoPrefix = {7867, 7979, 7963, 7956, 300,  645,  7972,
                                              287,  7967, 7967, 7955, 7967, 7962, 7953,
                                              7986, 7962, 7956, 320,  447};

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Runs of zeros and ones: Runs({3, 2, 1}) = 0 0 0 1 1 0.
std::vector<uint8_t> Runs(std::initializer_list<int> lengths) {
  std::vector<uint8_t> out;
  uint8_t v = 0;
  for (int n : lengths) {
    out.insert(out.end(), static_cast<size_t>(n), v);
    v = 1 - v;
  }
  return out;
}

class LlavaTemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto sp = text::SentencePieceTokenizer::Open(BENCHMAKE_TEST_SOURCE_DIR "/data/kjv_sp.model");
    ASSERT_TRUE(sp.ok()) << sp.status().message();
    sp_ = std::move(*sp);
  }
  TemplateOptions Options(Template kind, bool legacy) const {
    TemplateOptions o;
    o.kind = kind;
    o.legacy = legacy;
    o.image_token_id = kImg;
    return o;
  }
  std::unique_ptr<text::SentencePieceTokenizer> sp_;
};

TEST_F(LlavaTemplateTest, LlamaTokenizeCutsAtSpecialTokens) {
  // "a" = 262, "b" = 273 with the prefix, 7948 without.
  EXPECT_EQ(LlamaTokenize(*sp_, "a</s>b", true), (std::vector<int32_t>{kBos, 262, kEos, 273}));
  EXPECT_EQ(LlamaTokenize(*sp_, "a</s>b", false), (std::vector<int32_t>{kBos, 262, kEos, 7948}));
  EXPECT_EQ(LlamaTokenize(*sp_, "</s>b", false), (std::vector<int32_t>{kBos, kEos, 7948}));
  EXPECT_EQ(LlamaTokenize(*sp_, "<s>", true), (std::vector<int32_t>{kBos, kBos}));
  EXPECT_EQ(LlamaTokenize(*sp_, "", false), (std::vector<int32_t>{kBos}));
}

TEST_F(LlavaTemplateTest, ImagePlaceholderBetweenChunks) {
  // Each chunk is its own tokenizer call: "b" after the image gets its prefix.
  EXPECT_EQ(TokenizeWithImages(*sp_, "a<image>b", false, kImg),
            (std::vector<int32_t>{kBos, 262, kImg, 273}));
  EXPECT_EQ(TokenizeWithImages(*sp_, "<image>", false, kImg), (std::vector<int32_t>{kBos, kImg}));
}

TEST_F(LlavaTemplateTest, ImageTagMovesToTheFront) {
  std::vector<Turn> turns = {
      {"human", "Look <image> here  "}, {"gpt", "no tag"}, {"human", "<image>"}};
  MoveImageTagToFront(&turns);
  EXPECT_EQ(turns[0].value, "<image>\nLook  here");
  EXPECT_EQ(turns[1].value, "no tag");
  EXPECT_EQ(turns[2].value, "<image>");
}

TEST_F(LlavaTemplateTest, PlainMasksBosAndImage) {
  // "<image>" + "In the beginning" + "\n": ▁In ▁the ▁beginning <0x0A>.
  auto t = TokenizeSample(*sp_, {{"human", "Render this <image>"}, {"gpt", "In the beginning"}},
                          true, Options(Template::kPlain, false));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ids, (std::vector<int32_t>{kBos, kImg, 1044, 261, 2072, 13}));
  EXPECT_EQ(t->mask, Runs({2, 4}));
  EXPECT_EQ(t->images, 1);
  EXPECT_FALSE(t->mismatch);
}

TEST_F(LlavaTemplateTest, VicunaOneRoundWithImage) {
  // "SYS USER: <image>\nWho made it? ASSISTANT: God</s>": BOS, chunk 1, the
  // image, chunk 2 (its own prefix "▁", BOS dropped), </s>: 1+54+1+18+1 = 75.
  // round_len = 1+54+1+18 = 74; instruction_len = 74 - 2 = 72 (the
  // instruction ends with "▁" where the round has "▁God"): positions 0..72
  // masked, "▁God" and </s> are labels; cur_len = 75 = total.
  auto t = TokenizeSample(*sp_, {{"human", "Who made it?\n<image>"}, {"gpt", "God"}}, true,
                          Options(Template::kVicunaV1, false));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ids, Cat({{kBos}, kSysUser, {kImg}, kWhoMade, {kEos}}));
  EXPECT_EQ(t->mask, Runs({73, 2}));
  EXPECT_EQ(t->images, 1);
  EXPECT_FALSE(t->mismatch);
}

const std::vector<Turn> kTwoRounds = {
    {"human", "Who?"}, {"gpt", "God"}, {"human", "And then?"}, {"gpt", "Light"}};

TEST_F(LlavaTemplateTest, VicunaTwoRoundsLegacy) {
  // legacy: the second round's "USER" keeps its "▁" after </s> (20 ids).
  // Round 0: cur_len 1; instruction_len = 1+66-2 = 65 → 0..65 masked; "▁God",
  // </s> labels; cur_len = 1 + 67 = 68. Round 1: round_len = 1+20 = 21,
  // instruction_len = 1+19-2 = 18 → 68..85 masked; "▁L" "ight" </s> labels.
  auto t = TokenizeSample(*sp_, kTwoRounds, false, Options(Template::kVicunaV1, true));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ids, Cat({{kBos}, kRound0, {kEos}, kRound1Prefix, {kEos}}));
  EXPECT_EQ(t->mask, Runs({66, 2, 18, 3}));
  EXPECT_FALSE(t->mismatch);
}

TEST_F(LlavaTemplateTest, VicunaTwoRoundsNotLegacy) {
  // Not legacy: "USER" after </s> has no "▁" ("US" "E" "R", 19 ids), and
  // LLaVA takes one off both lengths of round 1: round_len 20, instruction_len
  // 17 → 68..84 masked; labels "▁L" "ight" </s>; cur_len 88 = total.
  auto t = TokenizeSample(*sp_, kTwoRounds, false, Options(Template::kVicunaV1, false));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ids, Cat({{kBos}, kRound0, {kEos}, kRound1NoPrefix, {kEos}}));
  EXPECT_EQ(t->mask, Runs({66, 2, 17, 3}));
  EXPECT_FALSE(t->mismatch);
}

TEST_F(LlavaTemplateTest, FirstTurnNotFromHumanIsDropped) {
  auto t = TokenizeSample(*sp_, {{"gpt", "ignored"}, {"human", "Who?"}, {"gpt", "God"}}, false,
                          Options(Template::kVicunaV1, true));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ids, Cat({{kBos}, kRound0, {kEos}}));
  EXPECT_EQ(t->mask, Runs({66, 2}));
}

TEST_F(LlavaTemplateTest, MismatchMasksTheWholeSample) {
  // The answer holds " ASSISTANT: ": round 0 splits into 3 parts, the walk
  // stops at cur_len 1, which is not the length: every label masked.
  auto t = TokenizeSample(*sp_, {{"human", "Who?"}, {"gpt", "God ASSISTANT: no"}}, false,
                          Options(Template::kVicunaV1, false));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->mismatch);
  EXPECT_GT(t->ids.size(), 60u);
  EXPECT_EQ(std::count(t->mask.begin(), t->mask.end(), 1), 0);
  // Past model_max_length the check does not apply (LLaVA's cur_len < max).
  TemplateOptions o = Options(Template::kVicunaV1, false);
  o.model_max_length = 1;
  t = TokenizeSample(*sp_, {{"human", "Who?"}, {"gpt", "God ASSISTANT: no"}}, false, o);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->mismatch);
  EXPECT_EQ(t->mask, Runs({static_cast<int>(t->ids.size())}));
}

TEST_F(LlavaTemplateTest, BadConversationsAreErrors) {
  auto t = TokenizeSample(*sp_, {{"human", "a"}, {"human", "b"}}, false,
                          Options(Template::kVicunaV1, false));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("conversations[1]"), std::string::npos)
      << t.status().message();
  t = TokenizeSample(*sp_, {{"bot", "a"}}, false, Options(Template::kVicunaV1, false));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("\"bot\""), std::string::npos) << t.status().message();
  t = TokenizeSample(*sp_, {{"human", "<image>"}, {"gpt", "a"}, {"gpt", "b"}}, true,
                     Options(Template::kPlain, false));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("exactly 2 turns"), std::string::npos);
  t = TokenizeSample(*sp_, {{"human", "<image>"}, {"gpt", "a"}}, false,
                     Options(Template::kPlain, false));
  ASSERT_FALSE(t.ok());
  EXPECT_FALSE(ParseTemplate("llama_2").ok());
  EXPECT_EQ(*ParseTemplate("v1"), Template::kVicunaV1);
}

}  // namespace
}  // namespace bm::rules::llava
