#include "rules/documents.h"

#include <gtest/gtest.h>

namespace bm::rules {
namespace {

Status Parse(std::string_view contents, std::string_view origin, Format format,
             std::vector<Document>* docs) {
  return ParseDocuments(contents, origin, format, ReadOptions(), docs);
}

// Python's json.loads of the same text: "Expecting ',' delimiter: line 2 column 23" (our
// column is where the parser stopped: after the unexpected "output").
TEST(DocumentsTest, JsonListSyntaxErrorNamesLineAndColumn) {
  std::vector<Document> docs;
  const Status s = Parse(
      "[{\"instruction\": \"i\", \"output\": \"o\"},\n {\"instruction\": \"i2\" \"output\": 5}]\n",
      "a.json", Format::kAlpaca, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("a.json:2:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not valid JSON"), std::string::npos) << s.message();
}

// Python's json.loads(bytes) refuses the first line (UnicodeDecodeError); it reads the
// second, but its str cannot be encoded as UTF-8 ("surrogates not allowed"), which every
// tokenizer needs. The error says which line and why.
TEST(DocumentsTest, InvalidUtf8AndLoneSurrogatesNameLineAndReason) {
  std::vector<Document> docs;
  Status s =
      Parse("{\"text\": \"ok\"}\n\n{\"text\": \"a\xff\"}\n", "d.jsonl", Format::kJsonl, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("d.jsonl:3:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("UTF-8"), std::string::npos) << s.message();
  s = Parse("{\"text\": \"ok\"}\n{\"text\": \"a\\ud800b\"}\n", "d.jsonl", Format::kJsonl, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("d.jsonl:2:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("surrogate"), std::string::npos) << s.message();
}

// A bad byte at the end of a long line: the error still names the line and the column
// (hand count: 11 bytes of '{"text": "a' before the run, then the run, then the byte),
// and quotes only the end of the string it was reading, not the whole line.
TEST(DocumentsTest, ErrorAtTheEndOfALongLineIsShort) {
  const std::string line = "{\"text\": \"a" + std::string(1 << 20, 'b') + "\x01\"}\n";
  std::vector<Document> docs;
  const Status s = Parse("{\"text\": \"ok\"}\n" + line, "d.jsonl", Format::kJsonl, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind(fmt::format("d.jsonl:2:{}: not valid JSON", 11 + (1 << 20) + 1), 0),
            0u)
      << s.message().substr(0, 300);
  EXPECT_LT(s.message().size(), 400u);
  EXPECT_NE(s.message().find("bbb<U+0001>'"), std::string::npos) << s.message().substr(0, 300);
}

// A number beyond a double (Python's json reads it as inf; nlohmann refuses it, with no
// position): the error still names the line, here the third.
TEST(DocumentsTest, NumberOutOfRangeNamesTheLine) {
  std::vector<Document> docs;
  const Status s =
      Parse("{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"text\": \"c\", \"score\": 1e999}\n",
            "d.jsonl", Format::kJsonl, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "d.jsonl:3: not valid JSON: number overflow parsing '1e999'");
}

// A field that is there but null (Python's json: None) is named as null, not as missing.
TEST(DocumentsTest, NullTextIsNamedAsNull) {
  std::vector<Document> docs;
  const Status s = Parse("{\"text\": \"a\"}\n{\"text\": null}\n", "d.jsonl", Format::kJsonl, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "d.jsonl:2: \"text\" is null, not a string");
}

// A JSON list saved with a UTF-8 byte order mark (Windows editors do): RFC 8259
// section 8.1 lets a parser ignore it, and Python's json.loads(bytes) does.
TEST(DocumentsTest, ByteOrderMarkBeforeAJsonList) {
  std::vector<Document> docs;
  const Status s = Parse("\xEF\xBB\xBF[{\"instruction\": \"i\", \"output\": \"o\"}]\n", "a.json",
                         Format::kAlpaca, &docs);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(docs.size(), 1u);
  ASSERT_EQ(docs[0].segments.size(), 2u);
  EXPECT_EQ(docs[0].segments[1].text, "o");
  EXPECT_TRUE(docs[0].segments[1].trained);
}

// JSON Lines with old Mac line ends (a lone CR): Python's `for line in open(f)` reads three
// lines, and an error names the third; it was one line, refused at its second "{". CRLF and mixed
// ends read as well; the first line decides the format alone.
TEST(DocumentsTest, LoneCarriageReturnsEndLines) {
  std::vector<Document> docs;
  Status s = Parse("{\"text\": \"a\"}\r{\"text\": \"bc\"}\r\n{\"text\": \"d\"}\r", "d.jsonl",
                   Format::kJsonl, &docs);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[1].segments[0].text, "bc");
  EXPECT_EQ(docs[2].segments[0].text, "d");
  s = Parse("{\"text\": \"a\"}\r\r{\"text\": 5}\r", "d.jsonl", Format::kJsonl, &docs);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("d.jsonl:3: ", 0), 0u) << s.message();
  EXPECT_EQ(FirstNonBlankLine("\r  \r{\"text\": \"a\"}\r{\"instruction\": 1, \"output\": 2}"),
            "{\"text\": \"a\"}");
  EXPECT_EQ(DetectFormat("d.jsonl", FirstNonBlankLine("{\"text\": \"a\"}\r{\"instruction\": "
                                                      "\"i\", \"output\": \"o\"}\r")),
            Format::kJsonl);
}

}  // namespace
}  // namespace bm::rules
