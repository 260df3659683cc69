// llava_dump: benchmake's side of tests/gpu/llava_hf_check.py (LlavaModel<float> against
// transformers' LlavaForConditionalGeneration).
//
//   llava_dump save OUT_DIR [PRESET [SEED]]
//       a LLaVA model of PRESET (default llava-tiny) with random weights of a trained
//       network's scale, saved as SaveLlavaModel saves it (model.safetensors, config.json)
//   llava_dump run CKPT_DIR INPUTS_JSON PIXELS_SAFETENSORS OUT_SAFETENSORS
//       the checkpoint (ours, or hf_to_benchmake.py --llava's) on transformers-style inputs:
//       INPUTS_JSON {"input_ids": [[...], ...] (B rows of T; each image as image_seq_length
//       copies of image_token_index, as LlavaProcessor expands it), "label_mask": [[0|1, ...]]
//       (1 where HF's labels are not -100)}; PIXELS_SAFETENSORS holds "pixel_values"
//       [images, 3, S, S], the images in the order of their tokens. Writes logprobs [B, T, V]
//       (log-softmax of the next-token logits over the text vocabulary V), losses [B, T]
//       (-log p(input_ids[t+1]), 0 at the last position and before image tokens) and loss [1]
//       (HF's: the mean over t with label_mask[t+1] = 1).
//   llava_dump generate CKPT_DIR INPUTS_JSON PIXELS_SAFETENSORS MAX_NEW EOS [DEVICE]
//       greedy decoding (trainer/run/llava_decoder.h on DEVICE, cpu or cuda, in fp32) from
//       INPUTS_JSON's first row of input_ids (images expanded as above; label_mask not needed),
//       at most MAX_NEW tokens, stopping at EOS (-1: none) or when the sequence outgrows the
//       model's max_seq; prints {"tokens": [...], "context_full": bool} on stdout.
// Exit 0, or 1 with a message on stderr; 77 (ctest's skip) when DEVICE is cuda and this build
// or machine has no GPU.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "trainer/checkpoint/llava_checkpoint.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/cpu/llava_model.h"
#include "trainer/model/llava_layout.h"
#include "trainer/rng.h"
#include "trainer/run/llava_decoder.h"

namespace bm::train {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "llava_dump: %s\n", message.c_str());
  return 1;
}

int Save(const std::string& dir, const std::string& preset, uint64_t seed) {
  Result<LlavaConfig> c = LlavaPreset(preset);
  if (!c.ok()) return Fail(c.status().message());
  const LlavaLayout layout(*c);
  std::vector<float> params(layout.total());
  const std::vector<ParamTensor>& tensors = layout.whole().tensors();
  for (size_t t = 0; t < tensors.size(); ++t) {
    const ParamTensor& p = tensors[t];
    for (int64_t j = 0; j < p.numel; ++j) {
      const double z = NormalAt(seed, t, static_cast<uint64_t>(j));
      params[p.offset + j] = static_cast<float>(p.init == InitKind::kOnes    ? 1.0 + 0.1 * z
                                                : p.init == InitKind::kZeros ? 0.05 * z
                                                                             : 0.05 * z);
    }
  }
  std::filesystem::create_directories(dir);
  Status s = SaveLlavaModel(dir, *c, params, -1);
  if (!s.ok()) return Fail(s.message());
  std::printf("llava_dump: %s, seed %llu -> %s\n", preset.c_str(),
              static_cast<unsigned long long>(seed), dir.c_str());
  return 0;
}

// A checkpoint's config and whole model, or the message naming what failed.
struct Checkpoint {
  LlavaConfig config;
  std::vector<float> params;
};
Result<Checkpoint> LoadCheckpoint(const std::string& ckpt) {
  BM_ASSIGN_OR_RETURN(LlavaConfig c, ReadLlavaCheckpointConfig(ckpt));
  BM_ASSIGN_OR_RETURN(std::vector<float> params, LoadLlavaParameters(ckpt + "/" + kModelFile, c));
  return Checkpoint{c, std::move(params)};
}

