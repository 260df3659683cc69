#include "base/sealed_text.h"

#include <gtest/gtest.h>

#include "base/digest.h"

namespace bm {
namespace {

TEST(SealedTextTest, TheSealIsTheDigestOfTheBodyAndIsChecked) {
  const std::string body = "{\"lr\": 0.003}\n";
  const std::string text = SealText("benchmake-x", 2, body);
  EXPECT_EQ(text, "benchmake-x 2 " + DigestOf(body).Hex() + "\n" + body);
  Result<UnsealedText> r = UnsealText(text, "benchmake-x", 2, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->version, 2);
  EXPECT_EQ(r->body, body);

  // 0.003 -> 0.002: one bit, still JSON.
  std::string flipped = text;
  flipped[flipped.find("0.003") + 4] ^= 0x01;
  r = UnsealText(flipped, "benchmake-x", 2, 2);
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "damaged: its bytes do not match its digest");
  // The seal itself damaged, cut, or missing.
  std::string seal = text;
  seal[14] = seal[14] == 'a' ? 'b' : 'a';
  EXPECT_EQ(UnsealText(seal, "benchmake-x", 2, 2).status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(UnsealText(text.substr(0, text.size() - 3), "benchmake-x", 2, 2).status().code(),
            ErrorCode::kCorrupt);
  EXPECT_EQ(UnsealText("benchmake-x 2\n" + body, "benchmake-x", 2, 2).status().code(),
            ErrorCode::kCorrupt);
}

TEST(SealedTextTest, VersionsBeforeTheSealAreReadAndNewerOnesRefused) {
  Result<UnsealedText> r = UnsealText("benchmake-x 1\nold body\n", "benchmake-x", 2, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->version, 1);
  EXPECT_EQ(r->body, "old body\n");
  // A version 1 never carried a digest.
  EXPECT_EQ(UnsealText("benchmake-x 1 00\nold\n", "benchmake-x", 2, 2).status().code(),
            ErrorCode::kCorrupt);
  r = UnsealText("benchmake-x 3 00\n{}", "benchmake-x", 2, 2);
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(r.status().message(), "version 3 (this benchmake reads 2)");
}

TEST(SealedTextTest, NoHeaderIsCorrupt) {
  for (const char* text : {"", "benchmake-x", "benchmake-x 2", "benchmake-y 2 00\n",
                           "benchmake-xx 2 00\n", "benchmake-x two\n", "benchmake-x 0\n",
                           "benchmake-x -1\n", "benchmake-x 99999999999999999999\n"}) {
    Result<UnsealedText> r = UnsealText(text, "benchmake-x", 2, 2);
    EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt) << text;
  }
}

}  // namespace
}  // namespace bm
