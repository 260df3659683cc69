// The Tokenizer factory, kind resolution and the errors of each kind's loader
// (goldens are in tokenizer_golden_test.cc).
#include "rules/text/tokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rules/text/chunked_encode.h"
#include "rules/text/hf_tokenizer.h"
#include "rules/text/sentencepiece_tokenizer.h"
#include "tests/rules/text/test_data.h"

namespace bm::text {
namespace {

using nlohmann::json;
using testing::ReadFile;
using testing::SourcePath;

TEST(TokenizerKindTest, AutoResolvesByFileName) {
  EXPECT_EQ(ResolveTokenizerKind("auto", "x/tokenizer.model"), "sentencepiece");
  EXPECT_EQ(ResolveTokenizerKind("auto", "x/tokenizer.json"), "huggingface");
  EXPECT_EQ(ResolveTokenizerKind("auto", "x/cl100k_base.tiktoken"), "cl100k_base");
  EXPECT_EQ(ResolveTokenizerKind("auto", "x/r50k_base.tiktoken"), "gpt2");
  EXPECT_EQ(ResolveTokenizerKind("auto", "x/mine.tiktoken"), "gpt2");  // the old default
  EXPECT_EQ(ResolveTokenizerKind("o200k_base", "x/tokenizer.json"), "o200k_base");
}

TEST(TokenizerKindTest, WrongFilesAreRefusedByName) {
  EXPECT_TRUE(CheckTokenizerFile("auto", "data/kjv_sp.model").ok());
  EXPECT_TRUE(CheckTokenizerFile("sentencepiece", "llama/tokenizer.model").ok());
  EXPECT_TRUE(CheckTokenizerFile("sentencepiece", "spm.bin").ok());  // no telling: allowed
  EXPECT_TRUE(CheckTokenizerFile("bytes", "whatever.json").ok());
  const Status unknown = CheckTokenizerFile("wordpiece", "vocab.txt");
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("unknown tokenizer 'wordpiece'"), std::string::npos);
  const Status wrong = CheckTokenizerFile("gpt2", "llama/tokenizer.model");
  EXPECT_EQ(wrong.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong.message().find("a SentencePiece model"), std::string::npos) << wrong.message();
  EXPECT_FALSE(CheckTokenizerFile("sentencepiece", "tokenizer.json").ok());
  EXPECT_FALSE(CheckTokenizerFile("huggingface", "gpt2.tiktoken").ok());
  EXPECT_FALSE(OpenTokenizer("huggingface", SourcePath("data/gpt2.tiktoken")).ok());
}

TEST(TokenizerKindTest, OpensEveryKind) {
  auto tiktoken = OpenTokenizer("auto", SourcePath("data/gpt2.tiktoken"));
  ASSERT_TRUE(tiktoken.ok());
  EXPECT_EQ((*tiktoken)->name(), "gpt2");
  EXPECT_EQ((*tiktoken)->eos_id(), 50256);
  EXPECT_EQ((*tiktoken)->bos_id(), std::nullopt);
  auto bytes = OpenTokenizer("bytes", "");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((*bytes)->vocab_size(), 257u);
  auto sp = OpenTokenizer("auto", SourcePath("data/kjv_sp.model"));
  ASSERT_TRUE(sp.ok()) << sp.status().message();
  EXPECT_EQ((*sp)->Encode(""), std::vector<int32_t>{});
  EXPECT_EQ(*(*sp)->Decode((*sp)->Encode("In the beginning")), "In the beginning");
  EXPECT_EQ((*sp)->Decode(std::vector<int32_t>{8000}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(ChunkStartsTest, CutsOnlyWhereTheRuleAllows) {
  std::string text;
  for (int i = 0; i < 40000; ++i) text += i % 7 == 0 ? "x\n\n" : "word y\n";
  for (CutRule rule : {CutRule::kLoneNewline, CutRule::kAfterNewline}) {
    const std::vector<size_t> starts = ChunkStarts(text, 8, 1 << 12, rule);
    ASSERT_GT(starts.size(), 4u);
    EXPECT_EQ(starts[0], 0u);
    for (size_t i = 1; i < starts.size(); ++i) {
      const size_t p = starts[i];
      EXPECT_GT(p, starts[i - 1]);
      EXPECT_EQ(text[p - 1], '\n');
      if (rule == CutRule::kLoneNewline) {
        EXPECT_NE(text[p - 2], '\n');
      }
    }
  }
  EXPECT_EQ(ChunkStarts("short\ntext", 8, 1 << 12, CutRule::kAfterNewline), std::vector<size_t>{0});
}

TEST(SentencePieceTokenizerTest, RefusesFilesThatAreNotModels) {
  EXPECT_EQ(SentencePieceTokenizer::Open("/nonexistent/tokenizer.model").status().code(),
            ErrorCode::kNotFound);
  auto bad = SentencePieceTokenizer::FromSerialized("not a protobuf", "bad.model");
  EXPECT_EQ(bad.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(bad.status().message().find("bad.model"), std::string::npos);
}

TEST(SentencePieceTokenizerTest, ModelsWithoutTheLineConditionsEncodeInOneCall) {
  // The KJV model with remove_extra_whitespaces = true appended (NormalizerSpec
  // field 4): cutting at newlines would no longer be exact.
  std::string model = ReadFile(SourcePath("data/kjv_sp.model"));
  model += std::string("\x1a\x02\x20\x01", 4);
  auto tok = SentencePieceTokenizer::FromSerialized(model, "kjv_sp.model");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_FALSE((*tok)->encodes_by_line());
  EXPECT_EQ((*tok)->Encode("a  b\n\n  c"), (*tok)->EncodeParallel("a  b\n\n  c", 4));
}

// A valid tokenizer.json with one part replaced, and the error it must give.
void ExpectRefused(const std::function<void(json&)>& change, const std::string& expected,
                   ErrorCode code = ErrorCode::kInvalidArgument) {
  json j = json::parse(ReadFile(SourcePath("data/gpt2_tokenizer.json")));
  change(j);
  auto tok = HfTokenizer::FromJson(j.dump(), "tok.json");
  ASSERT_FALSE(tok.ok()) << expected;
  EXPECT_EQ(tok.status().code(), code) << tok.status().message();
  EXPECT_NE(tok.status().message().find(expected), std::string::npos) << tok.status().message();
}

TEST(HfTokenizerTest, RefusesWhatItDoesNotImplementNamingThePath) {
  ExpectRefused([](json& j) { j["model"]["type"] = "WordPiece"; },
                "tok.json: model.type: WordPiece");
  ExpectRefused([](json& j) { j["model"]["type"] = "Unigram"; }, "model.type: Unigram");
  ExpectRefused([](json& j) { j["model"]["dropout"] = 0.1; }, "model.dropout");
  ExpectRefused([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
                "model.continuing_subword_prefix");
  ExpectRefused(
      [](json& j) {
        j["normalizer"] = {{"type", "Lowercase"}};
      },
      "normalizer.type: normalizer Lowercase");
  ExpectRefused(
      [](json& j) {
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers", {{{"type", "NFC"}}, {{"type", "NFKC"}}}}};
      },
      "normalizer.normalizers[1].type");
  ExpectRefused(
      [](json& j) {
        j["pre_tokenizer"] = {{"type", "Metaspace"}};
      },
      "pre_tokenizer.type: pre-tokenizer Metaspace");
  ExpectRefused([](json& j) { j["pre_tokenizer"] = nullptr; }, "pre_tokenizer: null");
  ExpectRefused(
      [](json& j) {
        j["pre_tokenizer"] = {{"type", "Sequence"},
                              {"pretokenizers",
                               {{{"type", "Split"},
                                 {"pattern", {{"Regex", "\\s+"}}},
                                 {"behavior", "Removed"},
                                 {"invert", false}},
                                j["pre_tokenizer"]}}};
      },
      "pre_tokenizer.pretokenizers[0].behavior: 'Removed'");
  ExpectRefused(
      [](json& j) {
        j["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {j["pre_tokenizer"],
              {{"type", "Split"}, {"pattern", {{"Regex", "x"}}}, {"behavior", "Isolated"}}}}};
      },
      "pre_tokenizer.pretokenizers[1]: a Split after ByteLevel");
  ExpectRefused([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }, "decoder.type");
  ExpectRefused([](json& j) { j["decoder"] = nullptr; }, "decoder: null");
  ExpectRefused(
      [](json& j) {
        j["post_processor"] = {{"type", "BertProcessing"}};
      },
      "post_processor.type: post-processor BertProcessing");
  ExpectRefused([](json& j) { j["added_tokens"][0]["single_word"] = true; },
                "added_tokens[0].single_word");
  ExpectRefused([](json& j) { j["model"]["vocab"]["\xe4\xbd\xa0"] = 60000; },
                "a token outside the byte-level alphabet");
}

TEST(HfTokenizerTest, RefusesInconsistentFiles) {
  ExpectRefused([](json& j) { j["model"]["merges"].push_back("zzq qqz"); },
                "model.merges[50000]: merges a token that is not in model.vocab",
                ErrorCode::kCorrupt);
  ExpectRefused([](json& j) { j["model"]["merges"].push_back("a b c"); }, "model.merges[50000]",
                ErrorCode::kCorrupt);
  ExpectRefused([](json& j) { j["model"]["merges"].push_back(j["model"]["merges"][0]); },
                "merge repeated", ErrorCode::kCorrupt);
  ExpectRefused([](json& j) { j["model"]["vocab"].erase("A"); }, "byte 0x41", ErrorCode::kCorrupt);
  ExpectRefused([](json& j) { j.erase("model"); }, "model: missing", ErrorCode::kCorrupt);
  EXPECT_EQ(HfTokenizer::FromJson("{not json", "t.json").status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(HfTokenizer::Open("/nonexistent/tokenizer.json").status().code(), ErrorCode::kNotFound);
}

TEST(HfTokenizerTest, TemplatePostProcessorGivesBosAndEos) {
  json j = json::parse(ReadFile(SourcePath("data/gpt2_tokenizer.json")));
  j["added_tokens"].push_back({{"id", 50257}, {"content", "<s>"}, {"special", true}});
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}}}},
      {"pair", json::array()},
      {"special_tokens",
       {{"<s>", {{"id", "<s>"}, {"ids", {50257}}, {"tokens", {"<s>"}}}},
        {"<|endoftext|>",
         {{"id", "<|endoftext|>"}, {"ids", {50256}}, {"tokens", {"<|endoftext|>"}}}}}}};
  auto tok = HfTokenizer::FromJson(j.dump(), "t.json");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->bos_id(), 50257);
  EXPECT_TRUE((*tok)->adds_bos());
  EXPECT_EQ((*tok)->eos_id(), 50256);
  // Encode never applies the template.
  EXPECT_EQ((*tok)->Encode("Hello"), (std::vector<int32_t>{15496}));
  EXPECT_EQ(*(*tok)->Decode(std::vector<int32_t>{50257, 15496, 50256}), "<s>Hello<|endoftext|>");
}

TEST(HfTokenizerTest, InvalidUtf8IsEncodedAsBytesAndRoundTrips) {
  auto tok = HfTokenizer::Open(SourcePath("data/gpt2_tokenizer.json"));
  ASSERT_TRUE(tok.ok());
  for (const std::string s : {"\xff", "abc\x80\x80 def", "x\xc3", "\xed\xa0\x80 y<|endoftext|>"}) {
    EXPECT_EQ(*(*tok)->Decode((*tok)->Encode(s)), s);
  }
}

}  // namespace
}  // namespace bm::text
