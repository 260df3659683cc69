#include "rules/tokenize.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "base/formats/megatron_dataset.h"
#include "rules/text/encoding.h"
#include "rules/text/tokenizer.h"
#include "tests/rules/text/test_data.h"

namespace bm::rules {
namespace {

namespace fs = std::filesystem;
using formats::IndexedDataset;
using nlohmann::json;
using text::testing::ReadFile;
using text::testing::SourcePath;

constexpr char kChapterStart[] = "^([1-3] )?[A-Z][a-z]+( [A-Za-z]+)* [0-9]+$";

class TokenizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "bm_tokenize_XXXXXX").string();
    root_ = ::mkdtemp(templ.data());
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Dir(const std::string& name) {
    fs::create_directories(root_ + "/" + name);
    return root_ + "/" + name;
  }
  std::string WriteInput(const std::string& name, const std::string& contents) {
    std::ofstream(root_ + "/" + name, std::ios::binary) << contents;
    return root_ + "/" + name;
  }
  engine::StepContext Context(json params, const std::string& out) {
    auto rule = MakeTokenizeRule();
    for (const auto& spec : rule->params()) {
      if (!params.contains(spec.name) && spec.default_value)
        params[spec.name] = *spec.default_value;
    }
    engine::StepContext ctx;
    ctx.target = "tok";
    ctx.params = params;
    ctx.workspace_dir = SourcePath("");
    ctx.out_dir = out;
    ctx.log = &log_;
    return ctx;
  }
  Result<engine::StepResult> RunRule(json params, const std::string& out) {
    engine::StepContext ctx = Context(std::move(params), out);
    return MakeTokenizeRule()->Run(ctx);
  }

  std::string root_;
  std::ostringstream log_;
};

const text::Encoding& Gpt2() {
  static const text::Encoding* enc = new text::Encoding(
      std::move(*text::Encoding::Load("gpt2", SourcePath("data/gpt2.tiktoken"))));
  return *enc;
}

// Rebuilds the input order from the split rule: document i is the next one
// of valid when the rule says so, else the next one of train.
std::vector<std::vector<int32_t>> DocumentsInInputOrder(const std::string& dir, SplitRule split) {
  auto train = IndexedDataset::Open(dir + "/train");
  auto valid = IndexedDataset::Open(dir + "/valid");
  EXPECT_TRUE(train.ok() && valid.ok());
  std::vector<std::vector<int32_t>> docs;
  size_t t = 0, v = 0;
  for (size_t i = 0; i < train->num_documents() + valid->num_documents(); ++i) {
    const bool is_valid = split.IsValid(i);
    IndexedDataset& ds = is_valid ? *valid : *train;
    const size_t d = is_valid ? v++ : t++;
    std::vector<int32_t> ids;
    for (int64_t s = ds.document_index()[d]; s < ds.document_index()[d + 1]; ++s) {
      auto seq = ds.ReadSequence(s);
      ids.insert(ids.end(), seq->begin(), seq->end());
    }
    docs.push_back(std::move(ids));
  }
  return docs;
}

TEST_F(TokenizeTest, CorpusRoundTripsThroughTheSplitDatasets) {
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {"data/kjv.txt"}}, {"document_start", kChapterStart}, {"threads", 2}},
                   out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json stats = json::parse(ReadFile(out + "/stats.json"));
  EXPECT_EQ(stats["documents"], 1189);
  // tiktoken's 1,061,597 for the whole file, plus one end-of-text per chapter,
  // minus one token per chapter but the last: a chapter's closing "\n\n" is
  // one piece (628) at the end of a document, two (198 198) before a heading.
  EXPECT_EQ(stats["tokens"], 1061597 + 1189 - 1188);
  EXPECT_EQ(stats["bytes"], 4236034);
  EXPECT_EQ(stats["dtype"], "uint16");
  EXPECT_EQ(stats["eot_id"], 50256);
  EXPECT_EQ(stats["vocab_size"], 50257);
  EXPECT_GT(stats["split"]["valid_documents"].get<int>(), 30);
  EXPECT_EQ(
      stats["split"]["train_documents"].get<int>() + stats["split"]["valid_documents"].get<int>(),
      1189);
  EXPECT_EQ(r->metrics["threads"], 2);
  EXPECT_FALSE(fs::exists(out + "/train_mask.idx"));

  std::string decoded;
  for (auto& doc : DocumentsInInputOrder(out, {1234, 0.05})) {
    ASSERT_EQ(doc.back(), 50256);
    doc.pop_back();
    decoded += *Gpt2().Decode(doc);
  }
  EXPECT_EQ(decoded, ReadFile(SourcePath("data/kjv.txt")));
}

