#include "rules/text/encoding.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "tests/rules/text/test_data.h"

namespace bm::text {
namespace {

using testing::Gpt2RankFile;
using testing::ReadFile;
using testing::SourcePath;

const Encoding& Gpt2() {
  static const Encoding* enc = [] {
    auto e = Encoding::Load("gpt2", Gpt2RankFile());
    EXPECT_TRUE(e.ok()) << e.status().message();
    return new Encoding(std::move(*e));
  }();
  return *enc;
}

struct GoldenCase {
  std::string name, text;
  std::vector<int32_t> ids;
};

std::vector<GoldenCase> LoadCases() {
  const auto j =
      nlohmann::json::parse(ReadFile(SourcePath("tests/rules/testdata/tokenizer/cases.json")));
  std::vector<GoldenCase> cases;
  for (const auto& c : j) cases.push_back({c["name"], c["text"], c["ids"]});
  return cases;
}

TEST(EncodingTest, MatchesTiktokenOnGoldenCases) {
  const auto cases = LoadCases();
  ASSERT_GE(cases.size(), 200u);
  for (const auto& c : cases) {
    EXPECT_EQ(Gpt2().Encode(c.text), c.ids) << c.name << ": " << c.text;
  }
}

TEST(EncodingTest, MatchesTiktokenOnCorpusSlice) {
  const std::string corpus = ReadFile(SourcePath("data/kjv.txt"));
  ASSERT_GT(corpus.size(), 262144u);
  std::vector<int32_t> golden;
  std::istringstream in(ReadFile(SourcePath("tests/rules/testdata/tokenizer/kjv_slice.ids")));
  for (int32_t id; in >> id;) golden.push_back(id);
  ASSERT_GT(golden.size(), 60000u);
  EXPECT_EQ(Gpt2().Encode(std::string_view(corpus).substr(0, 262144)), golden);
}

TEST(EncodingTest, RoundTripsEveryGoldenInput) {
  for (const auto& c : LoadCases()) {
    EXPECT_EQ(*Gpt2().Decode(Gpt2().Encode(c.text)), c.text) << c.name;
  }
}

TEST(EncodingTest, InvalidUtf8RoundTripsAndNeverCrashes) {
  const std::vector<std::string> inputs = {"\xff",
                                           "abc\x80\x80 def",
                                           "\xc3",
                                           "\xe2\x82",
                                           "\xf0\x9f\x98",
                                           "\xed\xa0\x80",
                                           "\xc0\xaf overlong",
                                           "\xf5\x80\x80\x80",
                                           "x\xfe\xfe\xfey",
                                           std::string("nul\0byte", 8)};
  for (const auto& s : inputs) {
    EXPECT_EQ(*Gpt2().Decode(Gpt2().Encode(s)), s);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string s(1 + rng() % 64, '\0');
    for (char& ch : s) ch = static_cast<char>(rng());
    EXPECT_EQ(*Gpt2().Decode(Gpt2().Encode(s)), s);
  }
}

TEST(EncodingTest, ParallelEncodingGivesTheSameIds) {
  const std::string corpus = ReadFile(SourcePath("data/kjv.txt")).substr(0, 1 << 20);
  const auto serial = Gpt2().Encode(corpus);
  for (int threads : {2, 3, 8}) EXPECT_EQ(Gpt2().EncodeParallel(corpus, threads), serial);
}

// Every line boundary of this text is a candidate cut, and runs of white
// space end at many of them: a cut inside "\n\n" or "  \n" would change ids.
TEST(EncodingTest, ParallelCutsNeverSplitWhiteSpaceRuns) {
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    text += i % 3 == 0 ? "bread.\n\n1 Sam\n" : (i % 3 == 1 ? "x  \nY's \n" : "7\n\n\n  z\n");
  }
  const auto serial = Gpt2().Encode(text);
  for (int threads : {2, 8}) EXPECT_EQ(Gpt2().EncodeParallel(text, threads), serial);
}

TEST(EncodingTest, SpecialTokenTextIsOrdinaryAndEotDecodes) {
  EXPECT_EQ(Gpt2().eot_id(), 50256);
  EXPECT_EQ(Gpt2().vocab_size(), 50257u);
  EXPECT_GT(Gpt2().Encode("<|endoftext|>").size(), 1u);
  const std::vector<int32_t> eot = {50256};
  EXPECT_EQ(*Gpt2().Decode(eot), "<|endoftext|>");
}

TEST(EncodingTest, DecodeRejectsUnknownIds) {
  for (int32_t bad : {-1, 50257, 1 << 30}) {
    const std::vector<int32_t> ids = {15496, bad};
    auto r = Gpt2().Decode(ids);
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(EncodingTest, BytesEncodingIsTheByteValues) {
  auto enc = Encoding::Load("bytes", "");
  ASSERT_TRUE(enc.ok());
  EXPECT_EQ(enc->vocab_size(), 257u);
  EXPECT_EQ(enc->eot_id(), 256);
  const std::string s = "Hi \xff\n";
  EXPECT_EQ(enc->Encode(s), (std::vector<int32_t>{'H', 'i', ' ', 255, '\n'}));
  EXPECT_EQ(*enc->Decode(enc->Encode(s)), s);
}

TEST(EncodingTest, LoadErrors) {
  EXPECT_EQ(Encoding::Load("nope", Gpt2RankFile()).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Encoding::Load("gpt2", "/nonexistent/gpt2.tiktoken").status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(Encoding::NameForRankFile("/x/gpt2.tiktoken"), "gpt2");
  EXPECT_EQ(Encoding::NameForRankFile("r50k_base.tiktoken"), "gpt2");
  EXPECT_EQ(Encoding::NameForRankFile("cl100k_base.tiktoken"), "cl100k_base");
  EXPECT_EQ(Encoding::NameForRankFile("mine.tiktoken"), "");
}

TEST(EncodingTest, CustomPatternRunsThroughIcu) {
  // A digit-triple pattern, as cl100k_base splits numbers.
  auto enc = Encoding::Custom("t", ByteVocabulary(), R"(\p{N}{1,3}|\p{L}+|\s+|[^\s\p{L}\p{N}]+)",
                              {{"<|endoftext|>", 256}});
  ASSERT_TRUE(enc.ok()) << enc.status().message();
  EXPECT_EQ(enc->Encode("12345 ab").size(), 8u);
  EXPECT_FALSE(Encoding::Custom("t", ByteVocabulary(), "(", {{"<|endoftext|>", 256}}).ok());
  EXPECT_FALSE(Encoding::Custom("t", ByteVocabulary(), "a", {}).ok());  // no end-of-text
  EXPECT_FALSE(Encoding::Custom("t", ByteVocabulary(), "a", {{"<|endoftext|>", 65}}).ok());
}

}  // namespace
}  // namespace bm::text
