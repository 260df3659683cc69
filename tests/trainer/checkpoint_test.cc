#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "tests/trainer/test_data.h"
#include "trainer/checkpoint/hf_config.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/layout.h"

namespace bm::train {
namespace {

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::TempDir("ckpt"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CheckpointTest, RoundTripBothFamilies) {
  for (const char* preset : {"llama-tiny", "gpt-tiny"}) {
    ModelConfig c = *Preset(preset);
    std::vector<float> params = InitParameters(c, ParamLayout(c), 11);
    ASSERT_TRUE(SaveModel(dir_, c, params, 63).ok());
    Result<ModelConfig> back = ReadCheckpointConfig(dir_);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, c);
    Result<std::vector<float>> loaded = LoadParameters(dir_ + "/model.safetensors", c);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(*loaded, params) << preset;
  }
}

// The checkpoint by range: any range of the mapped file's parameters, transposed tensors and
// tensor boundaries included, is the saved model's; the source outlives the file's name.
TEST_F(CheckpointTest, RangesOfTheMappedCheckpointAreTheSavedParameters) {
  for (const char* preset : {"llama-tiny", "gpt-tiny"}) {
    SCOPED_TRACE(preset);
    ModelConfig c = *Preset(preset);
    c.hidden = 72, c.heads = 3, c.kv_heads = 3, c.ffn_hidden = 200;
    const ParamLayout layout(c);
    std::vector<float> params = InitParameters(c, layout, 3);
    ASSERT_TRUE(SaveModel(dir_, c, params, 63).ok());
    Result<ParamSource> source = CheckpointParameters(dir_ + "/model.safetensors", c);
    ASSERT_TRUE(source.ok()) << source.status().message();
    std::filesystem::remove(dir_ + "/model.safetensors");  // the mapping stays valid
    const int64_t P = layout.total();
    const ParamTensor& fc = layout.tensors()[layout.Index(
        c.family == Family::kGpt ? "transformer.h.0.mlp.c_fc.weight"
                                 : "model.layers.0.mlp.up_proj.weight")];
    for (auto [begin, n] : std::vector<std::pair<int64_t, int64_t>>{
             {0, P}, {1, 17}, {fc.offset - 5, 300}, {fc.offset + 71, 1000}, {P - 3, 3}, {9, 0}}) {
      std::vector<float> part(static_cast<size_t>(n), -1.0f);
      (*source)(begin, part);
      ASSERT_TRUE(std::equal(part.begin(), part.end(), params.begin() + begin))
          << "[" << begin << ", " << begin + n << ")";
    }
  }
  ModelConfig c = *Preset("llama-tiny");
  EXPECT_EQ(CheckpointParameters(dir_ + "/none.safetensors", c).status().code(),
            ErrorCode::kNotFound);
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a gather hands over: each unit in pieces, the pieces of a unit out of order and crossing
// its tensors' boundaries. The file is SaveModel's, byte for byte, for both families (GPT-2's
// transposed Conv1D weights included).
TEST_F(CheckpointTest, AModelWrittenAsItsUnitsComeIsSaveModelsFile) {
  for (const char* preset : {"llama-tiny", "gpt-tiny"}) {
    SCOPED_TRACE(preset);
    ModelConfig c = *Preset(preset);
    const ParamLayout layout(c);
    std::vector<float> params = InitParameters(c, layout, 5);
    const std::string whole = dir_ + "/" + preset + "/whole",
                      pieces = dir_ + "/" + preset + "/pieces";
    std::filesystem::create_directories(whole);
    std::filesystem::create_directories(pieces);
    ASSERT_TRUE(SaveModel(whole, c, params, 63).ok());
    Result<std::unique_ptr<ModelWriter>> w = ModelWriter::Create(pieces, c, 63);
    ASSERT_TRUE(w.ok()) << w.status().message();
    for (const ParamUnit& u : layout.units()) {
      const int64_t third = u.numel / 3;  // the last third, the first, then the middle
      for (auto [b, e] : {std::pair{2 * third, u.numel}, {0, third}, {third, 2 * third}})
        (*w)->Put(u.offset + b, std::span<const float>(params).subspan(u.offset + b, e - b));
    }
    ASSERT_FALSE(std::filesystem::exists(pieces + "/model.safetensors")) << "before Commit";
    Status s = (*w)->Commit();
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(FileBytes(pieces + "/model.safetensors"), FileBytes(whole + "/model.safetensors"));
    EXPECT_EQ(FileBytes(pieces + "/config.json"), FileBytes(whole + "/config.json"));
  }
}

// Values out of the gather's order, or a unit that never comes whole: Commit says which, and no
// file is left behind.
TEST_F(CheckpointTest, AModelWriterGivenUnitsOutOfOrderOrMissingLeavesNoFile) {
  ModelConfig c = *Preset("llama-tiny");
  const ParamLayout layout(c);
  std::vector<float> params = InitParameters(c, layout, 5);
  const ParamUnit& first = layout.units()[0];
  const ParamUnit& second = layout.units()[1];
  {
    auto w = ModelWriter::Create(dir_, c, 63);
    ASSERT_TRUE(w.ok());
    (*w)->Put(0, std::span<const float>(params).first(10));  // unit 0 begun
    (*w)->Put(second.offset, std::span<const float>(params).subspan(second.offset, 4));
    (*w)->Put(0, std::span<const float>(params).first(first.numel));  // ignored: already failed
    Status s = (*w)->Commit();
    EXPECT_EQ(s.code(), ErrorCode::kInternal);
    EXPECT_NE(s.message().find("outside unit 'embeddings'"), std::string::npos) << s.message();
  }
  {
    auto w = ModelWriter::Create(dir_, c, 63);
    ASSERT_TRUE(w.ok());
    (*w)->Put(0, std::span<const float>(params).first(first.numel + second.numel));
    Status s = (*w)->Commit();
    EXPECT_EQ(s.code(), ErrorCode::kInternal);
    EXPECT_NE(s.message().find(fmt::format("2 of the model's {} units", layout.units().size())),
              std::string::npos)
        << s.message();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "no model file, no temporary";
}

TEST_F(CheckpointTest, ASafetensorsWriterTakesExactlyItsTensorsValues) {
  const std::string path = dir_ + "/t.safetensors";
  const std::vector<float> v = {1, 2, 3, 4, 5, 6, 7};
  auto make = [&] {
    auto w = SafetensorsWriter::Create(path, {{"a", {2, 2}}, {"b", {3}}}, {});
    EXPECT_TRUE(w.ok());
    return std::move(*w);
  };
  {
    auto w = make();
    EXPECT_TRUE(w->Append(v.data(), 3).ok());
    Status s = w->Commit();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.message().find("3 of the tensors' 7 values"), std::string::npos) << s.message();
  }
  {
    auto w = make();
    EXPECT_TRUE(w->Append(v.data(), 5).ok());
    EXPECT_EQ(w->Append(v.data(), 3).code(), ErrorCode::kInvalidArgument);  // one past b
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  auto w = make();
  ASSERT_TRUE(w->Append(v.data(), 2).ok());
  ASSERT_TRUE(w->Append(v.data() + 2, 5).ok());
  ASSERT_TRUE(w->Commit().ok());
  Result<SafetensorsFile> f = ReadSafetensors(path);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->Find("a")->data, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(f->Find("b")->data, (std::vector<float>{5, 6, 7}));
}

TEST_F(CheckpointTest, GptConv1DWeightsAreTransposedOnDisk) {
  ModelConfig c = *Preset("gpt-tiny");
  ParamLayout layout(c);
  std::vector<float> params = InitParameters(c, layout, 11);
  ASSERT_TRUE(SaveModel(dir_, c, params, 63).ok());
  Result<SafetensorsFile> f = ReadSafetensors(dir_ + "/model.safetensors");
  ASSERT_TRUE(f.ok());
  const NamedTensor* t = f->Find("transformer.h.0.mlp.c_fc.weight");
  ASSERT_NE(t, nullptr);
  const ParamTensor* p = layout.Find("transformer.h.0.mlp.c_fc.weight");
  // trainer [F=256, C=64] -> HF Conv1D [C=64, F=256]
  EXPECT_EQ(t->shape, (std::vector<int64_t>{64, 256}));
  EXPECT_EQ(t->data[1 * 256 + 5], params[p->offset + 5 * 64 + 1]);  // [c=1][f=5] == W[f=5][c=1]
  EXPECT_EQ(f->Find("lm_head.weight"), nullptr);                    // tied
}

// The transposed tensors go through tiles of 64: shapes that are not multiples of it, and a
// file that cannot be written leaves nothing behind.
TEST_F(CheckpointTest, UnevenShapesRoundTripAndAFailedWriteLeavesNoFile) {
  ModelConfig c = *Preset("gpt-tiny");
  c.hidden = 72, c.heads = 3, c.kv_heads = 3, c.ffn_hidden = 200;
  std::vector<float> params = InitParameters(c, ParamLayout(c), 5);
  ASSERT_TRUE(SaveModel(dir_, c, params, 63).ok());
  Result<std::vector<float>> loaded = LoadParameters(dir_ + "/model.safetensors", c);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, params);

  const std::string missing = dir_ + "/no/such/dir";
  Status s = SaveModel(missing, c, params, 63);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(missing), std::string::npos) << s.message();
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_))
    files += e.is_regular_file();
  EXPECT_EQ(files, 2u);  // model.safetensors and config.json of the first save, no temporary
}