TEST_F(TokenizeTest, SameBytesForOneTwoAndEightThreads) {
  std::map<std::string, std::string> first;
  for (int threads : {1, 2, 8}) {
    const std::string out = Dir("t" + std::to_string(threads));
    ASSERT_TRUE(
        RunRule(
            {{"input", {"data/kjv.txt"}}, {"document_start", kChapterStart}, {"threads", threads}},
            out)
            .ok());
    // One big document as well, which EncodeParallel cuts into chunks.
    const std::string whole = Dir("w" + std::to_string(threads));
    ASSERT_TRUE(RunRule({{"input", {"data/kjv.txt"}}, {"threads", threads}}, whole).ok());
    for (const auto& dir : {out, whole}) {
      for (const auto& e : fs::directory_iterator(dir)) {
        const std::string kind = (dir == out ? "docs/" : "whole/") + e.path().filename().string();
        const std::string bytes = ReadFile(e.path());
        if (threads == 1) {
          first[kind] = bytes;
        } else {
          EXPECT_EQ(bytes, first[kind]) << kind << " differs with " << threads << " threads";
        }
      }
    }
  }
  EXPECT_EQ(first.size(), 10u);  // 2 × (train, valid) × (.bin, .idx) + 2 × stats.json
}

TEST_F(TokenizeTest, AlpacaMasksOnlyTheResponseAndEndOfText) {
  const std::string in = WriteInput("a.json", R"([
    {"instruction": "Quote Genesis 1:3", "input": "", "output": "And God said, Let there be light."},
    {"instruction": "Name the book", "input": "In the beginning", "output": "Genesis"}])");
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {in}}, {"valid_fraction", 0.0}}, out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto ids = IndexedDataset::Open(out + "/train");
  auto mask = IndexedDataset::Open(out + "/train_mask");
  ASSERT_TRUE(ids.ok() && mask.ok());
  ASSERT_EQ(ids->num_sequences(), 2u);
  EXPECT_EQ(mask->dtype(), formats::DType::kUInt8);
  const PromptTemplates t = DefaultPromptTemplates();
  const std::string prompt0 = RenderTemplate(t.prompt, {{"instruction", "Quote Genesis 1:3"}});
  std::vector<int32_t> expected = Gpt2().Encode(prompt0);
  const size_t prompt_len = expected.size();
  const auto response = Gpt2().Encode("And God said, Let there be light.");
  expected.insert(expected.end(), response.begin(), response.end());
  expected.push_back(50256);
  EXPECT_EQ(*ids->ReadSequence(0), expected);
  std::vector<int32_t> want_mask(expected.size(), 1);
  std::fill(want_mask.begin(), want_mask.begin() + prompt_len, 0);
  EXPECT_EQ(*mask->ReadSequence(0), want_mask);
  EXPECT_EQ(mask->sizes()[1], ids->sizes()[1]);
  const std::string second = *Gpt2().Decode(*ids->ReadSequence(1));
  EXPECT_NE(second.find("### Input:\nIn the beginning"), std::string::npos);
  EXPECT_TRUE(fs::exists(out + "/valid_mask.idx"));
  EXPECT_TRUE(json::parse(ReadFile(out + "/stats.json"))["masks"].get<bool>());
}

TEST_F(TokenizeTest, EmbeddedInstructionSetTokenizes) {
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {"data/kjv_instruct_train.json"}}, {"valid_fraction", 0.0}}, out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->metrics["documents"].get<int>(), 1000);
  auto mask = IndexedDataset::Open(out + "/train_mask");
  ASSERT_TRUE(mask.ok());
  const auto m = *mask->ReadSequence(0);
  EXPECT_EQ(m.front(), 0);  // the prompt
  EXPECT_EQ(m.back(), 1);   // end-of-text
}

