// MMMU on a LLaVA checkpoint (trainer/run/llava_mmmu.h) through RunEvaluation: an mmmu_data
// directory made from mmmu_sample, a llava-tiny checkpoint of kjv_sp.model's vocabulary; the
// files it writes, the score against the answer key counted here, and its refusals (a text
// checkpoint, a vocabulary too small, images of another size, a LLaVA
// checkpoint on other data). Greedy decoding itself is checked against the numpy reference
// (llava_tiny_greedy_reference); on the GPU, every response is the CPU's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rules/llava/mmmu_data.h"
#include "tests/support/test_data.h"
#include "trainer/checkpoint/llava_checkpoint.h"
#include "trainer/model/llava_layout.h"
#include "trainer/model/vision_config.h"
#include "trainer/run/evaluate.h"

namespace bm::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Source(const std::string& rel) { return bm::testing::SourcePath(rel); }

class LlavaMmmuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("llava_mmmu_test_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "data");
    rules::llava::MmmuDataOptions o;
    o.questions = Source("examples/llava1.5_13b/mmmu_sample/validation.jsonl");
    o.vocab = Source("data/kjv_sp.model");
    o.clip.size = 28;
    o.clip.pad_to_square = false;
    o.image_tokens = 4;
    Result<json> stats = rules::llava::MmmuDataToDirectory(o, (root_ / "data").string(), nullptr);
    ASSERT_TRUE(stats.ok()) << stats.status().message();
    Save("llava", 8000, 256);
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // A llava-tiny checkpoint with the given text vocabulary and max_seq.
  static void Save(const std::string& name, int64_t vocab, int64_t max_seq, int64_t size = 28) {
    Result<LlavaConfig> c = LlavaPreset("llava-tiny");
    ASSERT_TRUE(c.ok());
    c->text.vocab = vocab;
    c->text.max_seq = max_seq;
    c->image_token_id = vocab;
    c->vision.image_size = size;
    const LlavaLayout layout(*c);
    fs::create_directories(root_ / name);
    const Status s =
        SaveLlavaModel((root_ / name).string(), *c, InitLlavaParameters(*c, layout, 5), 2);
    ASSERT_TRUE(s.ok()) << s.message();
  }

  static RunConfig Run(const std::string& checkpoint, const std::string& data = "data") {
    json j = {{"mode", "evaluate"},
              {"data", (root_ / data).string()},
              {"init", (root_ / checkpoint).string()},
              {"out_dir", (root_ / ("out_" + checkpoint)).string()},
              {"device", "cpu"},
              {"threads", 1},
              {"max_new_tokens", 3}};
    Result<RunConfig> run = ParseRunConfig(j);
    EXPECT_TRUE(run.ok()) << run.status().message();
    return *run;
  }

  static fs::path root_;
};
fs::path LlavaMmmuTest::root_;