TEST_F(CheckpointTest, HuggingFaceConfigFields) {
  nlohmann::json llama = HuggingFaceConfig(*Preset("llama2-7b"), 2);
  EXPECT_EQ(llama["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(llama["num_key_value_heads"], 32);
  EXPECT_EQ(llama["intermediate_size"], 11008);
  nlohmann::json gpt = HuggingFaceConfig(*Preset("gpt2-124m"), 50256);
  EXPECT_EQ(gpt["architectures"][0], "GPT2LMHeadModel");
  EXPECT_EQ(gpt["n_positions"], 1024);
  EXPECT_EQ(gpt["activation_function"], "gelu_new");
  // read back from the HF fields alone
  gpt.erase("benchmake");
  Result<ModelConfig> c = ModelConfigFromHuggingFace(gpt);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(ParameterCount(*c), 124'439'808);
}

// Llama-3.2-1B's config.json as meta-llama publishes it (transformers 4.45): its llama3 rope
// scaling stretches the rotary frequencies, which this trainer's plain RoPE does not; loading it
// would train another model than the checkpoint's.
nlohmann::json Llama32Config() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
    "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

TEST_F(CheckpointTest, HuggingFaceFieldsThisModelCannotFollowAreRefusedByName) {
  auto refused = [](const nlohmann::json& j, const std::string& key) {
    Result<ModelConfig> c = ModelConfigFromHuggingFace(j);
    ASSERT_FALSE(c.ok()) << key << " was accepted";
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument) << c.status().message();
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  };
  nlohmann::json llama = Llama32Config();
  refused(llama, "rope_scaling");
  llama["rope_scaling"] = nullptr;  // as TinyLlama's and Llama-2's: plain RoPE
  Result<ModelConfig> c = ModelConfigFromHuggingFace(llama);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->kv_heads, 8);
  EXPECT_TRUE(c->tied_embeddings);
  llama["rope_scaling"] = {{"rope_type", "default"}};
  EXPECT_TRUE(ModelConfigFromHuggingFace(llama).ok());
  for (auto [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"hidden_act", "gelu"},
                                                           {"attention_bias", true},
                                                           {"mlp_bias", true},
                                                           {"head_dim", 128}}) {
    nlohmann::json bad = llama;
    bad[key] = value;
    refused(bad, key);
  }
  // transformers 5 writes rope_theta inside rope_parameters (modeling_rope_utils' RopeParameters).
  nlohmann::json v5 = llama;
  v5.erase("rope_theta");
  v5.erase("rope_scaling");
  v5["rope_parameters"] = {{"rope_theta", 500000.0}, {"rope_type", "default"}};
  c = ModelConfigFromHuggingFace(v5);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rope_theta, 500000.0);
  v5["rope_parameters"]["rope_type"] = "llama3";
  refused(v5, "rope_parameters");

  nlohmann::json gpt = HuggingFaceConfig(*Preset("gpt2-124m"), 50256);
  gpt.erase("benchmake");
  gpt["activation_function"] = "gelu_pytorch_tanh";  // the same tanh GELU as gelu_new
  EXPECT_TRUE(ModelConfigFromHuggingFace(gpt).ok());
  for (auto [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"activation_function", "relu"},
           {"scale_attn_weights", false},
           {"scale_attn_by_inverse_layer_idx", true}}) {
    nlohmann::json bad = gpt;
    bad[key] = value;
    refused(bad, key);
  }
}

