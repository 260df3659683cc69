// LLaVA checkpoints: save and load back bit for bit, the transformers names and
// config.json fields as llava-hf spells them (checked by hand against
// llava-hf/llava-1.5-13b-hf's config.json and safetensors index), transformers
// >= 4.52's names, CLIP + LLaMA parts, and bad files named.
#include "trainer/checkpoint/llava_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/llava_layout.h"
#include "trainer/rng.h"

namespace bm::train {
namespace {

std::vector<float> Values(int64_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(NormalAt(seed, 3, i));
  return v;
}

TEST(LlavaCheckpointTest, RoundTripNamesAndConfig) {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  const LlavaLayout layout(c);
  const std::vector<float> params = Values(layout.total(), 1);
  const std::string dir = testing::TempDir("llava_ckpt");
  ASSERT_TRUE(SaveLlavaModel(dir, c, params, 2).ok());
  Result<std::vector<float>> back = LoadLlavaParameters(dir + "/model.safetensors", c);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, params);
  Result<LlavaConfig> cb = ReadLlavaCheckpointConfig(dir);
  ASSERT_TRUE(cb.ok()) << cb.status().message();
  EXPECT_EQ(*cb, c);

  // config.json as transformers' LlavaConfig reads it
  std::ifstream in(dir + "/config.json");
  nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["architectures"][0], "LlavaForConditionalGeneration");
  EXPECT_EQ(j["model_type"], "llava");
  EXPECT_EQ(j["image_token_index"], 512);
  EXPECT_EQ(j["vision_feature_layer"], -2);
  EXPECT_EQ(j["vision_feature_select_strategy"], "default");
  EXPECT_EQ(j["projector_hidden_act"], "gelu");
  EXPECT_EQ(j["vision_config"]["model_type"], "clip_vision_model");
  EXPECT_EQ(j["vision_config"]["hidden_size"], 32);
  EXPECT_EQ(j["vision_config"]["image_size"], 28);
  EXPECT_EQ(j["vision_config"]["patch_size"], 14);
  EXPECT_EQ(j["vision_config"]["hidden_act"], "quick_gelu");
  EXPECT_EQ(j["text_config"]["model_type"], "llama");
  EXPECT_EQ(j["text_config"]["vocab_size"], 513);  // a row for image_token_index 512
  EXPECT_EQ(j["text_config"]["hidden_size"], 64);

  // The tensors: llava-hf's names; the embedding and head padded with one zero row.
  Result<SafetensorsFile> file = ReadSafetensors(dir + "/model.safetensors");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(static_cast<int64_t>(file->tensors.size()),
            static_cast<int64_t>(layout.whole().tensors().size()));
  for (const char* name :
       {"vision_tower.vision_model.embeddings.class_embedding",
        "vision_tower.vision_model.embeddings.patch_embedding.weight",
        "vision_tower.vision_model.embeddings.position_embedding.weight",
        "vision_tower.vision_model.pre_layrnorm.weight",
        "vision_tower.vision_model.encoder.layers.2.mlp.fc2.bias",
        "vision_tower.vision_model.post_layernorm.bias", "multi_modal_projector.linear_1.weight",
        "multi_modal_projector.linear_2.bias", "language_model.model.embed_tokens.weight",
        "language_model.model.layers.1.self_attn.q_proj.weight", "language_model.model.norm.weight",
        "language_model.lm_head.weight"})
    EXPECT_NE(file->Find(name), nullptr) << name;
  const NamedTensor* patch =
      file->Find("vision_tower.vision_model.embeddings.patch_embedding.weight");
  ASSERT_NE(patch, nullptr);
  EXPECT_EQ(patch->shape, (std::vector<int64_t>{32, 3, 14, 14}));
  const NamedTensor* pos =
      file->Find("vision_tower.vision_model.embeddings.position_embedding.weight");
  ASSERT_NE(pos, nullptr);
  EXPECT_EQ(pos->shape, (std::vector<int64_t>{5, 32}));  // 4 patches + the class token
  const NamedTensor* wte = file->Find("language_model.model.embed_tokens.weight");
  ASSERT_NE(wte, nullptr);
  EXPECT_EQ(wte->shape, (std::vector<int64_t>{513, 64}));
  for (int64_t k = 512 * 64; k < 513 * 64; ++k) ASSERT_EQ(wte->data[k], 0.0f);
  const ParamTensor* ours = layout.whole().Find("language_model.model.embed_tokens.weight");
  ASSERT_NE(ours, nullptr);
  EXPECT_TRUE(
      std::equal(wte->data.begin(), wte->data.begin() + 512 * 64, params.begin() + ours->offset));

