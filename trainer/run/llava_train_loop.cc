#include "trainer/run/llava_train_loop.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "trainer/checkpoint/llava_checkpoint.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/cpu/cpu_backend.h"
#include "trainer/cpu/llava_trainer.h"
#include "trainer/data/llava_batch.h"
#include "trainer/model/llava_layout.h"
#include "trainer/platform.h"
#include "trainer/run/llava_metrics.h"
#include "trainer/run/llava_trainer_api.h"
#include "trainer/run/metrics.h"
#include "trainer/run/run_ranks.h"
#include "trainer/run/schedule.h"
#include "trainer/run/train_loop.h"

namespace bm::train {
namespace {

using Clock = std::chrono::steady_clock;

Status Refuse(const char* what) {
  return Errorf(ErrorCode::kUnsupported,
                "a LLaVA model on benchmake-train: {} is not supported yet", what);
}

Status CheckRun(const RunConfig& run) {
  if (run.device != "cpu" && run.device != "cuda")
    return Refuse("device other than \"cpu\" or \"cuda\"");
  if (run.precision == Precision::kFp16) return Refuse("precision \"fp16\"");
  if (run.device == "cpu" && run.precision != Precision::kFp32)
    return Refuse("precision other than \"fp32\" on the cpu");
  if (run.layout.tp > 1 || run.layout.pp > 1) return Refuse("tensor or pipeline parallelism");
  if (run.checkpoint_every > 0) return Refuse("checkpoint_every (resume checkpoints)");
  if (run.save_init) return Refuse("save_init");
  if (run.mllog) return Refuse("mllog");
  if (run.grad_reduce_bf16) return Refuse("grad_reduce 'bf16'");
  if (run.nccl_window) return Refuse("nccl_window");
  if (run.zero3_keep_params > 0) return Refuse("zero3_keep_params");
  if (run.eval_tokens > 0) return Refuse("evaluation (eval_tokens)");
  return Status::Ok();
}

// The model: the preset (text overrides applied) or the init checkpoint's, fitted to the data.
Result<LlavaConfig> ModelFor(const RunConfig& run, const LlavaData& data) {
  LlavaConfig c;
  if (!run.init.empty()) {
    BM_ASSIGN_OR_RETURN(c, ReadLlavaCheckpointConfig(run.init));
  } else {
    BM_ASSIGN_OR_RETURN(c, LlavaPreset(run.preset));
    BM_ASSIGN_OR_RETURN(c.text, ApplyOverrides(c.text, run.overrides));
  }
  if (data.vocab_size() > c.text.vocab)
    return Errorf(ErrorCode::kInvalidArgument,
                  "the data's vocabulary ({} tokens, stats.json) does not fit the model's ({})",
                  data.vocab_size(), c.text.vocab);
  if (data.image_tokens() != c.image_tokens() || data.image_size() != c.vision.image_size)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{}: images of {} px in {} tokens; the model takes {} px in {} tokens",
                  data.dir(), data.image_size(), data.image_tokens(), c.vision.image_size,
                  c.image_tokens());
  c.image_token_id = data.image_token_id();
  BM_TRY(Validate(c));
  if (run.mpe > c.text.max_seq)
    return Errorf(ErrorCode::kInvalidArgument, "mpe ({}) exceeds the model's max_seq ({})", run.mpe,
                  c.text.max_seq);
  return c;
}

cpu::LlavaMicroBatch ViewOf(const Batch& b) {
  return {b.inputs.data(),       b.targets.data(),         b.mask.data(), b.B, b.T,
          b.pixel_values.data(), b.image_positions.data(), b.images};
}

}  // namespace

bool IsLlavaRun(const RunConfig& run) {
  if (!run.preset.empty()) return LlavaPreset(run.preset).ok();
  if (run.init.empty()) return false;
  Result<std::string> text = ReadFileBytes(run.init + "/" + kConfigFile);
  if (!text.ok()) return false;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  // Compared as JSON: a model_type of another type is not llava (and not an exception).
  return j.is_object() && j.contains("model_type") && j["model_type"] == "llava";
}

