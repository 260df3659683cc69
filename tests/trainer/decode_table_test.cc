// trainer/eval/decode_table.h: the file's errors, and the decoding rules on a table written
// here by hand (the whole table against python sentencepiece: mmmu_data_sentencepiece).
#include "trainer/eval/decode_table.h"

#include <gtest/gtest.h>

namespace bm::train::eval {
namespace {

using nlohmann::json;

json Table(json pieces, int version = 1) {
  return {{"format", "benchmake-decode-table"},
          {"version", version},
          {"eos_id", 2},
          {"strip_leading_space", true},
          {"pieces", std::move(pieces)}};
}

TEST(DecodeTableTest, SkipsSpecialsStripsTheFirstSpaceAndReplacesStrayBytes) {
  // 0 <unk>, 1 <s>, 2 </s>, 3 byte 0xE2, 4 byte 0x82, 5 byte 0xAC, 6 "▁And", 7 "▁", 8 "x"
  Result<DecodeTable> t = DecodeTable::FromJson(
      Table({nullptr, nullptr, nullptr, 0xE2, 0x82, 0xAC, " And", " ", "x"}), "t");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->eos_id(), 2);
  EXPECT_EQ(t->Decode(std::vector<int32_t>{1, 6, 6, 2}), "And And");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{7, 6}), " And");              // one space dropped
  EXPECT_EQ(t->Decode(std::vector<int32_t>{3, 4, 5, 6}), "\u20AC And");  // E2 82 AC = €
  EXPECT_EQ(t->Decode(std::vector<int32_t>{3, 4}), "\uFFFD\uFFFD");      // one per byte
  EXPECT_EQ(t->Decode(std::vector<int32_t>{8, 0, 6, 99, -1}), "x And");  // unknown ids skipped
  EXPECT_EQ(t->Decode(std::vector<int32_t>{}), "");
}

TEST(DecodeTableTest, ReplaceInvalidUtf8KeepsValidSequences) {
  EXPECT_EQ(ReplaceInvalidUtf8("a\xC3\xA9z"), "a\xC3\xA9z");              // é
  EXPECT_EQ(ReplaceInvalidUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");  // 😀
  EXPECT_EQ(ReplaceInvalidUtf8("\xC0\xAF"), "\uFFFD\uFFFD");              // overlong
  EXPECT_EQ(ReplaceInvalidUtf8("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");    // a surrogate
}

TEST(DecodeTableTest, RefusesANewerVersionAndBadEntriesNamingThem) {
  Result<DecodeTable> newer = DecodeTable::FromJson(Table(json::array(), 2), "d.json");
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("d.json: decode table version 2; this "
                                          "benchmake-train reads version 1"),
            std::string::npos)
      << newer.status().message();
  Result<DecodeTable> bad = DecodeTable::FromJson(Table({"a", 300}), "d.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "d.json: pieces[1] is 300; an entry is null, a byte 0..255 or a string");
  Result<DecodeTable> other = DecodeTable::FromJson(json{{"format", "x"}}, "d.json");
  ASSERT_FALSE(other.ok());
  Result<DecodeTable> missing = DecodeTable::Read("/nonexistent/decode.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace bm::train::eval
