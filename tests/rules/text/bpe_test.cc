#include "rules/text/bpe.h"

#include <gtest/gtest.h>

#include <random>

#include "rules/text/tiktoken_ranks.h"
#include "tests/rules/text/test_data.h"

namespace bm::text {
namespace {

const Vocabulary& Gpt2Vocab() {
  static const Vocabulary* v = [] {
    auto r = LoadTiktokenRanks(testing::Gpt2RankFile());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new Vocabulary(std::move(*r));
  }();
  return *v;
}

TEST(BpeTest, LinearAndHeapMergeAgree) {
  std::mt19937 rng(1);
  const std::string alphabet = "aaabbe tnsrh!?.'";
  for (int i = 0; i < 3000; ++i) {
    std::string piece(1 + rng() % 60, ' ');
    for (char& c : piece) c = alphabet[rng() % alphabet.size()];
    std::vector<int32_t> linear, heap;
    BytePairEncodeLinear(piece, Gpt2Vocab().ranks, &linear);
    BytePairEncodeHeap(piece, Gpt2Vocab().ranks, &heap);
    ASSERT_EQ(linear, heap) << piece;
  }
}

TEST(BpeTest, LongPieceIsFast) {
  std::vector<int32_t> out;
  BytePairEncode(std::string(1 << 20, '!'), Gpt2Vocab().ranks, &out);
  std::string back;
  for (int32_t id : out) back += Gpt2Vocab().tokens[id];
  EXPECT_EQ(back, std::string(1 << 20, '!'));
}

TEST(BpeTest, KnownMerges) {
  std::vector<int32_t> out;
  BytePairEncode("Hello", Gpt2Vocab().ranks, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{15496}));
  EXPECT_EQ(Gpt2Vocab().ranks.Find("!"), 0u);  // GPT-2's bytes_to_unicode order
  EXPECT_EQ(Gpt2Vocab().ranks.Find(std::string(1, '\0')), 188u);
  EXPECT_EQ(Gpt2Vocab().size(), 50256u);
}

TEST(TiktokenRanksTest, ParseErrors) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) {
    const std::string raw(1, static_cast<char>(b));
    // base64 of one byte: two characters and "==".
    const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    all_bytes +=
        std::string{abc[b >> 2], abc[(b & 3) << 4], '=', '='} + " " + std::to_string(b) + "\n";
  }
  EXPECT_TRUE(ParseTiktokenRanks(all_bytes, "t").ok());
  EXPECT_EQ(ParseTiktokenRanks(all_bytes + "YWI= 256\nYWI= 257\n", "t").status().code(),
            ErrorCode::kCorrupt);  // token repeated
  EXPECT_EQ(ParseTiktokenRanks(all_bytes + "YWI= 5\n", "t").status().code(),
            ErrorCode::kCorrupt);  // rank repeated
  EXPECT_EQ(ParseTiktokenRanks(all_bytes + "Y$I= 300\n", "t").status().code(),
            ErrorCode::kCorrupt);  // bad base64
  EXPECT_EQ(ParseTiktokenRanks(all_bytes + "YWI=\n", "t").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(ParseTiktokenRanks("IQ== 0\n", "t").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(*DecodeBase64("aGk="), "hi");
  EXPECT_EQ(*DecodeBase64("aGVsbG8h"), "hello!");
  EXPECT_FALSE(DecodeBase64("a=Gk").ok());
}

}  // namespace
}  // namespace bm::text