// The file's pixel_values, checked to hold `images` images.
// INPUTS_JSON's object, or nullopt when it is not JSON or lacks one of `keys`.
std::optional<nlohmann::json> ReadInputs(const std::string& path,
                                         std::initializer_list<const char*> keys) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  for (const char* key : keys)
    if (!j.contains(key)) return std::nullopt;
  return j;
}

Result<SafetensorsFile> ReadPixels(const std::string& path, int64_t images) {
  BM_ASSIGN_OR_RETURN(SafetensorsFile px, ReadSafetensors(path));
  const NamedTensor* pv = px.Find("pixel_values");
  if (!pv || (images > 0 && pv->shape[0] != images))
    return Status(ErrorCode::kInvalidArgument,
                  path + ": no pixel_values for " + std::to_string(images) + " images");
  return px;
}

int RunModel(const std::string& ckpt, const std::string& inputs_path,
             const std::string& pixels_path, const std::string& out) {
  Result<Checkpoint> ck = LoadCheckpoint(ckpt);
  if (!ck.ok()) return Fail(ck.status().message());
  const LlavaConfig* c = &ck->config;
  const std::vector<float>* params = &ck->params;
  const std::optional<nlohmann::json> j = ReadInputs(inputs_path, {"input_ids", "label_mask"});
  if (!j) return Fail(inputs_path + ": not {\"input_ids\", \"label_mask\"}");
  const auto ids = (*j)["input_ids"].get<std::vector<std::vector<int64_t>>>();
  const auto labels = (*j)["label_mask"].get<std::vector<std::vector<int>>>();
  const int64_t B = static_cast<int64_t>(ids.size()), T = static_cast<int64_t>(ids[0].size());
  const int64_t V = c->text.vocab, K = c->image_tokens(), image = c->image_token_id;
  std::vector<int32_t> inputs(B * T), targets(B * T, 0);
  std::vector<uint8_t> mask(B * T, 0);
  std::vector<int64_t> positions;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t id = ids[b][t];
      if (id == image) positions.push_back(b * T + t);
      inputs[b * T + t] = id == image ? 0 : static_cast<int32_t>(id);
      if (t + 1 < T && ids[b][t + 1] != image) {
        targets[b * T + t] = static_cast<int32_t>(ids[b][t + 1]);
        mask[b * T + t] = labels[b][t + 1] != 0;
      }
    }
  const int64_t images = static_cast<int64_t>(positions.size()) / K;
  if (images * K != static_cast<int64_t>(positions.size()))
    return Fail(inputs_path + ": image tokens are not a multiple of image_seq_length");
  Result<SafetensorsFile> px = ReadPixels(pixels_path, images);
  if (!px.ok()) return Fail(px.status().message());
  const NamedTensor* pv = px->Find("pixel_values");
  cpu::LlavaModel<float> model(*c, B, T, std::max<int64_t>(images, 1));
  Status s = model.SetParameters(*params);
  if (!s.ok()) return Fail(s.message());
  cpu::LlavaMicroBatch batch{inputs.data(),   targets.data(),   mask.data(), B, T,
                             pv->data.data(), positions.data(), images};
  std::vector<float> losses(B * T), logprobs(B * T * V), one(B * T);
  s = model.TokenLosses(batch, losses.data());
  if (!s.ok()) return Fail(s.message());
  double sum = 0;
  int64_t count = 0;
  for (int64_t n = 0; n < B * T; ++n) {
    if (mask[n]) sum += losses[n], ++count;
    if (n % T == T - 1 || (n % T + 1 < T && ids[n / T][n % T + 1] == image)) losses[n] = 0;
  }
  std::vector<int32_t> every(B * T);
  for (int64_t v = 0; v < V; ++v) {
    std::fill(every.begin(), every.end(), static_cast<int32_t>(v));
    batch.targets = every.data();
    if (!(s = model.TokenLosses(batch, one.data())).ok()) return Fail(s.message());
    for (int64_t n = 0; n < B * T; ++n) logprobs[n * V + v] = -one[n];
  }
  const float loss = count > 0 ? static_cast<float>(sum / count) : 0.0f;
  s = WriteSafetensors(out,
                       {{"logprobs", {B, T, V}, logprobs.data(), {}},
                        {"losses", {B, T}, losses.data(), {}},
                        {"loss", {1}, &loss, {}}},
                       {});
  if (!s.ok()) return Fail(s.message());
  std::printf("llava_dump: %lld x %lld tokens, %lld images, loss %.6f -> %s\n",
              static_cast<long long>(B), static_cast<long long>(T), static_cast<long long>(images),
              loss, out.c_str());
  return 0;
}

