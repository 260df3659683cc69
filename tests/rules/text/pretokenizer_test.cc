#include "rules/text/pretokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rules/text/line_regex.h"
#include "tests/rules/text/test_data.h"

namespace bm::text {
namespace {

class Collect final : public PieceSink {
 public:
  void Piece(std::string_view piece) override { pieces.emplace_back(piece); }
  std::vector<std::string> pieces;
};

std::vector<std::string> Split(const Pretokenizer& p, std::string_view text) {
  Collect c;
  p.Split(text, c);
  return c.pieces;
}

TEST(PretokenizerTest, Gpt2Pieces) {
  Gpt2Pretokenizer p;
  EXPECT_EQ(Split(p, "Hello world's  2024!!\n\n x"),
            (std::vector<std::string>{"Hello", " world", "'s", " ", " 2024", "!!", "\n\n", " x"}));
  EXPECT_EQ(Split(p, "a   "), (std::vector<std::string>{"a", "   "}));
  EXPECT_EQ(Split(p, "\tb"), (std::vector<std::string>{"\t", "b"}));
  EXPECT_EQ(Split(p, " \xc2\xa0x"), (std::vector<std::string>{" ", "\xc2\xa0", "x"}));
  EXPECT_TRUE(Split(p, "").empty());
}

// The hand-written scanner and ICU's regex engine running GPT-2's pattern must
// cut every golden input identically.
TEST(PretokenizerTest, ScannerAgreesWithIcuRegexOnGoldens) {
  Gpt2Pretokenizer fast;
  auto regex = RegexPretokenizer::Create(kGpt2Pattern);
  ASSERT_TRUE(regex.ok()) << regex.status().message();
  const auto cases = nlohmann::json::parse(
      testing::ReadFile(testing::SourcePath("tests/rules/testdata/tokenizer/cases.json")));
  for (const auto& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(Split(fast, text), Split(**regex, text)) << c["name"];
  }
  const std::string corpus =
      testing::ReadFile(testing::SourcePath("data/kjv.txt")).substr(0, 100000);
  EXPECT_EQ(Split(fast, corpus), Split(**regex, corpus));
}

// Invalid bytes cut the text as U+FFFD would: replace each bad byte by
// U+FFFD, split both, and compare the piece lengths in characters.
TEST(PretokenizerTest, InvalidBytesSplitLikeReplacementCharacter) {
  Gpt2Pretokenizer p;
  const std::string bad = "ab\xff\xfe cd \x80 12\xc3 x";
  const std::string replaced = "ab\xef\xbf\xbd\xef\xbf\xbd cd \xef\xbf\xbd 12\xef\xbf\xbd x";
  auto a = Split(p, bad);
  auto b = Split(p, replaced);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    std::string expanded;
    for (unsigned char ch : a[i]) {
      expanded += (ch >= 0x80) ? std::string("\xef\xbf\xbd") : std::string(1, ch);
    }
    EXPECT_EQ(expanded, b[i]) << i;
  }
}

TEST(PretokenizerTest, TranslatesWhiteSpaceClasses) {
  EXPECT_EQ(TranslatePatternForIcu(R"(\s+(?!\S)|[^\s\p{L}]|\\s)"),
            R"(\p{White_Space}+(?!\P{White_Space})|[^\p{White_Space}\p{L}]|\\s)");
  EXPECT_FALSE(RegexPretokenizer::Create("(unclosed").ok());
}

TEST(LineRegexTest, SearchesOneLine) {
  auto re = LineRegex::Create("^([1-3] )?[A-Z][a-z]+( [A-Za-z]+)* [0-9]+$");
  ASSERT_TRUE(re.ok()) << re.status().message();
  EXPECT_TRUE(re->Search("Genesis 1"));
  EXPECT_TRUE(re->Search("1 Samuel 3"));
  EXPECT_TRUE(re->Search("Song of Solomon 2"));
  EXPECT_FALSE(re->Search("1 In the beginning God created the heaven and the earth."));
  EXPECT_FALSE(re->Search(""));
  EXPECT_FALSE(re->Search("\xff\xfe"));
  auto space = LineRegex::Create("^\\s+$");  // \s is White_Space: NBSP counts
  EXPECT_TRUE(space->Search("\xc2\xa0 "));
  EXPECT_FALSE(LineRegex::Create("([").ok());
}

}  // namespace
}  // namespace bm::text