TEST_F(LlavaMmmuTest, WritesPredictionsResponsesAndAScoreThatMatchesTheAnswerKey) {
  const RunConfig run = Run("llava");
  Result<json> metrics = RunEvaluation(run, nullptr);
  ASSERT_TRUE(metrics.ok()) << metrics.status().message();
  const json predictions = json::parse(std::ifstream(run.out_dir + "/predictions.json"));
  const json responses = json::parse(std::ifstream(run.out_dir + "/responses.json"));
  ASSERT_EQ(predictions.size(), 10u);
  // The score by hand: a multiple-choice prediction is right when it is the key's letter; the
  // tiny model's open answers (three tokens of KJV words) hold none of the sample's answers
  // (24/7, 3.429, 3, 1.5, Paris, ...), which is checked too.
  int64_t correct = 0;
  std::ifstream in(Source("examples/llava1.5_13b/mmmu_sample/validation.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const json q = json::parse(line);
    const std::string id = q["id"];
    ASSERT_TRUE(predictions.contains(id)) << id;
    ASSERT_TRUE(responses.contains(id)) << id;
    EXPECT_LE(responses[id]["tokens"].size(), 3u) << id;
    if (q["question_type"] == "multiple-choice") {
      correct += predictions[id] == q["answer"];
    } else {
      EXPECT_EQ(predictions[id], responses[id]["response"]) << id;  // open: the raw response
      const json answers = q["answer"].is_array() ? q["answer"] : json::array({q["answer"]});
      for (const auto& a : answers)
        EXPECT_EQ(predictions[id].get<std::string>().find(a.get<std::string>()), std::string::npos)
            << id;
    }
  }
  const json& eval = (*metrics)["eval"];
  EXPECT_EQ(eval["task"], "mmmu");
  EXPECT_EQ(eval["examples"], 10);
  EXPECT_EQ(eval["mmmu"]["correct"], correct);
  EXPECT_DOUBLE_EQ(eval["accuracy"].get<double>(), correct / 10.0);
  EXPECT_EQ(eval["decoding"]["max_new_tokens"], 3);
  EXPECT_EQ(eval["decoding"]["greedy"], true);
  EXPECT_EQ(json::parse(std::ifstream(run.out_dir + "/metrics.json"))["eval"], eval);
}

TEST_F(LlavaMmmuTest, ATextCheckpointIsRefused) {
  fs::create_directories(root_ / "text");
  std::ofstream(root_ / "text/config.json") << R"({"model_type": "llama"})";
  Result<json> r = RunEvaluation(Run("text"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MMMU data needs a LLaVA checkpoint"), std::string::npos)
      << r.status().message();
}

// On the GPU (CudaLlavaTrainer::GenerateGreedy, fp32) every question gets the CPU's tokens, and
// metrics.json names the GPU. Skips without a GPU (or in a build without CUDA).
TEST_F(LlavaMmmuTest, OnTheGpuEveryResponseIsTheCpus) {
  RunConfig gpu = Run("llava");
  gpu.device = "cuda";
  gpu.out_dir += "_cuda";
  Result<json> g = RunEvaluation(gpu, nullptr);
  if (!g.ok() && (g.status().code() == ErrorCode::kUnavailable ||
                  g.status().code() == ErrorCode::kUnsupported))
    GTEST_SKIP() << "GPU test skipped: " << g.status().message();
  ASSERT_TRUE(g.ok()) << g.status().message();
  const RunConfig cpu = Run("llava");
  ASSERT_TRUE(RunEvaluation(cpu, nullptr).ok());
  const json want = json::parse(std::ifstream(cpu.out_dir + "/responses.json"));
  const json got = json::parse(std::ifstream(gpu.out_dir + "/responses.json"));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [id, r] : want.items()) EXPECT_EQ(got[id]["tokens"], r["tokens"]) << id;
  EXPECT_EQ(json::parse(std::ifstream(gpu.out_dir + "/predictions.json")),
            json::parse(std::ifstream(cpu.out_dir + "/predictions.json")));
  const std::string device = (*g)["provenance"]["device_name"];
  EXPECT_EQ(device.find("threads"), std::string::npos) << device;  // the GPU's, not the CPU's
}

TEST_F(LlavaMmmuTest, AVocabularySmallerThanTheTokenizersIsRefused) {
  Save("small_vocab", 512, 256);
  Result<json> r = RunEvaluation(Run("small_vocab"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the tokenizer's 8000 tokens do not fit the model's "
                                      "vocabulary (512)"),
            std::string::npos)
      << r.status().message();
}

TEST_F(LlavaMmmuTest, ImagesOfAnotherSizeAreRefused) {
  Save("big_images", 8000, 256, 56);
  Result<json> r = RunEvaluation(Run("big_images"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("images of 28 px in 4 tokens; the model takes 56 px"),
            std::string::npos)
      << r.status().message();
}

TEST_F(LlavaMmmuTest, APromptLongerThanMaxSeqNamesTheQuestion) {
  Save("short", 8000, 64);
  Result<json> r = RunEvaluation(Run("short"), nullptr);
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("MMMU question validation_"), std::string::npos) << m;
  EXPECT_NE(m.find("the model reads 1 to 64 (max_seq)"), std::string::npos) << m;
}

TEST_F(LlavaMmmuTest, ALlavaCheckpointOnOtherDataIsRefused) {
  fs::create_directories(root_ / "tokens");
  Result<json> r = RunEvaluation(Run("llava", "tokens"), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is a LLaVA model: evaluate runs it on MMMU data"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace bm::train