// A mistyped field is an error naming it, never an exception out of the trainer (it aborted).
TEST_F(CheckpointTest, MistypedConfigFieldsAreErrorsNamingTheField) {
  auto refused = [](const nlohmann::json& j, const std::string& key) {
    Result<ModelConfig> c = ModelConfigFromHuggingFace(j);
    ASSERT_FALSE(c.ok()) << key << " was accepted";
    EXPECT_EQ(c.status().code(), ErrorCode::kInvalidArgument) << c.status().message();
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  };
  nlohmann::json llama = HuggingFaceConfig(*Preset("llama-tiny"), 63);
  nlohmann::json ours = llama;
  ours["benchmake"]["preset"] = 5;
  refused(ours, "preset");
  llama.erase("benchmake");
  for (auto [key, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"model_type", 5},
                                                           {"hidden_size", "64"},
                                                           {"num_key_value_heads", 2.5},
                                                           {"rms_norm_eps", "1e-5"},
                                                           {"tie_word_embeddings", 1},
                                                           {"rope_scaling", "linear"}}) {
    nlohmann::json bad = llama;
    bad[key] = value;
    refused(bad, key);
  }
}

// The GPT-2 weights Hugging Face publishes (openai-community/gpt2) were saved from GPT2Model:
// their tensors are named without GPT2LMHeadModel's base_model_prefix "transformer." ("wte.weight",
// "h.0.attn.c_attn.weight", with the "h.N.attn.bias" mask buffers), and transformers'
// from_pretrained reads them either way. So does an init checkpoint here; the values are the
// same as from the prefixed file.
TEST_F(CheckpointTest, TensorsNamedWithoutTheBaseModelPrefixLoad) {
  for (const char* preset : {"gpt-tiny", "llama-tiny"}) {
    ModelConfig c = *Preset(preset);
    const std::vector<float> params = InitParameters(c, ParamLayout(c), 3);
    ASSERT_TRUE(SaveModel(dir_, c, params, 63).ok());
    Result<SafetensorsFile> file = ReadSafetensors(dir_ + "/model.safetensors");
    ASSERT_TRUE(file.ok());
    const std::string prefix = c.family == Family::kGpt ? "transformer." : "model.";
    std::vector<TensorSource> bare;
    for (const NamedTensor& t : file->tensors)
      bare.push_back({t.name.starts_with(prefix) ? t.name.substr(prefix.size()) : t.name,
                      t.shape,
                      t.data.data(),
                      {}});
    std::vector<float> mask(16, 1.0f);
    if (c.family == Family::kGpt) bare.push_back({"h.0.attn.bias", {1, 1, 4, 4}, mask.data(), {}});
    ASSERT_TRUE(WriteSafetensors(dir_ + "/bare.safetensors", bare, {{"format", "pt"}}).ok());
    Result<std::vector<float>> loaded = LoadParameters(dir_ + "/bare.safetensors", c);
    ASSERT_TRUE(loaded.ok()) << preset << ": " << loaded.status().message();
    EXPECT_EQ(*loaded, params) << preset;
  }
}