Result<nlohmann::json> RunLlavaTraining(const RunConfig& run, std::ostream* progress,
                                        const dist::RankEnv& env) {
  const Clock::time_point t0 = Clock::now();
  const std::string started_at = UtcNow();
  BM_TRY(CheckRun(run));
  BM_ASSIGN_OR_RETURN(RunRanks ranks, RunRanks::Connect(run, env));
  if (!ranks.root()) progress = nullptr;
  BM_ASSIGN_OR_RETURN(LlavaData data, LlavaData::Open(run.data_dir, "train"));
  BM_ASSIGN_OR_RETURN(LlavaConfig model, ModelFor(run, data));
  const LlavaLayout layout(model);

  BackendOptions options;
  options.max_batch = run.lbs;
  options.max_seq = run.mpe;
  options.threads = run.threads > 0
                        ? run.threads
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                          env.local_world_size);
  options.dp = ranks.dp();
  options.zero = run.zero;
  options.precision = run.precision;
  // "auto" is the kernel without a per-shape plan here: a LLaVA micro-batch's width changes from
  // batch to batch (TrimLlavaBatch), and each new width cost cuDNN's attention ~1.8 s of graph
  // building on an H200 (docs/gpu-runs/run100) where the flash kernel builds nothing.
  options.attention = run.attention == "auto" ? "flash" : run.attention;
  options.recompute = run.recompute;
  options.micro_batches = static_cast<int>(run.gas);
  options.device_index = ranks.local_rank();
  // An image's tokens start at least image_tokens apart: at most ceil(mpe / K) per row.
  const int64_t K = model.image_tokens();
  const int64_t max_images = run.lbs * ((run.mpe + K - 1) / K);
  BM_ASSIGN_OR_RETURN(std::unique_ptr<LlavaTrainerApi> trainer,
                      CreateLlavaTrainer(run.device, model, options, max_images, run.freeze));
  if (!run.init.empty()) {
    BM_ASSIGN_OR_RETURN(std::vector<float> params,
                        LoadLlavaParameters(run.init + "/" + kModelFile, model));
    BM_TRY(trainer->SetParameters(params));
  } else {
    BM_TRY(trainer->SetParameters(InitLlavaParameters(model, layout, run.seed)));
  }

  std::ofstream log;
  if (ranks.root()) {
    std::filesystem::create_directories(run.out_dir);
    log.open(run.out_dir + "/log.jsonl", std::ios::trunc);
    log << nlohmann::json{{"format", "benchmake-log"}, {"version", 1}}.dump() << "\n";
  }
  std::vector<StepRecord> records;
  std::vector<LlavaStepCount> counts;
  std::vector<Batch> micro(run.gas);
  int64_t images_seen = 0;
  double train_s = 0;
  for (int64_t step = 1; step <= run.steps; ++step) {
    const Clock::time_point s0 = Clock::now();
    int64_t local_masked = 0;
    LlavaStepCount local;
    for (int64_t g = 0; g < run.gas; ++g) {
      const int64_t first_row = (g * run.layout.dp + ranks.dp_rank()) * run.lbs;
      BM_TRY(SampleLlavaTrainBatch(data, run.seed, step, first_row, run.lbs, run.mpe, &micro[g]));
      // padded to its longest row, as LLaVA's collator pads, rounded up to 64 positions
      TrimLlavaBatch(&micro[g], kLlavaWidthMultiple);
      local_masked += micro[g].MaskedCount();
      images_seen += micro[g].images;
      CountMicroBatch(micro[g], &local);
    }
    BM_ASSIGN_OR_RETURN(int64_t masked, ranks.Sum(local_masked));
    const float scale = masked > 0 ? 1.0f / static_cast<float>(masked) : 0.0f;
    BM_TRY(trainer->ZeroGrad());
    double local_sum = 0;
    for (int64_t g = 0; g < run.gas; ++g) {
      BM_ASSIGN_OR_RETURN(LossSum l,
                          trainer->ForwardBackward(ViewOf(micro[g]), scale, g + 1 == run.gas));
      local_sum += l.sum;
    }
    BM_ASSIGN_OR_RETURN(double loss_sum, ranks.Sum(local_sum));
    const double loss = masked > 0 ? loss_sum / static_cast<double>(masked) : 0.0;
    BM_ASSIGN_OR_RETURN(float norm, trainer->GradNorm());
    const double lr = LearningRate(step, run.steps, run.warmup_steps, run.lr, run.min_lr);
    if (!std::isfinite(loss) || !std::isfinite(norm))
      return Errorf(ErrorCode::kFailed,
                    "training diverged at step {}: loss {}, gradient norm {} (lr {}); lower lr or "
                    "raise warmup_steps — nothing was saved",
                    step, loss, norm, lr);
    BM_TRY(trainer->OptimizerStep(MakeAdamWStep(run, lr, step, 1.0)));
    StepRecord r;
    r.step = step;
    r.loss = loss;
    r.lr = lr;
    r.grad_norm = norm;
    // The step's counts over all ranks (the seed's tokens: llava_metrics.h).
    LlavaStepCount count;
    BM_ASSIGN_OR_RETURN(double n_micro, ranks.Sum(static_cast<double>(local.micro_batches)));
    BM_ASSIGN_OR_RETURN(double n_width, ranks.Sum(static_cast<double>(local.width_sum)));
    BM_ASSIGN_OR_RETURN(double n_tokens, ranks.Sum(static_cast<double>(local.tokens)));
    BM_ASSIGN_OR_RETURN(double n_images, ranks.Sum(static_cast<double>(local.images)));
    count.micro_batches = static_cast<int64_t>(n_micro);
    count.width_sum = static_cast<int64_t>(n_width);
    count.tokens = static_cast<int64_t>(n_tokens);
    count.images = static_cast<int64_t>(n_images);
    counts.push_back(count);
    r.tokens = count.tokens;
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - s0).count();
    train_s += r.ms / 1000.0;
    records.push_back(r);
    if (ranks.root()) log << r.ToJson().dump() << "\n" << std::flush;
    if (progress && run.progress)
      *progress << fmt::format("\rstep {}/{}  loss {:.4f}   ", step, run.steps, loss) << std::flush;
  }
  if (progress && run.progress) *progress << "\n";

  // The whole model onto rank 0 (collective under ZeRO-3), written there.
  std::vector<float> whole(ranks.root() ? layout.total() : 0);
  BM_TRY(trainer->GetParameters(whole));
  BM_ASSIGN_OR_RETURN(double images_total, ranks.Sum(static_cast<double>(images_seen)));
  TrainSummary summary;
  summary.model = model.text;
  summary.run = run;
  summary.run.threads = options.threads;
  summary.steps = records;
  // Memory and the device's name as the text trainer's metrics give them (its peak FLOP/s for
  // MFU are looked up by that name): on a GPU the device memory the trainer holds (all of it
  // allocated at its creation) and the GPU's name; on the CPU the peak resident set.
  const std::optional<GpuDevice> gpu = trainer->device();
  BM_ASSIGN_OR_RETURN(double peak, ranks.Max(static_cast<double>(gpu ? gpu->memory.peak_bytes
                                                                     : PeakResidentBytes())));
  if (gpu) summary.memory.plan = gpu->memory.plan;
  summary.memory.peak_bytes = static_cast<int64_t>(peak);
  summary.memory.device_total_bytes =
      gpu ? gpu->memory.device_total_bytes : cpu::PhysicalMemoryBytes();
  summary.world_size = ranks.world();
  summary.train_s = train_s;
  summary.device_name =
      gpu ? gpu->name : fmt::format("{}, {} threads", cpu::CpuModelName(), options.threads);
  summary.started_at = started_at;
  summary.platform = ProbePlatform(/*gpu_libraries=*/run.device != "cpu");
  summary.eval = nullptr;
  const LlavaTrainedParts parts = {!run.freeze.vision_tower, !run.freeze.projector,
                                   !run.freeze.language_model};
  summary.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  nlohmann::json metrics = BuildLlavaMetrics(summary, model, parts, counts);
  metrics["llava"] = {{"model", ToJson(model)}, {"parameters", layout.total()}};
  metrics["config"]["freeze"] = run.freeze.Names();
  metrics["trainable"] = {{"vision_tower", !run.freeze.vision_tower},
                          {"projector", !run.freeze.projector},
                          {"language_model", !run.freeze.language_model}};
  metrics["train"] = {{"final_loss", records.empty() ? 0.0 : records.back().loss},
                      {"images", static_cast<int64_t>(images_total)}};
  if (ranks.root()) {
    BM_TRY(SaveLlavaModel(run.out_dir, model, whole, -1));
    BM_TRY(WriteFileAtomically(run.out_dir + "/metrics.json", metrics.dump(2) + "\n"));
  }
  BM_TRY(ranks.Barrier());
  return metrics;
}

}  // namespace bm::train