TEST_F(TokenizeTest, ConversationsTrainOnGptTurns) {
  const std::string in = WriteInput(
      "c.jsonl",
      R"({"id": "1", "instruction": "Be brief.", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}, {"from": "human", "value": "Bye"}, {"from": "gpt", "value": "Farewell"}]})"
      "\n");
  const std::string out = Dir("out");
  ASSERT_TRUE(RunRule({{"input", {in}}, {"valid_fraction", 0.0}}, out).ok()) << log_.str();
  auto ids = IndexedDataset::Open(out + "/train");
  auto mask = IndexedDataset::Open(out + "/train_mask");
  const auto seq = *ids->ReadSequence(0);
  const auto m = *mask->ReadSequence(0);
  std::string trained;
  std::vector<int32_t> trained_ids;
  for (size_t i = 0; i < seq.size(); ++i) {
    if (m[i]) trained_ids.push_back(seq[i]);
  }
  EXPECT_EQ(*Gpt2().Decode(trained_ids), "Hello\nFarewell\n<|endoftext|>");
  EXPECT_EQ(*Gpt2().Decode(seq),
            "Be brief.\n\n### Human: Hi\n### Assistant: Hello\n### Human: Bye\n### Assistant: "
            "Farewell\n<|endoftext|>");
}

// LLaVA's llava_v1_5_mix665k.json: a JSON list of conversation records.
TEST_F(TokenizeTest, ConversationsAsAJsonList) {
  const std::string in = WriteInput(
      "mix.json",
      R"([{"id": "a", "image": "coco/1.jpg", "conversations": [{"from": "human", "value": "<image>\nWhat?"}, {"from": "gpt", "value": "A cat."}]},
          {"id": "b", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]}])");
  const std::string out = Dir("out");
  ASSERT_TRUE(
      RunRule({{"input", {in}}, {"format", "conversations"}, {"valid_fraction", 0.0}}, out).ok())
      << log_.str();
  auto ids = IndexedDataset::Open(out + "/train");
  ASSERT_EQ(ids->num_documents(), 2u);
  EXPECT_EQ(*Gpt2().Decode(*ids->ReadSequence(0)),
            "### Human: <image>\nWhat?\n### Assistant: A cat.\n<|endoftext|>");
  const std::string bad =
      WriteInput("bad.json", R"([{"conversations": [{"from": "robot", "value": "x"}]}])");
  auto r = RunRule({{"input", {bad}}, {"format", "conversations"}}, Dir("out2"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad.json: item 0: turn from \"robot\""), std::string::npos)
      << r.status().message();
}

// OpenWebText's layout: a directory of urlsf_subset*_data.xz shards, each a
// tar of .txt files compressed with xz; every .txt is one document, shards in
// name order, members in archive order; max_tokens keeps the documents up to
// and including the one that reaches it.
TEST_F(TokenizeTest, XzShardsOfTextFilesAndTheTokenBudget) {
  const std::string d = Dir("owt");
  WriteInput("owt/0001-a.txt", "alpha");
  WriteInput("owt/0002-b.txt", "beta!");
  WriteInput("owt/0003-c.txt", "gamma");
  WriteInput("owt/0004-d.txt", "delta");
  ASSERT_EQ(std::system(("cd " + d +
                         " && tar -cJf urlsf_subset00-2_data.xz 0003-c.txt 0004-d.txt"
                         " && tar -cJf urlsf_subset00-1_data.xz 0002-b.txt 0001-a.txt"
                         " && rm *.txt")
                            .c_str()),
            0);
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {d}}, {"tokenizer", "bytes"}, {"valid_fraction", 0.0}}, out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto ids = IndexedDataset::Open(out + "/train");
  ASSERT_EQ(ids->num_documents(), 4u);
  std::string order;
  for (size_t i = 0; i < 4; ++i) {
    const auto seq = *ids->ReadSequence(i);
    order += std::string(seq.begin(), seq.end() - 1) + " ";  // without end-of-text
  }
  EXPECT_EQ(order, "beta! alpha gamma delta ");
  EXPECT_EQ(r->metrics["formats"], json({"text"}));
  // 6 tokens per document with its end-of-text: 13 tokens keep three.
  const std::string cut = Dir("cut");
  r = RunRule({{"input", {d}}, {"tokenizer", "bytes"}, {"valid_fraction", 0.0}, {"max_tokens", 13}},
              cut);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["documents"], 3);
  EXPECT_EQ(r->metrics["tokens"], 18);
  // Instruction data inside an archive needs its format named.
  WriteInput("i.jsonl", R"({"instruction": "x", "output": "y"})");
  ASSERT_EQ(std::system(("cd " + root_ + " && gzip i.jsonl").c_str()), 0);
  r = RunRule({{"input", {root_ + "/i.jsonl.gz"}}}, Dir("instr"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs format = \"alpaca\""), std::string::npos)
      << r.status().message();
  r = RunRule({{"input", {root_ + "/i.jsonl.gz"}}, {"format", "alpaca"}, {"valid_fraction", 0.0}},
              Dir("instr2"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->metrics["masks"].get<bool>());
}