TEST_F(CheckpointTest, WrongShapeIsRefused) {
  ModelConfig c = *Preset("llama-tiny");
  ASSERT_TRUE(SaveModel(dir_, c, InitParameters(c, ParamLayout(c), 1), 63).ok());
  ModelConfig wider = c;
  wider.ffn_hidden = 192;
  Result<std::vector<float>> r = LoadParameters(dir_ + "/model.safetensors", wider);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(
                "model.layers.0.mlp.gate_proj.weight has shape [160,64], the model needs [192,64]"),
            std::string::npos)
      << r.status().message();
  ModelConfig deeper = c;
  deeper.layers = 3;
  r = LoadParameters(dir_ + "/model.safetensors", deeper);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.layers.2.input_layernorm.weight is missing"),
            std::string::npos)
      << r.status().message();
  ModelConfig shallower = c;
  shallower.layers = 1;
  r = LoadParameters(dir_ + "/model.safetensors", shallower);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unexpected tensor model.layers.1"), std::string::npos)
      << r.status().message();
}

TEST_F(CheckpointTest, TruncatedOrDamagedFilesAreRefused) {
  ModelConfig c = *Preset("llama-tiny");
  ASSERT_TRUE(SaveModel(dir_, c, InitParameters(c, ParamLayout(c), 1), 63).ok());
  const std::string path = dir_ + "/model.safetensors";
  std::string bytes = *ReadFileBytes(path);
  auto refuse = [&](const std::string& content, const char* expect) {
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/bad.safetensors", content).ok());
    Result<SafetensorsFile> r = ReadSafetensors(dir_ + "/bad.safetensors");
    ASSERT_FALSE(r.ok()) << expect;
    EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
    EXPECT_NE(r.status().message().find(expect), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("bad.safetensors"), std::string::npos);
  };
  refuse(bytes.substr(0, bytes.size() - 100), "truncated");
  refuse(bytes.substr(0, 5), "shorter than the 8-byte header");
  refuse(bytes.substr(0, 100), "truncated");
  refuse(bytes + "extra", "bytes after the last tensor");
  std::string bad_json = bytes;
  bad_json[8] = '[';
  refuse(bad_json, "not a JSON object");
  // the original still loads
  EXPECT_TRUE(ReadSafetensors(path).ok());
}