int Generate(const std::string& ckpt, const std::string& inputs_path,
             const std::string& pixels_path, int64_t max_new, int32_t eos,
             const std::string& device) {
  Result<Checkpoint> ck = LoadCheckpoint(ckpt);
  if (!ck.ok()) return Fail(ck.status().message());
  const LlavaConfig* c = &ck->config;
  const std::vector<float>* params = &ck->params;
  const std::optional<nlohmann::json> j = ReadInputs(inputs_path, {"input_ids"});
  if (!j) return Fail(inputs_path + ": not {\"input_ids\": [[...]]}");
  const auto row = (*j)["input_ids"][0].get<std::vector<int64_t>>();
  std::vector<int32_t> prompt;
  std::vector<int64_t> positions;
  for (size_t t = 0; t < row.size(); ++t) {
    if (row[t] == c->image_token_id) positions.push_back(static_cast<int64_t>(t));
    prompt.push_back(row[t] == c->image_token_id ? 0 : static_cast<int32_t>(row[t]));
  }
  const int64_t images = static_cast<int64_t>(positions.size()) / c->image_tokens();
  Result<SafetensorsFile> px = ReadPixels(pixels_path, images);
  if (!px.ok()) return Fail(px.status().message());
  const NamedTensor* pv = px->Find("pixel_values");
  Result<std::unique_ptr<LlavaDecoder>> model =
      CreateLlavaDecoder(device, *c, Precision::kFp32, /*threads=*/0);
  if (!model.ok()) {  // no GPU, or a build without CUDA: skipped
    const ErrorCode code = model.status().code();
    const bool no_gpu = code == ErrorCode::kUnavailable || code == ErrorCode::kUnsupported;
    Fail(model.status().message());
    return no_gpu && device == "cuda" ? 77 : 1;
  }
  Status s = (*model)->SetParameters(*params);
  if (!s.ok()) return Fail(s.message());
  bool context_full = false;
  Result<std::vector<int32_t>> out = (*model)->GenerateGreedy(
      prompt, pv->data.data(), positions.data(), images, max_new, eos, &context_full);
  if (!out.ok()) return Fail(out.status().message());
  std::printf("%s\n",
              nlohmann::json{{"tokens", *out}, {"context_full", context_full}}.dump().c_str());
  return 0;
}

int Main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "save" && argc >= 3)
    return Save(argv[2], argc > 3 ? argv[3] : "llava-tiny", argc > 4 ? std::stoull(argv[4]) : 1);
  if (cmd == "run" && argc == 6) return RunModel(argv[2], argv[3], argv[4], argv[5]);
  if (cmd == "generate" && (argc == 7 || argc == 8))
    return Generate(argv[2], argv[3], argv[4], std::stoll(argv[5]),
                    static_cast<int32_t>(std::stol(argv[6])), argc == 8 ? argv[7] : "cpu");
  return Fail(
      "usage: llava_dump save OUT_DIR [PRESET [SEED]] | llava_dump run CKPT_DIR INPUTS_JSON "
      "PIXELS_SAFETENSORS OUT_SAFETENSORS | llava_dump generate CKPT_DIR INPUTS_JSON "
      "PIXELS_SAFETENSORS MAX_NEW EOS [DEVICE]");
}

}  // namespace
}  // namespace bm::train

int main(int argc, char** argv) { return bm::train::Main(argc, argv); }
