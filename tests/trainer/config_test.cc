#include "trainer/model/config.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "trainer/model/layout.h"

namespace bm::train {
namespace {

int64_t Count(const char* preset) { return ParameterCount(*Preset(preset)); }

TEST(ConfigTest, PublishedParameterCounts) {
  // Hugging Face meta-llama/Llama-2-7b-hf: 6,738,415,616 parameters.
  EXPECT_EQ(Count("llama2-7b"), 6'738'415'616);
  // meta-llama/Llama-2-13b-hf (and lmsys/vicuna-13b-v1.5): 13,015,864,320.
  EXPECT_EQ(Count("llama2-13b"), 13'015'864'320);
  // GPT-2 small, tied embeddings, vocabulary 50257: 124,439,808 (HF gpt2).
  EXPECT_EQ(Count("gpt2-124m"), 124'439'808);
  // GPT-3 paper table 2.1 rounds to 6.7B and 13.0B (vocabulary 50257, context 2048).
  EXPECT_EQ(Count("gpt3-6.7b"), 6'658'404'352);
  EXPECT_NEAR(Count("gpt3-6.7b") / 1e9, 6.7, 0.05);
  EXPECT_EQ(Count("gpt3-13b"), 12'853'386'240);
  EXPECT_NEAR(Count("gpt3-13b") / 1e9, 13.0, 0.2);
  // BAAI/Aquila2-7B: LLaMA-7B geometry with a 100,008-token vocabulary.
  EXPECT_EQ(Count("aquila2-7b"), 7'295'537'152);
}

TEST(ConfigTest, LayoutTotalsMatchCounts) {
  for (const std::string& name : PresetNames()) {
    ModelConfig c = *Preset(name);
    EXPECT_TRUE(Validate(c).ok()) << name;
    EXPECT_EQ(ParamLayout(c).total(), ParameterCount(c)) << name;
  }
}

TEST(ConfigTest, FlopsPerToken) {
  ModelConfig c = *Preset("llama2-7b");
  FlopsPerToken f = TrainingFlopsPerToken(c, 4096);
  EXPECT_DOUBLE_EQ(f.six_n, 6.0 * 6'738'415'616);
  // PaLM: + 12 L H Q T = 12 * 32 * 4096 * 4096
  EXPECT_DOUBLE_EQ(f.palm - f.six_n, 12.0 * 32 * 4096 * 4096);
  // GPT-2 at 1024: 6N = 746.6 MFLOP, attention term 12*12*768*1024 = 113.2 MFLOP
  FlopsPerToken g = TrainingFlopsPerToken(*Preset("gpt2-124m"), 1024);
  EXPECT_NEAR(g.six_n / 1e6, 746.64, 0.01);
  EXPECT_NEAR((g.palm - g.six_n) / 1e6, 113.25, 0.01);
}

TEST(ConfigTest, OverridesAndValidation) {
  ModelConfig c = *Preset("llama-tiny");
  Result<ModelConfig> o = ApplyOverrides(c, {{"hidden", 96}, {"heads", 6}, {"kv_heads", 3}});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->hidden, 96);
  EXPECT_TRUE(Validate(*o).ok());
  Result<ModelConfig> bad = ApplyOverrides(c, {{"hidden", 100}, {"heads", 12}});
  ASSERT_TRUE(bad.ok());
  Status s = Validate(*bad);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("heads (12) must divide hidden (100)"), std::string::npos)
      << s.message();
  EXPECT_FALSE(ApplyOverrides(c, {{"hiden", 3}}).ok());
  EXPECT_FALSE(ApplyOverrides(c, {{"hidden", "wide"}}).ok());
  EXPECT_FALSE(Preset("gpt5").ok());
  // gpt with MHA: changing heads keeps kv_heads = heads
  Result<ModelConfig> g = ApplyOverrides(*Preset("gpt-tiny"), {{"heads", 8}});
  EXPECT_EQ(g->kv_heads, 8);
}

TEST(ConfigTest, JsonRoundTrip) {
  for (const std::string& name : PresetNames()) {
    ModelConfig c = *Preset(name);
    Result<ModelConfig> back = ModelConfigFromJson(ToJson(c));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, c) << name;
  }
}

TEST(LayoutTest, HuggingFaceNamesAndOrder) {
  ParamLayout llama(*Preset("llama-tiny"));
  EXPECT_EQ(llama.tensors().front().name, "model.embed_tokens.weight");
  EXPECT_EQ(llama.tensors().back().name, "lm_head.weight");
  const ParamTensor* k = llama.Find("model.layers.1.self_attn.k_proj.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{32, 64}));  // kv_heads 2 * head 16
  // q|k|v and gate|up are contiguous (fused on both backends)
  const ParamTensor* q = llama.Find("model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(q->offset + q->numel, k->offset);
  const ParamTensor* gate = llama.Find("model.layers.0.mlp.gate_proj.weight");
  EXPECT_EQ(gate->offset + gate->numel, llama.Find("model.layers.0.mlp.up_proj.weight")->offset);
  ParamLayout gpt(*Preset("gpt-tiny"));
  const ParamTensor* attn = gpt.Find("transformer.h.0.attn.c_attn.weight");
  ASSERT_NE(attn, nullptr);
  EXPECT_TRUE(attn->transposed_in_checkpoint);
  EXPECT_EQ(gpt.Find("lm_head.weight"), nullptr);  // tied
  EXPECT_FALSE(gpt.Find("transformer.h.0.ln_1.bias")->weight_decay);
}

TEST(LayoutTest, InitRangesDrawTheWholeModelsBits) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    SCOPED_TRACE(preset);
    ModelConfig c = *Preset(preset);
    ParamLayout layout(c);
    const std::vector<float> whole = InitParameters(c, layout, 7);
    const int64_t P = layout.total();
    const ParamTensor& second = layout.tensors()[1];
    // ranges inside one tensor, across tensor boundaries, empty, the tail, the whole
    const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1},
                                                             {5, 300},
                                                             {second.offset - 3, 7},
                                                             {second.offset, second.numel},
                                                             {P / 3, P / 3},
                                                             {P - 1, 1},
                                                             {17, 0},
                                                             {0, P}};
    const ParamSource source = InitialParameters(c, layout, 7);
    for (auto [begin, n] : ranges) {
      std::vector<float> part(static_cast<size_t>(n), -1.0f);
      source(begin, part);
      ASSERT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + begin))
          << "[" << begin << ", " << begin + n << ")";
    }
    std::vector<float> copied(10);
    SourceOf(whole)(P - 10, copied);
    EXPECT_TRUE(std::equal(copied.begin(), copied.end(), whole.end() - 10));
  }
}

TEST(LayoutTest, InitIsDeterministicAndScaled) {
  ModelConfig c = *Preset("llama-tiny");
  ParamLayout layout(c);
  std::vector<float> a = InitParameters(c, layout, 7), b = InitParameters(c, layout, 7);
  std::vector<float> other = InitParameters(c, layout, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  const ParamTensor* emb = layout.Find("model.embed_tokens.weight");
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < emb->numel; ++i) {
    sum += a[emb->offset + i];
    sq += a[emb->offset + i] * a[emb->offset + i];
  }
  double mean = sum / emb->numel, std = std::sqrt(sq / emb->numel - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(std, 0.02, 0.001);
  EXPECT_EQ(a[layout.Find("model.norm.weight")->offset], 1.0f);
}

}  // namespace
}  // namespace bm::train
