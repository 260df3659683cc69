// save_init: a run writes the model it starts from to out_dir/init/, in the names and shapes that
// transformers' LlamaForCausalLM and GPT2LMHeadModel load (examples/pytorch_peer/ starts a
// PyTorch run from it). The expected names and shapes below are read off transformers' modules
// (models/llama/modeling_llama.py: LlamaModel.embed_tokens, LlamaDecoderLayer's self_attn
// q/k/v/o_proj nn.Linear(in, out) -> weight [out, in], mlp gate/up/down_proj, input_layernorm,
// post_attention_layernorm, model.norm, lm_head; models/gpt2/modeling_gpt2.py: wte, wpe,
// h.i.ln_1/attn/ln_2/mlp, ln_f, and pytorch_utils.Conv1D(nf, nx) -> weight [nx, nf], i.e.
// [in, out]), not from trainer/model/layout.h.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/layout.h"
#include "trainer/run/train_loop.h"

namespace bm::train {
namespace {

using testing::kEot;
using testing::kVocab;
using Shapes = std::map<std::string, std::vector<int64_t>>;

// llama-tiny on a 64-token vocabulary: hidden 64, 2 layers, 4 heads of 16, 2 KV heads, SwiGLU 160.
Shapes LlamaTinyShapes() {
  Shapes s = {{"model.embed_tokens.weight", {64, 64}},
              {"model.norm.weight", {64}},
              {"lm_head.weight", {64, 64}}};
  for (int i = 0; i < 2; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    s[p + "input_layernorm.weight"] = {64};
    s[p + "self_attn.q_proj.weight"] = {64, 64};  // [heads * head_dim, hidden]
    s[p + "self_attn.k_proj.weight"] = {32, 64};  // [kv_heads * head_dim, hidden]
    s[p + "self_attn.v_proj.weight"] = {32, 64};
    s[p + "self_attn.o_proj.weight"] = {64, 64};
    s[p + "post_attention_layernorm.weight"] = {64};
    s[p + "mlp.gate_proj.weight"] = {160, 64};
    s[p + "mlp.up_proj.weight"] = {160, 64};
    s[p + "mlp.down_proj.weight"] = {64, 160};
  }
  return s;
}

// gpt-tiny on a 64-token vocabulary, max_seq 32: n_embd 64, 2 layers, n_inner 4 * 64; Conv1D
// weights [in, out]; no lm_head (tied to wte).
Shapes GptTinyShapes() {
  Shapes s = {{"transformer.wte.weight", {64, 64}},
              {"transformer.wpe.weight", {32, 64}},
              {"transformer.ln_f.weight", {64}},
              {"transformer.ln_f.bias", {64}}};
  for (int i = 0; i < 2; ++i) {
    const std::string p = "transformer.h." + std::to_string(i) + ".";
    for (const char* ln : {"ln_1", "ln_2"}) {
      s[p + ln + ".weight"] = {64};
      s[p + ln + ".bias"] = {64};
    }
    s[p + "attn.c_attn.weight"] = {64, 192};
    s[p + "attn.c_attn.bias"] = {192};
    s[p + "attn.c_proj.weight"] = {64, 64};
    s[p + "attn.c_proj.bias"] = {64};
    s[p + "mlp.c_fc.weight"] = {64, 256};
    s[p + "mlp.c_fc.bias"] = {256};
    s[p + "mlp.c_proj.weight"] = {256, 64};
    s[p + "mlp.c_proj.bias"] = {64};
  }
  return s;
}

class InitDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::TempDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    testing::WriteSplit(dir_ + "/data", "train", testing::PatternDocs(40, 30, kVocab, kEot, 1));
    testing::WriteStats(dir_ + "/data", kVocab, kEot);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunConfig Config(const std::string& out, const char* preset, bool save_init) {
    nlohmann::json j = testing::TinyPretrainConfig(dir_ + "/data", dir_ + "/" + out, preset);
    j["threads"] = 1;
    j["steps"] = 3;
    j["save_init"] = save_init;
    Result<RunConfig> c = ParseRunConfig(j);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return *c;
  }

  std::string dir_;
};

TEST_F(InitDumpTest, TheStartingModelInHuggingFaceNamesAndShapes) {
  for (auto [preset, expected, architecture] :
       {std::tuple{"llama-tiny", LlamaTinyShapes(), "LlamaForCausalLM"},
        std::tuple{"gpt-tiny", GptTinyShapes(), "GPT2LMHeadModel"}}) {
    SCOPED_TRACE(preset);
    RunConfig run = Config(preset, preset, true);
    Result<nlohmann::json> m = RunTraining(run, nullptr);
    ASSERT_TRUE(m.ok()) << m.status().message();
    const std::string init = run.out_dir + "/init";
    Result<SafetensorsFile> file = ReadSafetensors(init + "/model.safetensors");
    ASSERT_TRUE(file.ok()) << file.status().message();
    Shapes got;
    for (const NamedTensor& t : file->tensors) got[t.name] = t.shape;
    EXPECT_EQ(got, expected);

    // config.json names the class transformers builds, with the data's vocabulary.
    nlohmann::json config = nlohmann::json::parse(std::ifstream(init + "/config.json"));
    EXPECT_EQ(config["architectures"][0], architecture);
    EXPECT_EQ(config["vocab_size"], kVocab);

    // The values are the seed's initial weights, not the trained ones.
    Result<ModelConfig> model = ReadCheckpointConfig(init);
    ASSERT_TRUE(model.ok()) << model.status().message();
    Result<std::vector<float>> start = LoadParameters(init + "/model.safetensors", *model);
    ASSERT_TRUE(start.ok()) << start.status().message();
    EXPECT_EQ(*start, InitParameters(*model, ParamLayout(*model), run.seed));
    Result<std::vector<float>> end = LoadParameters(run.out_dir + "/model.safetensors", *model);
    ASSERT_TRUE(end.ok()) << end.status().message();
    EXPECT_NE(*start, *end);
    // A norm weight starts at one (LlamaRMSNorm's and nn.LayerNorm's initial value).
    const NamedTensor* norm =
        file->Find(architecture == std::string("GPT2LMHeadModel") ? "transformer.ln_f.weight"
                                                                  : "model.norm.weight");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->data, std::vector<float>(64, 1.0f));
  }
}

TEST_F(InitDumpTest, WithoutSaveInitThereIsNoInitDirectoryAndTheRunIsTheSame) {
  RunConfig with = Config("with", "llama-tiny", true);
  RunConfig without = Config("without", "llama-tiny", false);
  ASSERT_TRUE(RunTraining(with, nullptr).ok());
  ASSERT_TRUE(RunTraining(without, nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(without.out_dir + "/init"));
  EXPECT_EQ(*ReadFileBytes(with.out_dir + "/model.safetensors"),
            *ReadFileBytes(without.out_dir + "/model.safetensors"));
}

TEST_F(InitDumpTest, EvaluateRefusesSaveInit) {
  nlohmann::json j = {{"mode", "evaluate"},
                      {"data", dir_ + "/data"},
                      {"out_dir", dir_ + "/e"},
                      {"init", dir_ + "/x"},
                      {"save_init", true}};
  Result<RunConfig> c = ParseRunConfig(j);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("save_init"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace bm::train