  // Without our own key: the transformers fields alone give the model (its vocabulary padded).
  j.erase("benchmake");
  Result<LlavaConfig> hf = LlavaConfigFromHuggingFace(j);
  ASSERT_TRUE(hf.ok()) << hf.status().message();
  EXPECT_EQ(hf->vision.hidden, 32);
  EXPECT_EQ(hf->vision.layers, 3);
  EXPECT_EQ(hf->vision.feature_layer, -2);
  EXPECT_EQ(hf->image_token_id, 512);
  EXPECT_EQ(hf->text.vocab, 513);
  EXPECT_EQ(hf->text.hidden, 64);
  j["vision_feature_select_strategy"] = "full";
  EXPECT_EQ(LlavaConfigFromHuggingFace(j).status().code(), ErrorCode::kInvalidArgument);
  j["vision_feature_select_strategy"] = "default";
  j["vision_config"].erase("patch_size");
  Result<LlavaConfig> missing = LlavaConfigFromHuggingFace(j);
  EXPECT_NE(missing.status().message().find("vision_config.patch_size is missing"),
            std::string::npos)
      << missing.status().message();
}

// llava-tiny's values written under the names `rename` gives llava-hf's, then loaded back.
template <typename Rename>
void ExpectLoadedUnder(const std::string& tag, uint64_t seed, Rename rename) {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  const LlavaLayout layout(c);
  const std::vector<float> params = Values(layout.total(), seed);
  std::vector<TensorSource> tensors;
  for (const ParamTensor& t : layout.whole().tensors())
    tensors.push_back({rename(t.name), t.shape, params.data() + t.offset, nullptr});
  const std::string dir = testing::TempDir(tag);
  ASSERT_TRUE(WriteSafetensors(dir + "/m.safetensors", tensors, {}).ok());
  Result<std::vector<float>> back = LoadLlavaParameters(dir + "/m.safetensors", c);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, params);
}

// transformers >= 4.52's name of a llava-hf tensor: model.vision_tower.*,
// model.multi_modal_projector.*, model.language_model.* and lm_head.weight.
std::string NewTransformersName(const std::string& name) {
  if (name.starts_with("language_model.model.")) return "model.language_model." + name.substr(21);
  if (name == "language_model.lm_head.weight") return "lm_head.weight";
  return "model." + name;
}

// transformers >= 4.52's names: the same values load.
TEST(LlavaCheckpointTest, NewTransformersNames) {
  ExpectLoadedUnder("llava_ckpt_new", 2, NewTransformersName);
}

// transformers 5.x (5.17 on the GPU machine) saves the tower without CLIPVisionModel's
// vision_model level: model.vision_tower.embeddings.class_embedding, ...
TEST(LlavaCheckpointTest, Transformers5Names) {
  ExpectLoadedUnder("llava_ckpt_v5", 4, [](const std::string& name) {
    const std::string tower = "vision_tower.vision_model.";
    return name.starts_with(tower) ? "model.vision_tower." + name.substr(tower.size())
                                   : NewTransformersName(name);
  });
}

