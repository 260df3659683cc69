#include "rules/train_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "base/signal_name.h"
#include "rules/launch/launcher.h"
#include "trainer/cpu/blas_core.h"
#include "trainer/dist/rank_env.h"
#include "trainer/model/config.h"
#include "trainer/model/vision_config.h"

namespace bm::rules {
namespace {

using engine::ParamSpec;
using engine::ParamType;
using nlohmann::json;

std::string_view Mode(TrainKind kind) {
  switch (kind) {
    case TrainKind::kPretrain:
      return "pretrain";
    case TrainKind::kFinetune:
      return "finetune";
    case TrainKind::kEvaluate:
      return "evaluate";
  }
  return "?";
}

// The parameter a trainer message is about: its first word when that is a
// parameter name ("lbs must be >= 1" -> lbs), else "".
std::string ParamOf(const std::string& message, const std::vector<ParamSpec>& specs) {
  std::string first = message.substr(0, message.find_first_of(" :'("));
  for (const ParamSpec& s : specs)
    if (s.name == first) return first;
  if (message.rfind("layout", 0) == 0) return "layout";
  if (message.rfind("precision", 0) == 0) return "precision";
  if (message.rfind("model.trainable", 0) == 0) return "trainable";
  return "";
}

bool IsLlavaPreset(const std::string& name) { return train::LlavaPreset(name).ok(); }

// A LLaVA preset of pretrain's `model`: its language model with the overrides,
// the whole model valid, mpe within the language model's max_seq.
void CheckLlavaModel(const json& p, std::vector<engine::ParamError>& errors) {
  Result<train::LlavaConfig> c = train::LlavaPreset(p["model"].get<std::string>());
  Result<train::ModelConfig> text = train::ApplyOverrides(c->text, p["overrides"]);
  if (!text.ok()) {
    errors.push_back({"overrides", text.status().message()});
    return;
  }
  c->text = *text;
  if (Status s = train::Validate(*c); !s.ok()) {
    errors.push_back({"overrides", s.message()});
    return;
  }
  if (p["mpe"].get<int64_t>() > c->text.max_seq)
    errors.push_back({"mpe", fmt::format("mpe ({}) exceeds the model's max_seq ({}); raise "
                                         "overrides.max_seq or lower mpe",
                                         p["mpe"].get<int64_t>(), c->text.max_seq)});
}

// What benchmake-train's LLaVA loop does not run yet (trainer/run/llava_train_loop.h).
std::vector<std::string> LlavaUnsupported(const train::RunConfig& run, const std::string& model) {
  std::vector<std::string> out;
  auto refuse = [&](const std::string& what) {
    out.push_back(
        fmt::format("model '{}' (LLaVA) trains on the cpu in fp32 or on cuda in fp32 or bf16, "
                    "on one rank or data parallel: {} is not supported yet",
                    model, what));
  };
  if (run.device != "cpu" && run.device != "cuda") refuse(fmt::format("device '{}'", run.device));
  // (a precision other than fp32 on the cpu: ParseRunConfig refuses it for every model)
  if (run.precision == train::Precision::kFp16) refuse("fp16");
  if (run.layout.tp > 1 || run.layout.pp > 1)
    refuse(fmt::format("layout {} (tensor or pipeline parallelism)", run.layout.ToString()));
  if (run.checkpoint_every > 0)
    refuse(fmt::format("checkpoint_every = {} (set checkpoint_every = 0)", run.checkpoint_every));
  if (run.save_init) refuse("save_init");
  if (run.mllog) refuse("mllog");
  if (run.grad_reduce_bf16) refuse("grad_reduce 'bf16'");
  if (run.nccl_window) refuse("nccl_window");
  if (run.zero3_keep_params > 0) refuse("zero3_keep_params");
  if (run.attention_backward != "auto")  // its loop runs our flash kernels (llava_train_loop.cc)
    refuse(fmt::format("attention_backward '{}'", run.attention_backward));
  return out;
}

}  // namespace

std::vector<ParamSpec> TrainParams(TrainKind kind) {
  const bool train = kind != TrainKind::kEvaluate;
  std::vector<ParamSpec> p = {
      {"data", ParamType::kInput, std::nullopt,
       "a tokenize target (train/valid splits in the Megatron format), or for a LLaVA model a "
       "llava_data target (training) or an mmmu_data target (evaluate: MMMU)",
       true},
      {"device", ParamType::kString, json("cpu"), "cpu or cuda", true},
      engine::WithRange(
          {"threads", ParamType::kInt, json(0),
           "CPU threads per rank (0: the machine's cores divided by its ranks); part of the key",
           true},
          0),
      {"precision", ParamType::kString, json("fp32"),
       "fp32, or on cuda bf16 / fp16 (amp = bf16); fp16 with dynamic loss scaling", true},
      {"layout", ParamType::kString, json("TP1PP1DP1"), "parallel layout TPxPPyDPz", true},
      engine::WithRange({"lbs", ParamType::kInt, json(8), "micro-batch size (LBS)", true}, 1),
      engine::WithRange({"mpe", ParamType::kInt, json(256), "sequence length (MPE)", true}, 1),
      engine::WithRange({"seed", ParamType::kInt, json(1234),
                         "seed of initialization, data order and evaluation", true},
                        engine::kInt64ParamMin, engine::kInt64ParamMax),
      {"peak_tflops", ParamType::kFloat, json(0.0),
       "peak TFLOP/s per device for MFU (0: the peak table)", true},
      {"progress", ParamType::kBool, json(true), "live progress line on a terminal", false},
      {"collective_timeout", ParamType::kFloat, json(300.0),
       "seconds a rank waits for its peers (rendezvous, collectives, the last rank to finish) "
       "before the step fails as hung; several ranks only",
       false},
  };
  if (train) {
    const bool ft = kind == TrainKind::kFinetune;
    std::vector<ParamSpec> t = {
        engine::WithRange(
            {"gas", ParamType::kInt, json(1), "gradient accumulation steps (GAS)", true}, 1),
        engine::WithRange({"steps", ParamType::kInt, json(ft ? 100 : 300), "optimizer steps", true},
                          1),
        {"lr", ParamType::kFloat, json(ft ? 3e-4 : 2e-3), "peak learning rate", true},
        {"min_lr", ParamType::kFloat, json(ft ? 3e-5 : 2e-4), "learning rate at the last step",
         true},
        engine::WithRange(
            {"warmup_steps", ParamType::kInt, json(ft ? 10 : 30), "linear warmup steps", true}, 0),
        {"weight_decay", ParamType::kFloat, json(0.1), "AdamW decoupled weight decay", true},
        {"beta1", ParamType::kFloat, json(0.9), "AdamW beta1", true},
        {"beta2", ParamType::kFloat, json(0.95), "AdamW beta2", true},
        {"grad_clip", ParamType::kFloat, json(1.0), "global gradient-norm clipping (0: off)", true},
        // fp16's dynamic loss scaler (PyTorch GradScaler's names and defaults): they can
        // change a run's bits, so they are key parameters even though only fp16 reads them.
        {"init_scale", ParamType::kFloat, json(65536.0), "fp16: initial loss scale", true},
        {"growth_factor", ParamType::kFloat, json(2.0),
         "fp16: loss scale factor after growth_interval clean steps", true},
        {"backoff_factor", ParamType::kFloat, json(0.5),
         "fp16: loss scale factor on an overflowing (skipped) step", true},
        engine::WithRange({"growth_interval", ParamType::kInt, json(2000),
                           "fp16: clean steps in a row before the loss scale grows", true},
                          1),
        {"min_scale", ParamType::kFloat, json(1.0),
         "fp16: the run fails when the loss scale would fall below this", true},
        engine::WithRange({"hysteresis", ParamType::kInt, json(1),
                           "fp16: overflows tolerated before the loss scale backs off", true},
                          1),
        engine::WithRange({"zero", ParamType::kInt, json(0), "ZeRO stage (needs DP > 1)", true}, 0,
                          3),
        {"sequence_parallel", ParamType::kBool, json(false),
         "Megatron's sequence parallelism: the norms' tokens split over the TP group (cpu)", true},
        {"recompute", ParamType::kBool, json(false), "activation recompute (cuda)", true},
        {"grad_reduce", ParamType::kString, json("fp32"),
         "the gradients' type when summed over the DP group: fp32, or bf16 (cuda; Megatron's "
         "--grad-reduce-in-bf16)",
         true},
        {"nccl_window", ParamType::kBool, json(false),
         "cuda over NCCL, DP > 1: the trainer's device memory as an NCCL symmetric window of the "
         "DP group (with NCCL_CTA_POLICY=2 NCCL runs its all-gathers there on the copy engines); "
         "the same bits",
         false},
        engine::WithRange(
            {"zero3_keep_params", ParamType::kInt, json(0),
             "zero 3: parameters (a count) of the forward's last units kept gathered to their "
             "backward instead of gathered again (DeepSpeed's stage3_max_reuse_distance; 0: "
             "FSDP2's reshard_after_forward); more memory, fewer all-gathers, the same bits",
             false},
            0, engine::kInt64ParamMax),
        {"attention_backward", ParamType::kString, json("auto"),
         "cuda, cuDNN's attention (bf16, fp16): its deterministic backward over \"blocks\" of at "
         "most 1024 keys (memory linear in mpe), in \"one_call\" over every key (faster: no "
         "partial dQ to add; lbs x heads x mpe^2 x 2 bytes of scratch), or \"auto\": one call "
         "where that scratch fits in room the memory plan holds anyway, else blocks",
         true, false},
        engine::WithRange(
            {"checkpoint_every", ParamType::kInt, json(50),
             "steps between resume checkpoints (0: none); a killed step resumes from the last",
             false},
            0),
        {"mllog", ParamType::kBool, json(false),
         "also write mllog.txt: MLPerf :::MLLOG lines that mlperf-logging's checkers read", true},
        {"trainable", ParamType::kStringList, json::array(),
         "LLaVA models: the parts AdamW updates (vision_tower, projector, language_model; [] "
         "all). LLaVA-1.5 pretrains [\"projector\"], finetunes [\"projector\", "
         "\"language_model\"]",
         true},
        {"save_init", ParamType::kBool, json(false),
         "also write init/: the model before the first step (model.safetensors + config.json), "
         "for a second framework's run from the same weights",
         true},
    };
    p.insert(p.end(), t.begin(), t.end());
  }
  if (kind == TrainKind::kPretrain) {
    p.push_back({"model", ParamType::kString, json("llama-small"),
                 "model preset (a LLaVA preset, e.g. llava-tiny, reads a llava_data target)",
                 true});
    p.push_back({"overrides", ParamType::kTable, json::object(),
                 "model fields changed from the preset, e.g. { hidden = 256, layers = 4 }", true});
  }
  if (kind == TrainKind::kFinetune)
    p.push_back({"init", ParamType::kInput, std::nullopt,
                 "the starting checkpoint: a pretrain target (a LLaVA one for llava_data) or a "
                 ".safetensors file",
                 true});
  if (kind == TrainKind::kEvaluate) {
    p.push_back({"checkpoint", ParamType::kInput, std::nullopt,
                 "the model: a pretrain or finetune target, or a .safetensors file", true});
    p.push_back(
        engine::WithRange({"eval_tokens", ParamType::kInt, json(0),
                           "validation tokens for the loss (0: the whole valid split)", true},
                          0, engine::kInt64ParamMax));
    p.push_back(engine::WithRange(
        {"eval_examples", ParamType::kInt, json(64), "instruction examples scored", true}, 0));
    p.push_back(engine::WithRange(
        {"eval_choices", ParamType::kInt, json(4), "candidates per multiple-choice question", true},
        2));
    p.push_back(engine::WithRange(
        {"eval_max_answer", ParamType::kInt, json(32),
         "exact match: only answers of at most this many tokens are decoded", true},
        0));
    p.push_back(engine::WithRange(
        {"max_new_tokens", ParamType::kInt, json(128),
         "MMMU (an mmmu_data target): tokens decoded per question at most (MMMU's LLaVA "
         "run: 128)",
         true},
        1));
  }
  return p;
}

json RunConfigJson(TrainKind kind, const json& p, const engine::StepContext* ctx) {
  auto input = [&](const char* name) -> std::string {
    if (!ctx || !p.contains(name)) return "";
    auto it = ctx->inputs.find(p[name].get<std::string>());
    return it == ctx->inputs.end() ? "" : it->second;
  };
  json j = {{"mode", Mode(kind)},
            {"data", ctx ? input("data") : std::string("data")},
            {"out_dir", ctx ? ctx->out_dir : std::string("out")},
            {"resume_dir", ctx ? ctx->resume_dir : std::string()},
            {"device", p["device"]},
            {"threads", p["threads"]},
            {"precision", p["precision"]},
            {"layout", p["layout"]},
            {"lbs", p["lbs"]},
            {"mpe", p["mpe"]},
            {"seed", p["seed"]},
            {"progress", ctx ? ctx->interactive && p.value("progress", true) : false}};
  if (p["peak_tflops"].get<double>() > 0) j["peak_tflops"] = p["peak_tflops"];
  for (const char* k : {"gas",
                        "steps",
                        "lr",
                        "min_lr",
                        "warmup_steps",
                        "weight_decay",
                        "beta1",
                        "beta2",
                        "grad_clip",
                        "init_scale",
                        "growth_factor",
                        "backoff_factor",
                        "growth_interval",
                        "min_scale",
                        "hysteresis",
                        "zero",
                        "sequence_parallel",
                        "recompute",
                        "grad_reduce",
                        "nccl_window",
                        "zero3_keep_params",
                        "attention_backward",
                        "checkpoint_every",
                        "mllog",
                        "save_init",
                        "eval_tokens",
                        "eval_examples",
                        "eval_choices",
                        "eval_max_answer",
                        "max_new_tokens"})
    if (p.contains(k)) j[k] = p[k];
  if (kind == TrainKind::kPretrain)
    j["model"] = {{"preset", p["model"]}, {"overrides", p["overrides"]}};
  if (p.contains("trainable") && !p["trainable"].empty()) j["model"]["trainable"] = p["trainable"];
  if (kind == TrainKind::kFinetune) j["init"] = ctx ? input("init") : std::string("init");
  if (kind == TrainKind::kEvaluate) j["init"] = ctx ? input("checkpoint") : std::string("init");
  return j;
}

std::vector<engine::ParamError> CheckTrainParams(TrainKind kind, const json& p) {
  std::vector<engine::ParamError> errors;
  const std::vector<ParamSpec> specs = TrainParams(kind);
  // kUnsupported (a valid layout or precision this trainer cannot run) is
  // left to the plan check (TrainUnsupported): the BENCHFILE still loads.
  Result<train::RunConfig> run = train::ParseRunConfig(RunConfigJson(kind, p, nullptr));
  if (!run.ok() && run.status().code() != ErrorCode::kUnsupported) {
    errors.push_back({ParamOf(run.status().message(), specs), run.status().message()});
    return errors;
  }
  const std::string device = p["device"].get<std::string>();
  if (device != "cpu" && device != "cuda")
    errors.push_back({"device", fmt::format("device '{}' (cpu, cuda)", device)});
  if (!(p["collective_timeout"].get<double>() > 0))
    errors.push_back({"collective_timeout", "collective_timeout must be > 0 seconds"});
  if (kind == TrainKind::kPretrain && IsLlavaPreset(p["model"].get<std::string>())) {
    CheckLlavaModel(p, errors);
  } else if (kind == TrainKind::kPretrain) {
    if (!p["trainable"].empty())
      errors.push_back({"trainable", fmt::format("trainable is for LLaVA models; model '{}' is a "
                                                 "text model (every part trains)",
                                                 p["model"].get<std::string>())});
    Result<train::ModelConfig> m = train::Preset(p["model"].get<std::string>());
    if (!m.ok()) {
      errors.push_back({"model", m.status().message()});
      return errors;
    }
    m = train::ApplyOverrides(*m, p["overrides"]);
    if (!m.ok()) {
      errors.push_back({"overrides", m.status().message()});
      return errors;
    }
    Result<train::ParallelLayout> layout = train::ParseLayout(p["layout"].get<std::string>());
    if (Status s = train::Validate(*m); !s.ok()) {
      errors.push_back({"overrides", s.message()});
    } else if (Status mp = layout.ok() ? train::CheckModelParallel(*m, layout->tp, layout->pp)
                                       : Status::Ok();
               !mp.ok()) {
      // The model must split the way the layout says.
      errors.push_back({"layout", fmt::format("layout {}: {}", layout->ToString(), mp.message())});
    }
    if (p["mpe"].get<int64_t>() > m->max_seq)
      errors.push_back({"mpe", fmt::format("mpe ({}) exceeds the model's max_seq ({}); raise "
                                           "overrides.max_seq or lower mpe",
                                           p["mpe"].get<int64_t>(), m->max_seq)});
  }
  return errors;
}

std::vector<std::string> TrainUnsupported(TrainKind kind, const json& p) {
  Result<train::RunConfig> run = train::ParseRunConfig(RunConfigJson(kind, p, nullptr));
  if (!run.ok() && run.status().code() == ErrorCode::kUnsupported) return {run.status().message()};
  if (run.ok() && kind == TrainKind::kPretrain && IsLlavaPreset(p["model"].get<std::string>()))
    return LlavaUnsupported(*run, p["model"].get<std::string>());
  return {};
}

json TrainOutputFacts(TrainKind kind, const json& p,
                      const std::vector<engine::UpstreamInput>& inputs) {
  if (kind == TrainKind::kPretrain)
    return {{"llava", IsLlavaPreset(p["model"].get<std::string>())}};
  if (kind == TrainKind::kFinetune)
    for (const engine::UpstreamInput& in : inputs)
      if (in.param == "init" && in.facts.is_object() && in.facts.contains("llava"))
        return {{"llava", in.facts["llava"]}};
  return json::object();
}

std::vector<engine::ParamError> CheckTrainInputs(TrainKind kind, const json& p,
                                                 const std::vector<engine::UpstreamInput>& inputs) {
  std::vector<engine::ParamError> errors;
  const engine::UpstreamInput* data = nullptr;
  const engine::UpstreamInput* model = nullptr;  // init / checkpoint
  for (const engine::UpstreamInput& in : inputs) {
    if (in.param == "data") data = &in;
    if (in.param == "init" || in.param == "checkpoint") model = &in;
  }
  if (!data || data->rule.empty()) return errors;  // a source directory: unknown
  const bool images = data->rule == "llava_data";
  if (kind == TrainKind::kEvaluate) {
    const bool mmmu = data->rule == "mmmu_data";
    const bool known = model && model->facts.is_object() && model->facts.contains("llava");
    const bool llava = known && model->facts["llava"].get<bool>();
    if (images)
      errors.push_back({"data", fmt::format("data '{}' is a llava_data target (training data): "
                                            "evaluate runs a LLaVA model on MMMU, an mmmu_data "
                                            "target",
                                            data->name)});
    else if (mmmu && known && !llava)
      errors.push_back({"checkpoint", fmt::format("checkpoint '{}' is a text model; MMMU data "
                                                  "(the mmmu_data target '{}') needs a LLaVA "
                                                  "checkpoint (a pretrain or finetune of {})",
                                                  model->name, data->name,
                                                  fmt::join(train::LlavaPresetNames(), ", "))});
    else if (!mmmu && llava)
      errors.push_back({"data", fmt::format("checkpoint '{}' is a LLaVA model: evaluate runs it "
                                            "on MMMU (an mmmu_data target), not on the {} "
                                            "target '{}'",
                                            model->name, data->rule, data->name)});
    if (mmmu && p["precision"].get<std::string>() == "fp16")
      errors.push_back({"precision",
                        "precision 'fp16': MMMU's greedy decoding of a LLaVA model "
                        "runs in fp32 (cpu, cuda) or bf16 (cuda)"});
    return errors;
  }
  // The model: the preset (pretrain) or what the init target says (finetune).
  std::string what;
  bool llava = false;
  if (kind == TrainKind::kPretrain) {
    llava = IsLlavaPreset(p["model"].get<std::string>());
    what = fmt::format("model '{}'", p["model"].get<std::string>());
  } else {
    if (!model || !model->facts.is_object() || !model->facts.contains("llava")) return errors;
    llava = model->facts["llava"].get<bool>();
    what = fmt::format("init '{}'", model->name);
  }
  if (kind == TrainKind::kFinetune && !llava && !p["trainable"].empty())
    errors.push_back({"trainable", fmt::format("trainable is for LLaVA models; {} is a text model "
                                               "(every part trains)",
                                               what)});
  if (images && !llava)
    errors.push_back(
        {"data", fmt::format("data '{}' is a llava_data target (text with images), but {} is a "
                             "text-only model; train a LLaVA model on it ({}{})",
                             data->name, what,
                             kind == TrainKind::kPretrain ? "model = " : "init from a pretrain of ",
                             fmt::join(train::LlavaPresetNames(), ", "))});
  if (!images && llava)
    errors.push_back({"data", fmt::format("{} is a LLaVA model: its data must be a llava_data "
                                          "target (text with images), not the {} target '{}'",
                                          what, data->rule, data->name)});
  return errors;
}

int TrainWorldSize(const json& p) {
  Result<train::ParallelLayout> l = train::ParseLayout(p.value("layout", "TP1PP1DP1"));
  return l.ok() ? l->tp * l->pp * l->dp : 1;
}

int TrainGpus(const json& p) { return p.value("device", "cpu") == "cuda" ? TrainWorldSize(p) : 0; }

namespace {

// One benchmake-train process: the single-rank run, where the step is placed
// (this machine, or a srun task). It is told it is a world of one, local rank
// 0 of 1, so that the variables of a Slurm allocation or a torchrun job
// benchmake runs in (SLURM_PROCID, SLURM_NTASKS of the whole job; LOCAL_RANK
// 1 of LOCAL_WORLD_SIZE 2) neither make it wait for ranks that never come nor
// fail its check that the local rank fits the world.
Status RunOneProcess(Command cmd, engine::StepContext& ctx) {
  cmd.env[train::dist::kEnvRank] = "0";
  cmd.env[train::dist::kEnvWorldSize] = "1";
  cmd.env[train::dist::kEnvLocalRank] = "0";
  cmd.env[train::dist::kEnvLocalWorldSize] = "1";
  cmd = engine::PlaceCommand(ctx.placement, std::move(cmd), TrainGpus(ctx.params));
  if (ctx.log) *ctx.log << "$ " << fmt::format("{}", fmt::join(cmd.argv, " ")) << "\n";
  BM_ASSIGN_OR_RETURN(CommandResult r, ctx.runner->Run(cmd));
  if (r.term_signal)
    return Errorf(ErrorCode::kFailed, "benchmake-train was killed by {}",
                  SignalName(r.term_signal));
  if (!r.success())
    return Errorf(ErrorCode::kFailed, "benchmake-train exited with status {} (its log says why)",
                  r.exit_code);
  return Status::Ok();
}

// `world` benchmake-train processes through the launcher (rules/launch/):
// rank 0 writes the step log NAME.log, rank k NAME.rank-k.log beside it (kept
// when the step fails, as the step log is); the first failure
// stops every rank and fails the step naming it.
Status RunRanks(const Command& cmd, int world, launch::Launcher& launcher,
                engine::StepContext& ctx) {
  launch::LaunchSpec spec;
  spec.argv = cmd.argv;
  spec.cwd = cmd.cwd;
  spec.env = cmd.env;
  spec.world_size = world;
  spec.rendezvous = ctx.scratch_dir + "/rendezvous";
  BM_TRY(ctx.fs->RemoveAll(spec.rendezvous));
  BM_TRY(ctx.fs->MakeDirs(spec.rendezvous));
  spec.collective_timeout_s = ctx.params.value("collective_timeout", 300.0);
  spec.log_path = cmd.log_path;
  spec.echo_rank0 = cmd.echo_to_terminal;
  for (int k = 1; k < world; ++k)  // fresh, like the step log (the runner appends)
    BM_TRY(ctx.fs->WriteFileAtomic(launch::RankLogPath(spec, k), "", false, /*durable=*/false));
  spec.gpu = ctx.params.value("device", "cpu") == "cuda";
  spec.gpus = ctx.gpus;  // this machine's lease; none when Slurm or mpirun's hosts provide them
  spec.cpus_per_rank = static_cast<int>(ctx.params.value("threads", int64_t{0}));
  BM_ASSIGN_OR_RETURN(launch::LaunchResult r, launcher.Launch(spec));
  if (ctx.log)
    *ctx.log << fmt::format("$ {}   # {} ranks ({} launcher; ranks 1.. log to {})\n",
                            fmt::join(r.command.empty() ? cmd.argv : r.command, " "), world,
                            launcher.name(), launch::RankLogPath(spec, 1));
  if (r.success()) return Status::Ok();
  r.unresponsive = launch::FindUnresponsiveRanks(*ctx.fs, spec);
  if (ctx.log && !r.command_failed)
    for (const launch::RankOutcome& rank : r.ranks)
      *ctx.log << fmt::format("rank {} {}\n", rank.rank,
                              launch::DescribeRankEnd(rank, r.first_failure));
  return Status(ErrorCode::kFailed, launch::DescribeFailure(r, *ctx.fs));
}

// The OpenBLAS kernels the probe chose where OpenBLAS's own detection fell
// short (trainer/cpu/blas_core.h): given to the trainer up front, so it need not
// re-execute itself to get them. A core the user set stays in the environment.
void SetBlasCore(const json& platform, Command& cmd) {
  if (!platform.is_object() || !platform.contains("blas") || !platform["blas"].is_object()) return;
  const json& blas = platform["blas"];
  if (blas.value("chosen_by", "") != "benchmake" || std::getenv("OPENBLAS_CORETYPE")) return;
  cmd.env["OPENBLAS_CORETYPE"] = blas.value("core", "");
  cmd.env[train::cpu::kDetectedCoreEnv] = blas.value("detected_core", "");
}

}  // namespace

Result<engine::StepResult> RunTrainer(TrainKind kind, engine::StepContext& ctx) {
  json config = RunConfigJson(kind, ctx.params, &ctx);
  const int world = TrainWorldSize(ctx.params);
  std::unique_ptr<launch::Launcher> launcher;
  if (world > 1) {
    BM_ASSIGN_OR_RETURN(launcher, launch::MakeLauncher(ctx.placement, *ctx.runner, *ctx.fs));
  }
  const std::string config_path = ctx.scratch_dir + "/run.json";
  BM_TRY(ctx.fs->WriteFileAtomic(config_path, config.dump(2) + "\n"));
  Command cmd;
  cmd.argv = {ctx.tools_dir + "/benchmake-train", "--config", config_path};
  cmd.cwd = ctx.scratch_dir;
  cmd.log_path = ctx.log_path;
  cmd.echo_to_terminal = ctx.interactive && ctx.params.value("progress", true);
  cmd.env["OMP_WAIT_POLICY"] = "passive";  // trainer/process_env.h says why
  cmd.env["OPENBLAS_THREAD_TIMEOUT"] = "4";
  SetBlasCore(ctx.platform, cmd);
  BM_TRY(launcher ? RunRanks(cmd, world, *launcher, ctx) : RunOneProcess(cmd, ctx));
  Result<std::string> text = ctx.fs->ReadFile(ctx.out_dir + "/metrics.json");
  if (!text.ok())
    return Errorf(ErrorCode::kFailed, "benchmake-train succeeded but wrote no metrics.json: {}",
                  text.status().message());
  json metrics = json::parse(*text, nullptr, false);
  if (metrics.is_discarded()) return Status(ErrorCode::kCorrupt, "metrics.json is not valid JSON");
  engine::StepResult result;
  result.metrics = metrics;
  return result;
}

}  // namespace bm::rules