TEST_F(TokenizeTest, VocabMayBeADirectoryHoldingOneFile) {
  const std::string v = Dir("vocab");
  fs::copy_file(SourcePath("data/gpt2.tiktoken"), v + "/gpt2.tiktoken");
  const std::string in = WriteInput("t.txt", "hello world");
  ASSERT_TRUE(RunRule({{"input", {in}}, {"vocab", v}, {"valid_fraction", 0.0}}, Dir("out")).ok())
      << log_.str();
  WriteInput("vocab/second", "x");
  auto r = RunRule({{"input", {in}}, {"vocab", v}}, Dir("out2"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a directory with 2 files"), std::string::npos);
}

TEST_F(TokenizeTest, JsonlTextFieldAndBytesTokenizer) {
  const std::string in = WriteInput("d.jsonl", "{\"body\": \"ab\"}\n\n{\"body\": \"\\u00e9\"}\n");
  const std::string out = Dir("out");
  ASSERT_TRUE(RunRule({{"input", {in}},
                       {"text_field", "body"},
                       {"tokenizer", "bytes"},
                       {"valid_fraction", 0.0}},
                      out)
                  .ok());
  auto ids = IndexedDataset::Open(out + "/train");
  EXPECT_EQ(*ids->ReadSequence(0), (std::vector<int32_t>{'a', 'b', 256}));
  EXPECT_EQ(*ids->ReadSequence(1), (std::vector<int32_t>{0xc3, 0xa9, 256}));
}

TEST_F(TokenizeTest, FailuresLeaveNothingInOutDir) {
  const std::string out = Dir("out");
  const std::string bad = WriteInput("bad.jsonl", "{\"text\": \"ok\"}\n{\"other\": 1}\n");
  auto r = RunRule({{"input", {bad}}}, out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad.jsonl:2"), std::string::npos) << r.status().message();
  EXPECT_TRUE(fs::is_empty(out));
  EXPECT_EQ(RunRule({{"input", {root_ + "/missing.txt"}}}, out).status().code(),
            ErrorCode::kNotFound);
  const std::string not_json = WriteInput("n.json", "[{\"instruction\": 1}]");
  EXPECT_FALSE(RunRule({{"input", {not_json}}}, out).ok());
  EXPECT_FALSE(
      RunRule({{"input", {"data/kjv.txt"}}, {"vocab", root_ + "/none.tiktoken"}}, out).ok());
  EXPECT_EQ(RunRule({{"input", {"data/kjv.txt"}}, {"document_start", "(["}}, out).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(TokenizeTest, PaddleConversionKeepsEveryIdAndBoundary) {
  const std::string dir = SourcePath("tests/rules/testdata/pretokenized");
  const json expected = json::parse(ReadFile(dir + "/expected.json"));
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {dir + "/tiny_ids.npy"}}, {"valid_fraction", 0.3}}, out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::vector<int64_t> docs = expected["docs"];
  const std::vector<int32_t> lens = expected["lens"], all = expected["ids"];
  auto train = IndexedDataset::Open(out + "/train");
  auto valid = IndexedDataset::Open(out + "/valid");
  EXPECT_GT(valid->num_documents(), 0u);
  EXPECT_EQ(train->num_documents() + valid->num_documents(), docs.size() - 1);
  size_t t = 0, v = 0, pos = 0;
  SplitRule split{1234, 0.3};
  for (size_t d = 0; d + 1 < docs.size(); ++d) {
    IndexedDataset& ds = split.IsValid(d) ? *valid : *train;
    const size_t di = split.IsValid(d) ? v++ : t++;
    ASSERT_EQ(ds.document_index()[di + 1] - ds.document_index()[di], docs[d + 1] - docs[d]);
    for (int64_t s = docs[d]; s < docs[d + 1]; ++s) {
      const auto seq = *ds.ReadSequence(ds.document_index()[di] + (s - docs[d]));
      ASSERT_EQ(seq.size(), static_cast<size_t>(lens[s]));
      EXPECT_EQ(seq, std::vector<int32_t>(all.begin() + pos, all.begin() + pos + lens[s]));
      pos += lens[s];
    }
  }
  EXPECT_EQ(pos, all.size());
}

// Two download targets give the pair in two directories: the index is found
// among the inputs; the same ids come out as from one directory.
TEST_F(TokenizeTest, PaddleIndexAmongTheOtherInputs) {
  const std::string dir = SourcePath("tests/rules/testdata/pretokenized");
  const std::string ids = Dir("ids"), idx = Dir("idx");
  fs::copy_file(dir + "/tiny_ids.npy", ids + "/tiny_ids.npy");
  fs::copy_file(dir + "/tiny_idx.npz", idx + "/tiny_idx.npz");
  auto apart = RunRule({{"input", {ids, idx}}, {"valid_fraction", 0.0}}, Dir("apart"));
  ASSERT_TRUE(apart.ok()) << apart.status().message();
  auto together =
      RunRule({{"input", {dir + "/tiny_ids.npy"}}, {"valid_fraction", 0.0}}, Dir("together"));
  ASSERT_TRUE(together.ok()) << together.status().message();
  EXPECT_EQ(ReadFile(root_ + "/apart/train.bin"), ReadFile(root_ + "/together/train.bin"));
  EXPECT_EQ(ReadFile(root_ + "/apart/train.idx"), ReadFile(root_ + "/together/train.idx"));
  // Without its index anywhere: an error naming the missing file.
  auto alone = RunRule({{"input", {ids}}}, Dir("alone"));
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.status().message().find("tiny_idx.npz"), std::string::npos)
      << alone.status().message();
}

TEST_F(TokenizeTest, PlainNpyDocumentsEndAtEndOfText) {
  const std::string dir = SourcePath("tests/rules/testdata/pretokenized");
  const json expected = json::parse(ReadFile(dir + "/expected.json"));
  const std::string out = Dir("out");
  ASSERT_TRUE(RunRule({{"input", {dir + "/plain.npy"}}, {"valid_fraction", 0.0}}, out).ok());
  auto train = IndexedDataset::Open(out + "/train");
  const std::vector<std::vector<int32_t>> want = expected["plain_documents"];
  ASSERT_EQ(train->num_documents(), want.size());
  for (size_t d = 0; d < want.size(); ++d) EXPECT_EQ(*train->ReadSequence(d), want[d]);
}

// Ids from another tokenizer: plain.npy holds GPT-2 ids (its first, 7954, per numpy),
// and the bytes tokenizer has 257 (0..255, end-of-text 256). stats.json would record
// vocab_size 257 and the trainer would size its embedding by it; the step fails instead.
TEST_F(TokenizeTest, PretokenizedIdsOutsideTheVocabularyAreAnError) {
  const std::string dir = SourcePath("tests/rules/testdata/pretokenized");
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {dir + "/plain.npy"}}, {"tokenizer", "bytes"}}, out);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("plain.npy: id 7954 at position 0 is outside the "
                                      "tokenizer's vocabulary (0 to 256)"),
            std::string::npos)
      << r.status().message();
  r = RunRule({{"input", {dir + "/tiny_ids.npy"}}, {"tokenizer", "bytes"}}, out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tiny_ids.npy: id "), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(TokenizeTest, CorruptPaddleIndexIsAnError) {
  const std::string src = SourcePath("tests/rules/testdata/pretokenized");
  fs::copy_file(src + "/tiny_ids.npy", root_ + "/x_ids.npy");
  const std::string out = Dir("out");
  EXPECT_FALSE(RunRule({{"input", {root_ + "/x_ids.npy"}}}, out).ok());  // no x_idx.npz
  std::ofstream(root_ + "/x_idx.npz") << "not a zip";
  EXPECT_FALSE(RunRule({{"input", {root_ + "/x_ids.npy"}}}, out).ok());
  EXPECT_TRUE(fs::is_empty(out));
}