TEST_F(CheckpointTest, OverlappingRangesAreRefused) {
  // handwritten header: two tensors sharing bytes
  std::string json =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  file += json + std::string(12, '\0');
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/o.safetensors", file).ok());
  Result<SafetensorsFile> r = ReadSafetensors(dir_ + "/o.safetensors");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gap or overlaps"), std::string::npos)
      << r.status().message();
}

// A shape whose element count overflows 64 bits: 2^62 F32 elements are 2^64 bytes, which wraps
// to the 0 bytes the offsets give. The safetensors crate refuses such a header
// (SafeTensorError::ValidationOverflow, checked_mul); so must we, before anything is allocated
// (ReadSafetensors threw std::length_error allocating 2^62 floats).
TEST_F(CheckpointTest, AShapeWhoseSizeOverflowsIsRefused) {
  for (const char* shape : {"[4611686018427387904]", "[4294967296,4294967296,4]"}) {
    std::string json =
        fmt::format(R"({{"w":{{"dtype":"F32","shape":{},"data_offsets":[0,0]}}}})", shape);
    json.append((8 - json.size() % 8) % 8, ' ');
    std::string file(8, '\0');
    for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    file += json;
    ASSERT_TRUE(WriteFileAtomically(dir_ + "/big.safetensors", file).ok());
    Result<SafetensorsFile> r = ReadSafetensors(dir_ + "/big.safetensors");
    ASSERT_FALSE(r.ok()) << shape;
    EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
    EXPECT_NE(r.status().message().find("tensor w"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("big.safetensors"), std::string::npos);
  }
}

TEST_F(CheckpointTest, ReadsBf16) {
  // 1.0 and -2.0 in bf16: 0x3F80, 0xC000
  std::string json = R"({"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  file += json + std::string("\x80\x3f\x00\xc0", 4);
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/b.safetensors", file).ok());
  Result<SafetensorsFile> r = ReadSafetensors(dir_ + "/b.safetensors");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->tensors[0].data, (std::vector<float>{1.0f, -2.0f}));
}

// A bf16 checkpoint (as Hugging Face ships them) of a model with transposed tensors, by range:
// every value widened from its bf16 bits and put back in the trainer's layout.
TEST_F(CheckpointTest, Bf16CheckpointsReadByRangeWidenAndTranspose) {
  ModelConfig c = *Preset("gpt-tiny");
  const ParamLayout layout(c);
  const std::vector<float> params = InitParameters(c, layout, 8);
  auto high_half = [](float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);
  };
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::string data;
  std::vector<float> want(params.size());
  for (const ParamTensor& t : layout.tensors()) {
    const int64_t rows = t.shape[0], cols = t.shape.size() > 1 ? t.shape[1] : 1;
    std::vector<int64_t> shape = t.shape;
    if (t.transposed_in_checkpoint) shape = {cols, rows};
    header[t.name] = {{"dtype", "BF16"},
                      {"shape", shape},
                      {"data_offsets", {data.size(), data.size() + 2 * t.numel}}};
    for (int64_t i = 0; i < t.numel; ++i) {
      // file element i: the trainer's (r, c) = (i % rows, i / rows) when transposed
      const int64_t j = t.transposed_in_checkpoint ? (i % rows) * cols + i / rows : i;
      const uint16_t h = high_half(params[t.offset + j]);
      data.append(reinterpret_cast<const char*>(&h), 2);
      const uint32_t bits = static_cast<uint32_t>(h) << 16;
      std::memcpy(&want[t.offset + j], &bits, 4);
    }
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/bf16.safetensors", file + json + data).ok());
  Result<ParamSource> source = CheckpointParameters(dir_ + "/bf16.safetensors", c);
  ASSERT_TRUE(source.ok()) << source.status().message();
  const ParamTensor* fc = layout.Find("transformer.h.1.mlp.c_fc.weight");
  const int64_t P = layout.total();
  for (auto [begin, n] : std::vector<std::pair<int64_t, int64_t>>{
           {0, P}, {fc->offset + 3, fc->numel}, {fc->offset - 7, 20}, {P - 5, 5}}) {
    std::vector<float> part(static_cast<size_t>(n));
    (*source)(begin, part);
    ASSERT_TRUE(std::equal(part.begin(), part.end(), want.begin() + begin))
        << "[" << begin << ", " << begin + n << ")";
  }
}

}  // namespace
}  // namespace bm::train
