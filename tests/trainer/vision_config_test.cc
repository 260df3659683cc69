#include "trainer/model/vision_config.h"

#include <gtest/gtest.h>

#include "trainer/model/llava_layout.h"

namespace bm::train {
namespace {

TEST(VisionConfigTest, PublishedParameterCounts) {
  // CLIP ViT-L/14-336's vision tower (HF CLIPVisionModel of openai/clip-vit-large-patch14-336):
  // 303,507,456, as mteb's ModelMeta lists a ViT-L/14-336 tower (n_parameters=303507456). By hand:
  //   embeddings: class 1024 + patch conv 1024*3*14*14 = 602,112 + positions 577*1024 = 590,848
  //               = 1,193,984
  //   pre_layrnorm + post_layernorm: 2 * 2 * 1024 = 4,096
  //   one layer: q,k,v,out 4*(1024^2 + 1024) = 4,198,400; two LayerNorms 4,096;
  //              fc1 1024*4096 + 4096 = 4,198,400; fc2 4096*1024 + 1024 = 4,195,328
  //              = 12,596,224; 24 layers = 302,309,376
  //   total 1,193,984 + 4,096 + 302,309,376 = 303,507,456
  VisionConfig v = *VisionPreset("clip-vit-l-14-336");
  EXPECT_EQ(ParameterCount(v), 303'507'456);
  // Without layer 23 (12,596,224) and post_layernorm (2048): what the features depend on.
  EXPECT_EQ(UsedParameterCount(v), 303'507'456 - 12'596'224 - 2048);
  // 224 px: 257 positions instead of 577, 320 * 1024 fewer.
  EXPECT_EQ(ParameterCount(*VisionPreset("clip-vit-l-14")), 303'507'456 - 320 * 1024);

  // llava-hf/llava-1.5-7b-hf counted by transformers (sum of numel over
  // LlavaForConditionalGeneration's parameters, as published code asserts): 7,063,427,072. Its
  // text vocabulary is padded to 32064 for <image> and <pad>. By hand: Llama-2-7B 6,738,415,616
  // + 64 * 4096 * 2 (embed_tokens and lm_head rows) = 6,738,939,904; projector 1024*4096 + 4096
  // + 4096^2 + 4096 = 20,979,712; tower 303,507,456.
  LlavaConfig l7 = *LlavaPreset("llava-1.5-7b");
  l7.text.vocab = 32064;
  EXPECT_EQ(ProjectorParameterCount(l7), 20'979'712);
  EXPECT_EQ(ParameterCount(l7), 7'063'427'072);

  // llava-v1.5-13b (liuhaotian's, vocabulary 32000): tower 303,507,456 + projector by hand
  // 1024*5120 + 5120 + 5120*5120 + 5120 = 31,467,520 + Vicuna-13B v1.5 = Llama-2-13B
  // 13,015,864,320 (published for lmsys/vicuna-13b-v1.5 and Llama-2-13b; by hand
  // 2*32000*5120 + 40*(4*5120^2 + 3*5120*13824 + 2*5120) + 5120) = 13,350,839,296.
  LlavaConfig l13 = *LlavaPreset("llava-1.5-13b");
  EXPECT_EQ(ParameterCount(l13.text), 13'015'864'320);
  EXPECT_EQ(ProjectorParameterCount(l13), 31'467'520);
  EXPECT_EQ(ParameterCount(l13), 13'350'839'296);
  // llava-hf/llava-1.5-13b-hf pads the vocabulary to 32064: 64 * 5120 * 2 = 655,360 more.
  l13.text.vocab = 32064;
  EXPECT_EQ(ParameterCount(l13), 13'351'494'656);
  l13 = *LlavaPreset("llava-1.5-13b");
  EXPECT_EQ(l13.text.hidden, 5120);
  EXPECT_EQ(l13.text.layers, 40);
  EXPECT_EQ(l13.text.ffn_hidden, 13824);
  EXPECT_EQ(l13.image_token_id, 32000);
}

TEST(VisionConfigTest, Geometry) {
  VisionConfig v = *VisionPreset("clip-vit-l-14-336");
  EXPECT_EQ(v.num_patches(), 576);  // (336 / 14)^2
  EXPECT_EQ(v.positions(), 577);
  EXPECT_EQ(v.head_dim(), 64);
  EXPECT_EQ(v.patch_dim(), 588);
  // hidden_states[-2] of 25 = the output of layer 22 (0-based): layers 0..22 run.
  EXPECT_EQ(v.feature_index(), 23);
  EXPECT_EQ(v.computed_layers(), 23);
  v.feature_layer = -1;
  EXPECT_EQ(v.computed_layers(), 24);
  v.feature_layer = 0;  // the embeddings after pre_layrnorm
  EXPECT_EQ(v.computed_layers(), 0);
  v.feature_layer = 5;
  EXPECT_EQ(v.computed_layers(), 5);
  VisionConfig tiny = *VisionPreset("clip-tiny");
  EXPECT_EQ(tiny.num_patches(), 4);
  EXPECT_EQ(tiny.computed_layers(), 2);
  EXPECT_EQ(LlavaPreset("llava-tiny")->image_tokens(), 4);
}

TEST(VisionConfigTest, FlopsPerImage) {
  // By hand for ViT-L/14-336, 23 layers over 577 positions:
  //   patch 2*576*588*1024 = 693,633,024
  //   per layer 2*577*(4*1024^2 + 2*1024*4096) + 4*577^2*1024 = 14,520,680,448 + 1,363,677,184
  //   projector to 5120: 2*576*(1024*5120 + 5120^2) = 36,238,786,560
  FlopsPerImage f = ForwardFlopsPerImage(*LlavaPreset("llava-1.5-13b"));
  EXPECT_DOUBLE_EQ(f.vision, 693'633'024.0 + 23.0 * (14'520'680'448.0 + 1'363'677'184.0));
  EXPECT_DOUBLE_EQ(f.projector, 36'238'786'560.0);
  EXPECT_DOUBLE_EQ(f.total(), f.vision + f.projector);
  EXPECT_NEAR(f.vision / 1e9, 366.03, 0.01);
}

TEST(VisionConfigTest, Validation) {
  for (const std::string& name : VisionPresetNames())
    EXPECT_TRUE(Validate(*VisionPreset(name)).ok()) << name;
  for (const std::string& name : LlavaPresetNames())
    EXPECT_TRUE(Validate(*LlavaPreset(name)).ok()) << name;

  VisionConfig v = *VisionPreset("clip-vit-l-14-336");
  Result<VisionConfig> bad = ApplyVisionOverrides(v, {{"patch", 15}});
  ASSERT_TRUE(bad.ok());
  Status s = Validate(*bad);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("vision.patch (15) must divide vision.image_size (336)"),
            std::string::npos)
      << s.message();
  s = Validate(*ApplyVisionOverrides(v, {{"heads", 7}}));
  EXPECT_NE(s.message().find("vision.heads (7) must divide vision.hidden (1024)"),
            std::string::npos)
      << s.message();
  s = Validate(*ApplyVisionOverrides(v, {{"feature_layer", -26}}));
  EXPECT_NE(s.message().find("vision.feature_layer (-26) must lie in [-25, 24]"), std::string::npos)
      << s.message();
  EXPECT_TRUE(Validate(*ApplyVisionOverrides(v, {{"feature_layer", -25}})).ok());
  EXPECT_FALSE(Validate(*ApplyVisionOverrides(v, {{"feature_layer", 25}})).ok());
  s = Validate(*ApplyVisionOverrides(v, {{"mlp", 0}}));
  EXPECT_NE(s.message().find("vision.mlp must be positive (got 0)"), std::string::npos);
  EXPECT_FALSE(Validate(*ApplyVisionOverrides(v, {{"norm_eps", 0.0}})).ok());
  Result<VisionConfig> unknown = ApplyVisionOverrides(v, {{"widht", 3}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown vision field 'widht'"), std::string::npos);
  EXPECT_FALSE(ApplyVisionOverrides(v, {{"hidden", "wide"}}).ok());
  EXPECT_FALSE(ApplyVisionOverrides(v, {{"hidden", 3.5}}).ok());
  EXPECT_FALSE(ApplyVisionOverrides(v, nlohmann::json::array()).ok());
  Result<VisionConfig> o = ApplyVisionOverrides(v, {{"image_size", 224}, {"norm_eps", 1e-6}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->num_patches(), 256);
  EXPECT_EQ(o->norm_eps, 1e-6);
  EXPECT_FALSE(VisionPreset("clip-vit-h").ok());
  EXPECT_NE(VisionPreset("clip-vit-h").status().message().find("clip-tiny"), std::string::npos);

  LlavaConfig l = *LlavaPreset("llava-tiny");
  l.projector = "linear";
  EXPECT_EQ(Validate(l).code(), ErrorCode::kUnsupported);
  l = *LlavaPreset("llava-tiny");
  l.text = *Preset("gpt-tiny");
  EXPECT_EQ(Validate(l).code(), ErrorCode::kUnsupported);
  l = *LlavaPreset("llava-tiny");
  l.image_token_id = -1;
  EXPECT_EQ(Validate(l).code(), ErrorCode::kInvalidArgument);
  l = *LlavaPreset("llava-tiny");
  l.vision.heads = 5;
  EXPECT_FALSE(Validate(l).ok());
  l = *LlavaPreset("llava-tiny");
  l.text.heads = 5;
  EXPECT_FALSE(Validate(l).ok());
  EXPECT_FALSE(LlavaPreset("llava-2").ok());
}

TEST(VisionConfigTest, JsonRoundTrip) {
  for (const std::string& name : VisionPresetNames()) {
    VisionConfig v = *VisionPreset(name);
    Result<VisionConfig> back = VisionConfigFromJson(ToJson(v));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, v) << name;
  }
  for (const std::string& name : LlavaPresetNames()) {
    LlavaConfig c = *LlavaPreset(name);
    Result<LlavaConfig> back = LlavaConfigFromJson(ToJson(c));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, c) << name;
  }
  nlohmann::json j = ToJson(*LlavaPreset("llava-tiny"));
  nlohmann::json no_vision = j;
  no_vision.erase("vision");
  EXPECT_NE(LlavaConfigFromJson(no_vision).status().message().find("lacks 'vision'"),
            std::string::npos);
  nlohmann::json extra = j;
  extra["mm_projector"] = "x";
  EXPECT_NE(LlavaConfigFromJson(extra).status().message().find("'mm_projector'"),
            std::string::npos);
  nlohmann::json bad_vision = j;
  bad_vision["vision"]["patch"] = 5;  // 28 % 5 != 0
  EXPECT_FALSE(LlavaConfigFromJson(bad_vision).ok());
  nlohmann::json bad_id = j;
  bad_id["image_token_id"] = "32000";
  EXPECT_FALSE(LlavaConfigFromJson(bad_id).ok());
  nlohmann::json bad_projector = j;
  bad_projector["projector"] = "identity";
  EXPECT_EQ(LlavaConfigFromJson(bad_projector).status().code(), ErrorCode::kUnsupported);
  EXPECT_FALSE(LlavaConfigFromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(VisionConfigFromJson(nlohmann::json(3)).ok());
}

TEST(LlavaLayoutTest, HuggingFaceNamesOrderAndTotals) {
  for (const std::string& name : LlavaPresetNames()) {
    LlavaConfig c = *LlavaPreset(name);
    LlavaLayout layout(c);
    EXPECT_EQ(layout.total(), ParameterCount(c)) << name;
    EXPECT_EQ(layout.vision().total(), ParameterCount(c.vision)) << name;
    EXPECT_EQ(layout.projector().total(), ProjectorParameterCount(c)) << name;
    EXPECT_EQ(layout.text().total(), ParameterCount(c.text)) << name;
    // the units tile the whole buffer
    int64_t at = 0;
    for (const ParamUnit& u : layout.whole().units()) {
      EXPECT_EQ(u.offset, at) << u.name;
      at += u.numel;
    }
    EXPECT_EQ(at, layout.total());
  }
  LlavaConfig c = *LlavaPreset("llava-tiny");  // clip-tiny: C 32, M 64, P 14, 5 positions
  LlavaLayout layout(c);
  const ParamLayout& w = layout.whole();
  EXPECT_EQ(w.tensors().front().name, "vision_tower.vision_model.embeddings.class_embedding");
  EXPECT_EQ(w.tensors().back().name, "language_model.lm_head.weight");
  const ParamTensor* patch = w.Find("vision_tower.vision_model.embeddings.patch_embedding.weight");
  ASSERT_NE(patch, nullptr);
  EXPECT_EQ(patch->shape, (std::vector<int64_t>{32, 3, 14, 14}));
  EXPECT_TRUE(patch->weight_decay);
  EXPECT_EQ(w.Find("vision_tower.vision_model.embeddings.position_embedding.weight")->shape,
            (std::vector<int64_t>{5, 32}));
  ASSERT_NE(w.Find("vision_tower.vision_model.pre_layrnorm.bias"), nullptr);
  // q|k|v weights and biases contiguous
  const std::string l1 = "vision_tower.vision_model.encoder.layers.1.";
  const ParamTensor* q = w.Find(l1 + "self_attn.q_proj.weight");
  const ParamTensor* k = w.Find(l1 + "self_attn.k_proj.weight");
  const ParamTensor* vw = w.Find(l1 + "self_attn.v_proj.weight");
  ASSERT_TRUE(q && k && vw);
  EXPECT_EQ(q->offset + q->numel, k->offset);
  EXPECT_EQ(k->offset + k->numel, vw->offset);
  EXPECT_EQ(vw->offset + vw->numel, w.Find(l1 + "self_attn.q_proj.bias")->offset);
  EXPECT_EQ(w.Find(l1 + "self_attn.q_proj.bias")->offset + 32,
            w.Find(l1 + "self_attn.k_proj.bias")->offset);
  EXPECT_EQ(w.Find(l1 + "mlp.fc1.weight")->shape, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(w.Find(l1 + "mlp.fc2.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_FALSE(w.Find(l1 + "layer_norm2.bias")->weight_decay);
  // clip-tiny computes layers 0 and 1 of 3: layer 2 and post_layernorm are frozen
  EXPECT_FALSE(w.Find(l1 + "mlp.fc1.weight")->frozen);
  const ParamTensor* l2 = w.Find("vision_tower.vision_model.encoder.layers.2.mlp.fc1.weight");
  ASSERT_NE(l2, nullptr);
  EXPECT_TRUE(l2->frozen);
  EXPECT_FALSE(l2->weight_decay);
  EXPECT_TRUE(w.Find("vision_tower.vision_model.post_layernorm.weight")->frozen);
  EXPECT_FALSE(w.Find("language_model.model.norm.weight")->frozen);
  // projector: [H, C_v] then [H, H]
  const ParamTensor* p1 = w.Find("multi_modal_projector.linear_1.weight");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->shape, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(p1->offset, layout.projector_offset());
  EXPECT_EQ(w.Find("multi_modal_projector.linear_2.bias")->shape, (std::vector<int64_t>{64}));
  // the parts' layouts are the whole's, shifted
  const ParamTensor* emb = w.Find("language_model.model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->offset, layout.text_offset());
  EXPECT_EQ(layout.text().Find("model.embed_tokens.weight")->offset, 0);
  EXPECT_EQ(layout.text().Find("lm_head.weight")->offset + layout.text_offset(),
            w.Find("language_model.lm_head.weight")->offset);
  EXPECT_EQ(layout.vision().Find(l1 + "mlp.fc2.bias")->offset, w.Find(l1 + "mlp.fc2.bias")->offset);
  EXPECT_EQ(w.units().front().name, "vision embeddings");
  EXPECT_EQ(w.units()[4].name, "vision final");
  EXPECT_EQ(w.units()[5].name, "projector");
  EXPECT_EQ(w.units()[6].name, "language model embeddings");
  EXPECT_EQ(w.units().back().name, "language model final");
  // a CLIPVisionModel checkpoint's names
  ParamLayout clip = VisionLayout(c.vision, "vision_model.");
  EXPECT_EQ(clip.tensors()[1].name, "vision_model.embeddings.patch_embedding.weight");
  EXPECT_EQ(clip.total(), layout.vision().total());
}

TEST(LlavaLayoutTest, InitIsDeterministic) {
  LlavaConfig c = *LlavaPreset("llava-tiny");
  LlavaLayout layout(c);
  std::vector<float> a = InitLlavaParameters(c, layout, 3), b = InitLlavaParameters(c, layout, 3);
  EXPECT_EQ(a, b);
  ASSERT_EQ(static_cast<int64_t>(a.size()), layout.total());
  EXPECT_EQ(a[layout.whole().Find("vision_tower.vision_model.pre_layrnorm.weight")->offset], 1.0f);
  EXPECT_EQ(a[layout.whole().Find("multi_modal_projector.linear_1.bias")->offset], 0.0f);
  EXPECT_NE(a[layout.whole().Find("multi_modal_projector.linear_1.weight")->offset], 0.0f);
}

}  // namespace
}  // namespace bm::train