TEST_F(TokenizeTest, CheckRejectsBadParameters) {
  auto rule = MakeTokenizeRule();
  auto errors = rule->Check({{"format", "xml"}, {"valid_fraction", 1.5}, {"tokenizer", "llama"}});
  // threads' and max_tokens' ranges are the engine's (benchfile_errors_test).
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].param, "format");
  EXPECT_EQ(errors[1].param, "valid_fraction");
  EXPECT_EQ(errors[2].param, "tokenizer");
  // A file of another kind is an error at the vocab parameter.
  auto wrong = rule->Check({{"tokenizer", "gpt2"}, {"vocab", "llama/tokenizer.model"}});
  ASSERT_EQ(wrong.size(), 1u);
  EXPECT_EQ(wrong[0].param, "vocab");
  EXPECT_NE(wrong[0].message.find("SentencePiece"), std::string::npos) << wrong[0].message;
  EXPECT_EQ(rule->Check({{"tokenizer", "huggingface"}, {"vocab", "data/kjv_sp.model"}}).size(), 1u);
  EXPECT_TRUE(rule->Check({{"tokenizer", "auto"}, {"vocab", "data/kjv_sp.model"}}).empty());
  EXPECT_TRUE(rule->Check({{"tokenizer", "bytes"}, {"vocab", "data/gpt2.tiktoken"}}).empty());
  EXPECT_TRUE(rule->Check({{"format", "auto"}, {"valid_fraction", 0.1}}).empty());
}

