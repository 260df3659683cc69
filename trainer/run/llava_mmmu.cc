#include "trainer/run/llava_mmmu.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "trainer/checkpoint/llava_checkpoint.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/cpu/cpu_backend.h"
#include "trainer/data/llava_data.h"
#include "trainer/eval/decode_table.h"
#include "trainer/eval/mmmu_run.h"
#include "trainer/platform.h"
#include "trainer/run/llava_decoder.h"
#include "trainer/run/llava_train_loop.h"
#include "trainer/run/metrics.h"

namespace bm::train {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kSplit = "mmmu";
constexpr uint32_t kMmmuSeed = 42;  // run_llava.py's --seed default: its set_seed(42)

Status CheckRun(const RunConfig& run) {
  // (the device and precision: CreateLlavaDecoder's)
  if (run.layout.tp * run.layout.pp * run.layout.dp != 1)
    return Errorf(ErrorCode::kUnsupported, "layout {}: MMMU decodes on one rank (TP1PP1DP1)",
                  run.layout.ToString());
  if (run.max_new_tokens < 1)
    return Errorf(ErrorCode::kInvalidArgument, "max_new_tokens {} must be >= 1",
                  run.max_new_tokens);
  return Status::Ok();
}

// The checkpoint's model, checked against the data's images and vocabulary.
Result<LlavaConfig> ModelFor(const RunConfig& run, const LlavaData& data) {
  if (run.init.empty() || !IsLlavaRun(run))
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: MMMU data needs a LLaVA checkpoint (a LLaVA pretrain or finetune), and "
                  "the checkpoint '{}' is not one (its config.json's model_type is not \"llava\")",
                  data.dir(), run.init);
  BM_ASSIGN_OR_RETURN(LlavaConfig c, ReadLlavaCheckpointConfig(run.init));
  if (data.vocab_size() > c.text.vocab)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: the tokenizer's {} tokens do not fit the model's vocabulary ({})",
                  data.dir(), data.vocab_size(), c.text.vocab);
  if (data.image_tokens() != c.image_tokens() || data.image_size() != c.vision.image_size)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: images of {} px in {} tokens; the model takes {} px in {} tokens (set the "
                  "mmmu_data target's image_size and image_tokens)",
                  data.dir(), data.image_size(), data.image_tokens(), c.vision.image_size,
                  c.image_tokens());
  c.image_token_id = data.image_token_id();
  BM_TRY(Validate(c));
  return c;
}

// A question's prompt as the model reads it: each placeholder becomes image_tokens positions
// (id 0, rows spliced there), as trainer/data/llava_batch.h expands a sample.
struct Prompt {
  std::vector<int32_t> ids;
  std::vector<int64_t> positions;
  std::vector<float> pixels;
  int64_t images = 0;
};

Result<Prompt> PromptOf(const LlavaData& data, int64_t sample) {
  BM_ASSIGN_OR_RETURN(LlavaSample s, data.Sample(sample));
  Prompt p;
  const int64_t K = data.image_tokens(), S = data.image_size();
  for (int32_t id : s.tokens) {
    if (id != data.image_token_id()) {
      p.ids.push_back(id);
      continue;
    }
    for (int64_t k = 0; k < K; ++k) {
      p.positions.push_back(static_cast<int64_t>(p.ids.size()));
      p.ids.push_back(0);
    }
  }
  p.images = static_cast<int64_t>(s.images.size());
  p.pixels.resize(p.images * 3 * S * S);
  for (int64_t i = 0; i < p.images; ++i) BM_TRY(data.Pixels(s.images[i], &p.pixels[i * 3 * S * S]));
  return p;
}

Status WriteJson(const std::string& path, const nlohmann::json& j) {
  return WriteFileAtomically(path, j.dump(2) + "\n");
}

}  // namespace

bool IsMmmuData(const std::string& dir) {
  std::ifstream in(dir + "/stats.json");
  if (!in) return false;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() && j.value("task", "") == "mmmu";
}

