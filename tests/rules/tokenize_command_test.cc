#include "rules/tokenize_command.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/rules/text/test_data.h"

namespace bm::rules {
namespace {

Result<std::string> RunCommand(std::vector<std::string> args, const std::string& stdin_text) {
  std::istringstream in(stdin_text);
  std::ostringstream out;
  BM_TRY(TokenizeCommand(args, in, out));
  return out.str();
}

const std::string kVocab = bm::text::testing::SourcePath("data/gpt2.tiktoken");

TEST(TokenizeCommandTest, EncodesStdinOneIdPerLine) {
  EXPECT_EQ(*RunCommand({"--vocab", kVocab}, "Hello world"), "15496\n995\n");
  EXPECT_EQ(*RunCommand({"--vocab", kVocab, "--eot", "-"}, "Hello world"), "15496\n995\n50256\n");
  EXPECT_EQ(*RunCommand({"--vocab", kVocab, "--threads", "2"}, ""), "");
  // The CLI appends global flags (-C DIR, -f FILE) to every command's args.
  EXPECT_EQ(*RunCommand({"--vocab", kVocab, "-C", "/tmp", "-f", "B.toml"}, "Hi"), "17250\n");
}

TEST(TokenizeCommandTest, PicksTheTokenizerKind) {
  const std::string sp = bm::text::testing::SourcePath("data/kjv_sp.model");
  const std::string hf = bm::text::testing::SourcePath("data/gpt2_tokenizer.json");
  const std::string ids = *RunCommand({"--vocab", sp}, "In the beginning");
  EXPECT_EQ(*RunCommand({"--vocab", sp, "--tokenizer", "sentencepiece", "--bos", "--eot"},
                        "In the beginning"),
            "1\n" + ids + "2\n");
  EXPECT_EQ(*RunCommand({"--vocab", sp, "--decode"}, ids), "In the beginning");
  EXPECT_EQ(*RunCommand({"--vocab", hf, "--threads", "2"}, "Hello world<|endoftext|>"),
            "15496\n995\n50256\n");
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--bos"}, "x").status().code(),
            ErrorCode::kInvalidArgument);  // gpt2 has no BOS
  EXPECT_EQ(RunCommand({"--vocab", sp, "--tokenizer", "gpt2"}, "x").status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(TokenizeCommandTest, DecodesIdsBackToBytes) {
  EXPECT_EQ(*RunCommand({"--vocab", kVocab, "--decode"}, "15496\n995\n"), "Hello world");
  EXPECT_EQ(*RunCommand({"--encoding", "bytes", "--decode"}, "104 105 256"), "hi<|endoftext|>");
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--decode"}, "15496 x").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--decode"}, "99999").status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(TokenizeCommandTest, ReadsAFile) {
  const std::string kjv = bm::text::testing::SourcePath("data/kjv.txt");
  auto ids = RunCommand({"--vocab", kVocab, "--threads", "2", kjv}, "");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(std::count(ids->begin(), ids->end(), '\n'), 1061597);
}

TEST(TokenizeCommandTest, RejectsBadUsage) {
  EXPECT_EQ(RunCommand({}, "").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(RunCommand({"--vocab"}, "").status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--threads", "x"}, "").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--frobnicate"}, "").status().code(),
            ErrorCode::kInvalidArgument);
  // An unknown rank file name means gpt2 (tokenizer "auto"); this one is missing.
  EXPECT_EQ(RunCommand({"--vocab", "/tmp/mystery.tiktoken"}, "").status().code(),
            ErrorCode::kNotFound);
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--tokenizer", "wordpiece"}, "").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "--tokenizer", "sentencepiece"}, "").status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(RunCommand({"--vocab", kVocab, "/nonexistent/input"}, "").status().code(),
            ErrorCode::kNotFound);
}

// A directory is not a text: `cat DIR` says "Is a directory" and fails; it must not
// encode as an empty input (no ids, exit 0).
TEST(TokenizeCommandTest, ADirectoryInputIsAnError) {
  const std::string dir = bm::text::testing::SourcePath("data");
  auto r = RunCommand({"--vocab", kVocab, dir}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Is a directory"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(dir), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace bm::rules