// The JSONL reader skips blank lines; so does the detection under "auto": a file opening
// with blank lines is still read as the conversations its records are.
TEST_F(TokenizeTest, AutoFormatLooksPastBlankFirstLines) {
  const std::string in = WriteInput(
      "c.jsonl",
      "\n  \r\n"
      R"({"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]})"
      "\n");
  auto r = RunRule({{"input", {in}}, {"valid_fraction", 0.0}}, Dir("out"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->metrics["formats"], json::array({"conversations"}));
  EXPECT_TRUE(r->metrics["masks"].get<bool>());
}

TEST(DetectFormatTest, ByNameAndFirstLine) {
  EXPECT_EQ(DetectFormat("a/x_ids.npy", ""), Format::kPaddle);
  EXPECT_EQ(DetectFormat("x.npy", ""), Format::kNpy);
  EXPECT_EQ(DetectFormat("x.json", ""), Format::kAlpaca);
  EXPECT_EQ(DetectFormat("x.jsonl", R"({"conversations": []})"), Format::kConversations);
  EXPECT_EQ(DetectFormat("x.jsonl", R"({"instruction": "a", "input": "", "output": "b"})"),
            Format::kAlpaca);
  EXPECT_EQ(DetectFormat("x.jsonl", R"({"text": "a"})"), Format::kJsonl);
  EXPECT_EQ(DetectFormat("kjv.txt", ""), Format::kText);
}

TEST(SplitRuleTest, IsSeededAndRoughlyTheFraction) {
  SplitRule a{1, 0.1}, b{2, 0.1};
  int in_a = 0, same = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    in_a += a.IsValid(i);
    same += a.IsValid(i) == b.IsValid(i);
  }
  EXPECT_NEAR(in_a, 1000, 150);
  EXPECT_LT(same, 9500);  // another seed, another split
  EXPECT_FALSE((SplitRule{1, 0.0}).IsValid(5));
}

}  // namespace
}  // namespace bm::rules

namespace bm::rules {
namespace {

const text::Tokenizer& KjvSp() {
  static const text::Tokenizer* tok =
      text::OpenTokenizer("auto", SourcePath("data/kjv_sp.model"))->release();
  return *tok;
}

// LLaMA's conventions: every document opens with BOS and closes with EOS.
TEST_F(TokenizeTest, SentencePieceDocumentsStartWithBosAndEndWithEos) {
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {"data/kjv.txt"}},
                    {"vocab", "data/kjv_sp.model"},
                    {"document_start", kChapterStart},
                    {"threads", 2}},
                   out);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json stats = json::parse(ReadFile(out + "/stats.json"));
  EXPECT_EQ(stats["tokenizer"], "sentencepiece");
  EXPECT_EQ(stats["vocab_size"], 8000);
  EXPECT_EQ(stats["bos_id"], 1);
  EXPECT_EQ(stats["eot_id"], 2);
  EXPECT_EQ(stats["dtype"], "uint16");
  EXPECT_EQ(stats["documents"], 1189);
  std::string decoded;
  for (auto& doc : DocumentsInInputOrder(out, {1234, 0.05})) {
    ASSERT_GE(doc.size(), 2u);
    ASSERT_EQ(doc.front(), 1);
    ASSERT_EQ(doc.back(), 2);
    EXPECT_EQ(std::count(doc.begin(), doc.end(), 1), 1);
    doc.erase(doc.begin());
    doc.pop_back();
    decoded += *KjvSp().Decode(doc);
  }
  EXPECT_EQ(decoded, ReadFile(SourcePath("data/kjv.txt")));
}