Result<nlohmann::json> RunLlavaMmmu(const RunConfig& run, std::ostream* progress) {
  const Clock::time_point t0 = Clock::now();
  const std::string started_at = UtcNow();
  BM_TRY(CheckRun(run));
  BM_ASSIGN_OR_RETURN(LlavaData data, LlavaData::Open(run.data_dir, kSplit));
  BM_ASSIGN_OR_RETURN(eval::DecodeTable table,
                      eval::DecodeTable::Read(run.data_dir + "/" + eval::kDecodeTableFile));
  BM_ASSIGN_OR_RETURN(std::vector<eval::MmmuQuestion> questions,
                      eval::ReadMmmuQuestions(run.data_dir + "/questions.jsonl",
                                              /*require_images=*/false));
  if (static_cast<int64_t>(questions.size()) != data.num_samples())
    return Errorf(ErrorCode::kCorrupt, "{}: questions.jsonl has {} questions, {}.idx {} prompts",
                  run.data_dir, questions.size(), kSplit, data.num_samples());
  std::unordered_map<std::string, int64_t> sample_of;
  for (size_t i = 0; i < questions.size(); ++i)
    sample_of[questions[i].id] = static_cast<int64_t>(i);
  BM_ASSIGN_OR_RETURN(LlavaConfig model, ModelFor(run, data));

  const int threads = run.threads > 0 ? static_cast<int>(run.threads)
                                      : static_cast<int>(std::thread::hardware_concurrency());
  BM_ASSIGN_OR_RETURN(std::unique_ptr<LlavaDecoder> llava,
                      CreateLlavaDecoder(run.device, model, run.precision, threads));
  {
    BM_ASSIGN_OR_RETURN(std::vector<float> params,
                        LoadLlavaParameters(run.init + "/" + kModelFile, model));
    BM_TRY(llava->SetParameters(params));
  }
  if (progress)
    *progress << fmt::format("MMMU: {} questions, greedy, max_new_tokens {}\n", questions.size(),
                             run.max_new_tokens);

  nlohmann::json decoded = nlohmann::json::object();
  int64_t stopped_eos = 0, stopped_max = 0, stopped_context = 0, new_tokens = 0, done = 0;
  const double decode_start = std::chrono::duration<double>(Clock::now() - t0).count();
  auto respond = [&](const eval::MmmuQuestion& q, const std::string&) -> Result<std::string> {
    BM_ASSIGN_OR_RETURN(Prompt p, PromptOf(data, sample_of.at(q.id)));
    if (p.images != 1)
      return Errorf(ErrorCode::kCorrupt, "{}: the prompt holds {} images (image_1 only)",
                    run.data_dir, p.images);
    bool context_full = false;
    BM_ASSIGN_OR_RETURN(std::vector<int32_t> out,
                        llava->GenerateGreedy(p.ids, p.pixels.data(), p.positions.data(), p.images,
                                              run.max_new_tokens, table.eos_id(), &context_full));
    const bool eos = !out.empty() && out.back() == table.eos_id();
    const char* stop = eos ? "eos" : context_full ? "context" : "max_new_tokens";
    (eos ? stopped_eos : context_full ? stopped_context : stopped_max) += 1;
    new_tokens += static_cast<int64_t>(out.size());
    std::string text = table.Decode(out);
    decoded[q.id] = {
        {"response", text}, {"prompt_tokens", p.ids.size()}, {"tokens", out}, {"stopped", stop}};
    if (progress && run.progress)
      *progress << fmt::format("\rMMMU {}/{}   ", ++done, questions.size()) << std::flush;
    return text;
  };
  BM_ASSIGN_OR_RETURN(eval::MmmuRun result, eval::RunMmmu(questions, respond, kMmmuSeed));
  if (progress && run.progress) *progress << "\n";
  const double decode_s = std::chrono::duration<double>(Clock::now() - t0).count() - decode_start;

  nlohmann::json eval = result.eval;
  eval["decoding"] = {
      {"greedy", true},
      {"max_new_tokens", run.max_new_tokens},
      {"eos_id", table.eos_id()},
      {"new_tokens", new_tokens},
      {"seconds", decode_s},
      {"stopped",
       {{"eos", stopped_eos}, {"max_new_tokens", stopped_max}, {"context", stopped_context}}}};
  if (progress)
    *progress << fmt::format("MMMU accuracy {:.4f} ({} of {} questions), {} tokens in {:.2f} s\n",
                             eval["accuracy"].get<double>(), eval["mmmu"]["correct"].get<int64_t>(),
                             questions.size(), new_tokens, decode_s);
  TrainSummary summary;
  summary.model = model.text;
  summary.run = run;
  summary.run.threads = threads;
  const std::optional<GpuDevice> gpu = llava->device();
  if (gpu) {
    summary.memory = gpu->memory;
  } else {
    summary.memory.peak_bytes = PeakResidentBytes();
    summary.memory.device_total_bytes = cpu::PhysicalMemoryBytes();
  }
  summary.device_name =
      gpu ? gpu->name : fmt::format("{}, {} threads", cpu::CpuModelName(), threads);
  summary.started_at = started_at;
  summary.platform = ProbePlatform(/*gpu_libraries=*/gpu.has_value());
  summary.eval = eval;
  summary.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json metrics = BuildMetrics(summary);
  metrics["llava"] = {{"model", ToJson(model)}};
  std::filesystem::create_directories(run.out_dir);
  BM_TRY(WriteJson(run.out_dir + "/predictions.json", result.predictions));
  BM_TRY(WriteJson(run.out_dir + "/responses.json", decoded));
  BM_TRY(WriteJson(run.out_dir + "/metrics.json", metrics));
  return metrics;
}

}  // namespace bm::train
