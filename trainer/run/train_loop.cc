#include "trainer/run/train_loop.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "base/mllog.h"
#include "trainer/backend.h"
#include "trainer/checkpoint/model_checkpoint.h"
#include "trainer/checkpoint/resume.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/data/batch.h"
#include "trainer/model/layout.h"
#include "trainer/platform.h"
#include "trainer/run/energy.h"
#include "trainer/run/llava_train_loop.h"
#include "trainer/run/loss_scaler.h"
#include "trainer/run/metrics.h"
#include "trainer/run/model_setup.h"
#include "trainer/run/run_ranks.h"
#include "trainer/run/schedule.h"

namespace bm::train {
namespace {

using Clock = std::chrono::steady_clock;

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

// Restores the latest resume checkpoint of an identical run on every rank, or
// on none: a rank that finds nothing (or another step) makes all start over.
Result<std::optional<ResumeState>> Resume(const RunConfig& run, const RunRanks& ranks,
                                          const ResumeRank& who, const std::string& fingerprint,
                                          int64_t local_size, std::ostream* progress) {
  std::optional<ResumeState> resume;
  if (!run.resume_dir.empty()) {
    std::string why;
    BM_ASSIGN_OR_RETURN(resume, LoadResume(run.resume_dir, who, fingerprint, local_size, &why));
    if (resume && resume->step > run.steps) resume.reset();
  }
  const double step = resume ? static_cast<double>(resume->step) : -1.0;
  BM_ASSIGN_OR_RETURN(double highest, ranks.Max(step));
  BM_ASSIGN_OR_RETURN(double lowest_negated, ranks.Max(-step));
  if (highest != -lowest_negated) {
    if (progress && ranks.root() && highest >= 0)
      *progress << "not resuming: the ranks' checkpoints disagree; starting over\n";
    resume.reset();
  }
  return resume;
}

BackendOptions OptionsFor(const RunConfig& run, const RunRanks& ranks, int threads) {
  BackendOptions options;
  options.max_batch = run.lbs;
  options.max_seq = run.mpe;
  options.precision = run.precision;
  options.recompute = run.recompute;
  options.attention = run.attention;
  options.attention_backward = run.attention_backward;
  options.threads = threads;
  options.device_index = ranks.local_rank();
  options.dp = ranks.dp();
  options.zero = run.zero;
  options.tp = ranks.tp();
  options.pp = ranks.pp();
  options.micro_batches = static_cast<int>(run.gas);
  options.sequence_parallel = run.sequence_parallel;
  options.grad_reduce_bf16 = run.grad_reduce_bf16;
  options.nccl_window = run.nccl_window;
  options.zero3_keep_params = run.zero3_keep_params;
  return options;
}

// The resume checkpoint after `step` (collective): every rank writes its local state, then rank
// 0 commits them with the step log and the loss scaler's state.
Status SaveResume(const Backend& backend, const std::string& dir, const RunRanks& ranks,
                  const ResumeRank& who, const std::string& fingerprint, int64_t step,
                  const std::vector<StepRecord>& records, const std::optional<LossScaler>& scaler) {
  ResumeState state;
  state.step = step;
  const int64_t local_size = backend.LocalStateSize();
  for (std::vector<float>* v : {&state.params, &state.m, &state.v}) v->resize(local_size);
  BM_TRY(backend.GetLocalState(state.params, state.m, state.v));
  BM_TRY(SaveResumeRank(dir, who, state));
  BM_TRY(ranks.Barrier());  // every rank's file is written before LATEST moves
  if (!ranks.root()) return Status::Ok();
  for (const StepRecord& rec : records) state.log.push_back(rec.ToJson());
  if (scaler) state.extra["loss_scaler"] = scaler->State();
  return CommitResume(dir, who, fingerprint, state);
}

// Gathers the whole model (collective under ZeRO and TP/PP) onto rank 0, which writes it into
// `dir` as it comes (a unit at a time) and returns its writer for the caller to commit; the other
// ranks get nullptr. A rank 0 that cannot open the file still takes part in the gather.
Result<std::unique_ptr<ModelWriter>> GatherModel(const Backend& backend, const RunRanks& ranks,
                                                 const std::string& dir, const ModelConfig& model,
                                                 int64_t eot_id) {
  std::unique_ptr<ModelWriter> writer;
  Status opened;
  if (ranks.root()) {
    Result<std::unique_ptr<ModelWriter>> w = ModelWriter::Create(dir, model, eot_id);
    if (w.ok()) writer = std::move(*w);
    opened = w.status();
  }
  ParamSink sink;
  if (writer) sink = [&writer](int64_t begin, std::span<const float> v) { writer->Put(begin, v); };
  BM_TRY(backend.GetParametersTo(sink));
  BM_TRY(opened);
  return writer;
}

}  // namespace

AdamWStep MakeAdamWStep(const RunConfig& run, double lr, int64_t applied, double loss_scale) {
  AdamWStep adam;
  adam.lr = static_cast<float>(lr);
  adam.beta1 = static_cast<float>(run.beta1);
  adam.beta2 = static_cast<float>(run.beta2);
  adam.eps = static_cast<float>(run.eps);
  adam.weight_decay = static_cast<float>(run.weight_decay);
  adam.grad_clip = static_cast<float>(run.grad_clip);
  adam.step = applied;
  adam.grad_scale = static_cast<float>(1.0 / loss_scale);
  return adam;
}

Result<nlohmann::json> RunTraining(const RunConfig& run, std::ostream* progress,
                                   const TrainHooks& hooks, const dist::RankEnv& env) {
  if (IsLlavaRun(run)) return RunLlavaTraining(run, progress, env);
  if (run.freeze_set)
    return Status(ErrorCode::kInvalidArgument,
                  "llava_stage / freeze / model.trainable: the model is not a LLaVA model (only "
                  "LLaVA's vision "
                  "tower, projector and language model can be frozen)");
  const Clock::time_point t0 = Clock::now();
  const std::string started_at = UtcNow();
  BM_ASSIGN_OR_RETURN(RunRanks ranks, RunRanks::Connect(run, env));
  if (!ranks.root()) progress = nullptr;  // rank 0 speaks for the run
  // MLPerf's log (base/mllog.h): init_start .. init_stop around the set-up,
  // run_start .. run_stop around training, a train_loss point per step.
  std::ofstream mllog_file;
  std::optional<mllog::Logger> ml;
  if (run.mllog && ranks.root()) {
    std::filesystem::create_directories(run.out_dir);
    mllog_file.open(run.out_dir + "/mllog.txt", std::ios::trunc);
    if (!mllog_file) return Errorf(ErrorCode::kIo, "cannot write {}/mllog.txt", run.out_dir);
    ml.emplace(mllog_file);
    // benchmake-train does not drop the page cache before a run: logged as false.
    ml->Point(mllog::kCacheClear, false);
    ml->Start(mllog::kInitStart);
  }
  BM_ASSIGN_OR_RETURN(nlohmann::json stats, ReadDataStats(run.data_dir));
  BM_ASSIGN_OR_RETURN(TokenData data, TokenData::Open(run.data_dir, "train"));
  BM_ASSIGN_OR_RETURN(ModelSetup setup, SetUpModel(run, stats));
  const ModelConfig& model = setup.model;
  data.LimitIds(setup.model.vocab);
  const ParamLayout layout(model);

  BM_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                      hooks.make_backend ? hooks.make_backend() : CreateBackend(run.device));
  // `threads` is per rank; 0 shares this machine's cores among its ranks.
  const int threads = run.threads > 0
                          ? run.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) /
                                            env.local_world_size);
  BM_TRY(backend->Init(model, OptionsFor(run, ranks, threads)));
  // Each rank draws, or reads from the init checkpoint, only what it holds (its shard, its
  // ZeRO slices).
  BM_TRY(backend->SetParametersFrom(setup.loaded ? setup.loaded
                                                 : InitialParameters(model, layout, run.seed)));
  setup.loaded = nullptr;  // unmaps the checkpoint
  const int64_t eot_id = stats.value("eot_id", int64_t{-1});
  if (run.save_init) {
    // The starting weights (a resumed run rewrites the same bits), for a second framework's run
    // from the same point (examples/pytorch_peer/).
    if (ranks.root()) std::filesystem::create_directories(run.out_dir + "/" + kInitDir);
    BM_ASSIGN_OR_RETURN(std::unique_ptr<ModelWriter> init,
                        GatherModel(*backend, ranks, run.out_dir + "/" + kInitDir, model, eot_id));
    if (init) BM_TRY(init->Commit());
  }

  // Resume from the last checkpoint of an identical run, if any. The CPU's sums follow its
  // thread count, so the count `threads = 0` resolved to here is the one that must match (a
  // Slurm retry on a node of other cores, or a resized container, starts over).
  RunConfig keyed = run;
  if (run.device == "cpu") keyed.threads = threads;
  const std::string fingerprint = Fingerprint(keyed, model);
  // Each rank keeps its own state when they differ: ZeRO shards, or model-parallel shards.
  const bool sharded =
      (run.zero >= 1 && run.layout.dp > 1) || run.layout.tp > 1 || run.layout.pp > 1;
  const ResumeRank who{ranks.rank(), ranks.world(), sharded};
  const int64_t local_size = backend->LocalStateSize();
  int64_t start = 0;
  std::vector<StepRecord> records;
  std::optional<int64_t> resumed_from;
  std::optional<LossScaler> scaler;
  if (run.precision == Precision::kFp16) scaler.emplace(run.loss_scaler);
  BM_ASSIGN_OR_RETURN(std::optional<ResumeState> resume,
                      Resume(run, ranks, who, fingerprint, local_size, progress));
  if (resume) {
    if (scaler) {
      Status restored = scaler->Restore(resume->extra.value("loss_scaler", nlohmann::json()));
      if (!restored.ok())
        return Errorf(ErrorCode::kCorrupt, "resume checkpoint in {}: {}", run.resume_dir,
                      restored.message());
    }
    BM_TRY(backend->SetLocalState(resume->params, resume->m, resume->v));
    start = resume->step;
    resumed_from = start;
    for (const auto& r : resume->log) records.push_back(StepRecord::FromJson(r));
    if (progress) *progress << fmt::format("resuming from step {} ({})\n", start, run.resume_dir);
    resume.reset();
  }

  if (ml) {
    ml->Point(mllog::kSeed, run.seed);
    ml->Point(mllog::kGlobalBatchSize, run.gbs());
    ml->Point(mllog::kGradientAccumulationSteps, run.gas);
    ml->Point(mllog::kMaxSequenceLength, run.mpe);
    ml->Point(mllog::kOptName, "adamw");
    ml->Point(mllog::kOptBaseLearningRate, run.lr);
    ml->Point(mllog::kOptLearningRateWarmupSteps, run.warmup_steps);
    ml->End(mllog::kInitStop);
    ml->Start(mllog::kRunStart);
  }

  std::ofstream log;
  if (ranks.root()) {
    std::filesystem::create_directories(run.out_dir);
    log.open(run.out_dir + "/log.jsonl", std::ios::trunc);
    log << nlohmann::json{{"format", "benchmake-log"}, {"version", 1}}.dump() << "\n";
    for (const StepRecord& r : records) log << r.ToJson().dump() << "\n";
  }

  const int64_t tokens_per_step = run.lbs * run.mpe * run.gas * run.layout.dp;
  const double comm_wait_at_start = backend->CommWaitSeconds();
  const double pipeline_wait_at_start = backend->PipelineWaitSeconds();
  std::vector<Batch> micro(run.gas);
  // The energy of the steps throughput measures (after the warm-up, with its tuning), without
  // the resume checkpoints written between them.
  const int64_t first_energy_step = FirstEnergyStep(run.steps, start);
  EnergyMeter energy([&backend] { return backend->ReadEnergy(); });
  for (int64_t step = start + 1; step <= run.steps; ++step) {
    if (step == first_energy_step) energy.Start();
    const Clock::time_point s0 = Clock::now();
    int64_t local_masked = 0;
    for (int64_t g = 0; g < run.gas; ++g) {
      const int64_t first_row = (g * run.layout.dp + ranks.dp_rank()) * run.lbs;
      BM_TRY(SampleTrainBatch(data, run.seed, step, first_row, run.lbs, run.mpe, &micro[g]));
      local_masked += micro[g].MaskedCount();
    }
    // Every DP index's rows counted once (the TP x PP ranks of one share them).
    BM_ASSIGN_OR_RETURN(int64_t masked, ranks.Sum(ranks.counting() ? local_masked : 0));
    // fp16: the backward runs on loss x S. S is a power of two with the default factors, so
    // the scaling is exact and S = 1 would give fp32's and bf16's bits.
    const double loss_scale = scaler ? scaler->scale() : 1.0;
    const float per_token = masked > 0 ? 1.0f / static_cast<float>(masked) : 0.0f;
    const float scale = scaler ? static_cast<float>(loss_scale) * per_token : per_token;
    BM_TRY(backend->ZeroGrad());
    std::vector<MicroBatch> views;
    for (const Batch& b : micro) views.push_back(b.View());
    BM_ASSIGN_OR_RETURN(LossSum local, backend->ForwardBackwardStep(views, scale));
    BM_ASSIGN_OR_RETURN(double loss_sum, ranks.Sum(ranks.counting() ? local.sum : 0.0));
    const double loss = masked > 0 ? loss_sum / static_cast<double>(masked) : 0.0;
    BM_ASSIGN_OR_RETURN(float scaled_norm, backend->GradNorm());
    const double lr = LearningRate(step, run.steps, run.warmup_steps, run.lr, run.min_lr);
    const bool finite = std::isfinite(loss) && std::isfinite(scaled_norm);
    if (!finite && !scaler)
      return Errorf(ErrorCode::kFailed,
                    "training diverged at step {}: loss {}, gradient norm {} (lr {}); lower lr or "
                    "raise warmup_steps — nothing was saved",
                    step, loss, scaled_norm, lr);
    if (scaler) {
      // An overflow is decided before any update, from the loss and the scaled norm.
      const int64_t applied = step - scaler->skipped();  // AdamW's own step count
      if (Status s = scaler->Update(!finite); !s.ok())
        return Errorf(ErrorCode::kFailed,
                      "training diverged at step {} (fp16): {}; lower lr, raise warmup_steps or "
                      "use bf16 — nothing was saved",
                      step, s.message());
      if (finite) BM_TRY(backend->OptimizerStep(MakeAdamWStep(run, lr, applied, loss_scale)));
    } else {
      BM_TRY(backend->OptimizerStep(MakeAdamWStep(run, lr, step, 1.0)));
    }
    const double norm = finite ? scaled_norm / loss_scale : std::nan("");
    StepRecord r;
    r.step = step;
    r.loss = loss;
    r.lr = lr;
    r.grad_norm = norm;
    if (scaler) r.loss_scale = loss_scale;
    r.skipped = !finite;
    r.tokens = tokens_per_step;
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - s0).count();
    records.push_back(r);
    if (ranks.root()) log << r.ToJson().dump() << "\n" << std::flush;
    if (ml) ml->Point(mllog::kTrainLoss, loss, {{"step", step}});
    if (progress && run.progress) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      const double eta =
          elapsed / static_cast<double>(step - start) * static_cast<double>(run.steps - step);
      *progress << fmt::format("\rstep {}/{}  loss {:.4f}  {:.0f} tok/s  ETA {}   ", step,
                               run.steps, loss, r.tokens / (r.ms / 1000.0), FormatDuration(eta))
                << std::flush;
    }
    if (run.checkpoint_every > 0 && step % run.checkpoint_every == 0 && step < run.steps &&
        !run.resume_dir.empty()) {
      energy.Stop();
      BM_TRY(SaveResume(*backend, run.resume_dir, ranks, who, fingerprint, step, records, scaler));
      if (step >= first_energy_step) energy.Start();
    }
    if (hooks.after_step && !hooks.after_step(step))
      return Errorf(ErrorCode::kFailed, "stopped after step {} (test hook)", step);
  }
  if (progress && run.progress) *progress << "\n";
  energy.Stop();

  // The whole model, gathered onto rank 0 and written as it comes; committed with the metrics.
  BM_ASSIGN_OR_RETURN(std::unique_ptr<ModelWriter> writer,
                      GatherModel(*backend, ranks, run.out_dir, model, eot_id));
  TrainSummary summary;
  summary.model = model;
  summary.run = run;
  summary.run.threads = threads;
  summary.steps = records;
  summary.memory = backend->Memory();
  BM_ASSIGN_OR_RETURN(double peak, ranks.Max(static_cast<double>(summary.memory.peak_bytes)));
  summary.memory.peak_bytes = static_cast<int64_t>(peak);
  summary.world_size = ranks.world();
  BM_ASSIGN_OR_RETURN(double waited, ranks.Sum(backend->CommWaitSeconds() - comm_wait_at_start));
  summary.comm_wait_s = waited / ranks.world();  // the ranks' mean
  BM_ASSIGN_OR_RETURN(double pipeline_waited,
                      ranks.Sum(backend->PipelineWaitSeconds() - pipeline_wait_at_start));
  summary.pipeline_wait_s = pipeline_waited / ranks.world();
  for (const StepRecord& rec : records)
    if (rec.step > start) summary.train_s += rec.ms / 1000.0;
  summary.device_name = backend->device_name();
  summary.resumed_from_step = resumed_from;
  if (scaler) summary.loss_scale = scaler->scale();
  summary.started_at = started_at;
  BM_ASSIGN_OR_RETURN(summary.energy, GatherEnergy(ranks, energy.Total()));
  summary.platform = ProbePlatform(/*gpu_libraries=*/run.device != "cpu");
  summary.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  summary.eval = nullptr;
  nlohmann::json metrics = BuildMetrics(summary);
  if (ranks.root()) {
    BM_TRY(writer->Commit());
    BM_TRY(WriteFileAtomically(run.out_dir + "/metrics.json", metrics.dump(2) + "\n"));
    if (ml) ml->End(mllog::kRunStop, nullptr, {{"status", "success"}});
  }
  // No rank exits before rank 0 has written the outputs: a launcher that sees
  // one rank end stops the others.
  BM_TRY(ranks.Barrier());
  return metrics;
}

}  // namespace bm::train