TEST_F(TokenizeTest, EmptyDocumentsKeepTheirMarkers) {
  const std::string in = WriteInput("e.jsonl", "{\"text\": \"\"}\n{\"text\": \"a\"}\n");
  for (const auto& [vocab, expected] : std::vector<std::pair<std::string, std::vector<int32_t>>>{
           {"data/kjv_sp.model", {1, 2}},
           {"data/gpt2.tiktoken", {50256}},
           {"data/gpt2_tokenizer.json", {50256}}}) {
    const std::string out = Dir("out_" + std::to_string(expected.size()) + vocab.substr(5, 4));
    ASSERT_TRUE(RunRule({{"input", {in}}, {"vocab", vocab}, {"valid_fraction", 0.0}}, out).ok())
        << vocab;
    auto ids = IndexedDataset::Open(out + "/train");
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids->ReadSequence(0), expected) << vocab;
  }
}

TEST_F(TokenizeTest, SentencePieceBosIsNotTrainedOn) {
  const std::string in = WriteInput(
      "a.json",
      R"([{"instruction": "Quote Genesis 1:3", "input": "", "output": "Let there be light."}])");
  const std::string out = Dir("out");
  ASSERT_TRUE(
      RunRule({{"input", {in}}, {"vocab", "data/kjv_sp.model"}, {"valid_fraction", 0.0}}, out)
          .ok());
  const auto seq = *IndexedDataset::Open(out + "/train")->ReadSequence(0);
  const auto mask = *IndexedDataset::Open(out + "/train_mask")->ReadSequence(0);
  EXPECT_EQ(seq.front(), 1);
  EXPECT_EQ(mask.front(), 0);
  EXPECT_EQ(seq.back(), 2);
  EXPECT_EQ(mask.back(), 1);
}

// Hugging Face's encode matches added tokens in the text: <|endoftext|> written
// in a document is the end-of-text id there (tiktoken's kind encodes it as text).
TEST_F(TokenizeTest, HuggingFaceMatchesSpecialTokensInText) {
  const std::string in = WriteInput("s.jsonl", "{\"text\": \"a<|endoftext|>b\"}\n");
  const std::string hf = Dir("hf"), tk = Dir("tk");
  ASSERT_TRUE(
      RunRule({{"input", {in}}, {"vocab", "data/gpt2_tokenizer.json"}, {"valid_fraction", 0.0}}, hf)
          .ok());
  ASSERT_TRUE(
      RunRule({{"input", {in}}, {"vocab", "data/gpt2.tiktoken"}, {"valid_fraction", 0.0}}, tk)
          .ok());
  EXPECT_EQ(*IndexedDataset::Open(hf + "/train")->ReadSequence(0),
            (std::vector<int32_t>{64, 50256, 65, 50256}));
  std::vector<int32_t> as_text = Gpt2().Encode("a<|endoftext|>b");
  as_text.push_back(50256);
  EXPECT_EQ(*IndexedDataset::Open(tk + "/train")->ReadSequence(0), as_text);
  EXPECT_EQ(json::parse(ReadFile(hf + "/stats.json"))["tokenizer"], "huggingface");
}

TEST_F(TokenizeTest, TokenizerWithoutEndOfTextIsAnError) {
  json j = json::parse(ReadFile(SourcePath("data/gpt2_tokenizer.json")));
  j["added_tokens"] = json::array();
  const std::string vocab = WriteInput("tokenizer.json", j.dump());
  const std::string out = Dir("out");
  auto r = RunRule({{"input", {"data/kjv.txt"}}, {"vocab", vocab}}, out);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no end-of-text token"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(fs::is_empty(out));
}

}  // namespace
}  // namespace bm::rules