TEST(LlavaCheckpointTest, BadFilesAreNamed) {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  const LlavaLayout layout(c);
  const std::vector<float> params = Values(layout.total(), 3);
  const std::string dir = testing::TempDir("llava_ckpt_bad");
  auto write = [&](const std::string& skip, const std::string& reshape, const std::string& extra) {
    std::vector<TensorSource> tensors;
    for (const ParamTensor& t : layout.whole().tensors()) {
      if (t.name == skip) continue;
      std::vector<int64_t> shape = t.shape;
      if (t.name == reshape) shape = {t.numel};
      tensors.push_back({t.name, shape, params.data() + t.offset, nullptr});
    }
    if (!extra.empty()) tensors.push_back({extra, {1}, params.data(), nullptr});
    EXPECT_TRUE(WriteSafetensors(dir + "/m.safetensors", tensors, {}).ok());
    return LoadLlavaParameters(dir + "/m.safetensors", c).status();
  };
  Status s = write("multi_modal_projector.linear_2.weight", "", "");
  EXPECT_NE(s.message().find("tensor multi_modal_projector.linear_2.weight is missing"),
            std::string::npos)
      << s.message();
  s = write("", "language_model.model.layers.0.mlp.up_proj.weight", "");
  EXPECT_NE(s.message().find("language_model.model.layers.0.mlp.up_proj.weight has shape [10240]"),
            std::string::npos)
      << s.message();
  s = write("", "", "image_newline");
  EXPECT_NE(s.message().find("unexpected tensor image_newline"), std::string::npos) << s.message();
  EXPECT_TRUE(write("", "", "").ok());
}

// A llava-hf config.json with a field of the wrong JSON type: an error naming it (nlohmann's
// value() threw out of the trainer before, an abort), and model_type compared as JSON.
TEST(LlavaCheckpointTest, MistypedConfigFieldsAreNamed) {
  nlohmann::json hf = LlavaHuggingFaceConfig(*LlavaPreset("llava-tiny"), 2);
  hf.erase("benchmake");
  hf["text_config"].erase("benchmake");
  ASSERT_TRUE(LlavaConfigFromHuggingFace(hf).ok())
      << LlavaConfigFromHuggingFace(hf).status().message();
  for (auto [where, key, value] : std::vector<std::tuple<std::string, std::string, nlohmann::json>>{
           {"", "model_type", 5},
           {"vision_config", "hidden_act", 1},
           {"vision_config", "num_channels", "3"},
           {"vision_config", "layer_norm_eps", "1e-5"}}) {
    nlohmann::json bad = hf;
    (where.empty() ? bad : bad[where])[key] = value;
    Result<LlavaConfig> c = LlavaConfigFromHuggingFace(bad);
    ASSERT_FALSE(c.ok()) << key;
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  }
}

// LLaVA's pretraining start: CLIP's tower, the LLaMA model, a fresh projector.
TEST(LlavaCheckpointTest, ClipAndLlamaParts) {
  const LlavaConfig c = *LlavaPreset("llava-tiny");
  const LlavaLayout layout(c);
  const std::vector<float> source = Values(layout.total(), 4);
  const std::string dir = testing::TempDir("llava_ckpt_parts");
  // a CLIPModel file: the vision tower under vision_model.*, plus a text tower and heads
  std::vector<TensorSource> clip;
  for (const ParamTensor& t : layout.vision().tensors())
    clip.push_back({"vision_model." + t.name.substr(std::string(kVisionTowerPrefix).size()),
                    t.shape, source.data() + t.offset, nullptr});
  clip.push_back({"text_model.final_layer_norm.weight", {4}, source.data(), nullptr});
  clip.push_back({"visual_projection.weight", {2, 2}, source.data(), nullptr});
  ASSERT_TRUE(WriteSafetensors(dir + "/clip.safetensors", clip, {}).ok());
  const std::vector<float> text(source.begin() + layout.text_offset(), source.end());
  std::filesystem::create_directories(dir + "/llama");
  ASSERT_TRUE(SaveModel(dir + "/llama", c.text, text, 2).ok());
  Result<std::vector<float>> p =
      LoadLlavaFromParts(dir + "/clip.safetensors", dir + "/llama/model.safetensors", c, 7);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const std::vector<float> init = InitLlavaParameters(c, layout, 7);
  for (int64_t i = 0; i < layout.total(); ++i) {
    const bool projector = i >= layout.projector_offset() && i < layout.text_offset();
    ASSERT_EQ((*p)[i], projector ? init[i] : source[i]) << i;
  }
}

}  // namespace
}  // namespace bm::train
