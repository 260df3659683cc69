// cuda_train_bench: times benchmake-train's CUDA backend on the PyTorch peer's models
// (bench/torch_reference.py, same names, same batch and precision policy) and prints one JSON
// line like the peer's, so bench/gpu_check.sh can put the two side by side.
//
//   cuda_train_bench --model gpt2-124m --batch 32 [--seq 1024] [--warmup 10] [--steps 30]
//                    [--accum N] [--zero 0-3] [--grad-reduce fp32|bf16] [--tp N] [--pp N]
//                    [--vocab V] [--nccl] [--nccl-window]
//                    [--precision bf16|fp16|fp32]
//                    [--recompute] [--recompute-norms] [--whole-masters]
//                    [--activations-apart] [--profile]
//                    [--attention auto|cudnn|flash]
//                    [--attention-chunk KEYS (default: the plan chooses)]
//                    [--nondeterministic-attention (cuDNN's dQ-accumulating backward)] [--no-tune]
//                    [--tuning-log] [--json FILE]
//
// Several GPUs: start one process per GPU with RANK, WORLD_SIZE, LOCAL_RANK and
// BENCHMAKE_RENDEZVOUS set (bench/multi_gpu.sh does; trainer/dist/rank_env.h): data parallel
// over NCCL with the ZeRO stage of --zero, like the multi-GPU peer
// (../shared/bench/multi_reference.py); with --tp / --pp the layout TPxPPyDPz (y = the world
// over TP·PP; Megatron's rank order, trainer/dist/process_groups.h), a pipeline running its
// --accum micro-batches in 1F1B. --nccl uses NCCL even for one rank. Models: the PyTorch peer's
// names (trainer/cuda/model_spec.h) or the trainer's presets (gpt3-6.7b, aquila2-7b, ...);
// --vocab pads the vocabulary (PaddleNLP's GPT-3 runs 50304). --whole-masters and
// --activations-apart turn two memory savings off, for measuring them (RunSpec::split_masters,
// RunSpec::micro_batches_per_step): the fp32 masters kept whole beside the bf16 copy, and no
// layer's activations over the gradients. --nccl-window allocates the arena as the DP group's
// NCCL window (RunSpec::nccl_window; NCCL_CTA_POLICY=2 lets NCCL run its all-gathers there on
// the copy engines). --zero3-keep N keeps ZeRO-3's last units, up to N parameters, gathered
// from their forward to their backward (RunSpec::zero3_keep_params).
//
// Data: fresh uniform random tokens every step (like the peer's --data fresh; a different
// stream per data-parallel replica, the same on its TP and PP ranks), so the loss must stay
// near ln V (the last stage's, with a pipeline). Timing: each step (staging, forward,
// backward, optimizer) by the host clock around a synchronized step; the median after warm-up,
// the largest over ranks; tokens/s per GPU = batch × seq × accum / step time. fp16 steps run
// as the training loop runs them (trainer/run/train_loop.cc): the backward on loss x S, the
// gradient norm read back to decide (an overflowing step skips AdamW), AdamW with grad_scale
// 1 / S, S moved by the loss scaler (trainer/run/loss_scaler.h, GradScaler's defaults) — the
// peer's counterpart is autocast(float16) with torch.amp.GradScaler. Energy: NVML's counter over
// the timed steps gives joules_per_step and watts_mean over energy_window_s seconds (bench/
// nvml_gpu.h: trust it over seconds, not less; absent without NVML).
#include <cublasLt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trainer/cuda/cuda_model.h"
#include "trainer/cuda/cudnn_attention.h"
#include "trainer/cuda/memory_plan.h"
#include "trainer/cuda/nvml_gpu.h"
#include "trainer/cuda/probe.h"
#include "trainer/cuda/shard_map.h"
#include "trainer/dist/pipeline_schedule.h"
#include "trainer/dist/process_groups.h"
#include "trainer/dist/rank_env.h"
#include "trainer/model/shard.h"
#include "trainer/run/loss_scaler.h"

namespace {

using bm::train::cuda::AttentionImpl;
using bm::train::cuda::CommTiming;
using bm::train::cuda::CudaModel;
using bm::train::cuda::DType;
using bm::train::cuda::Family;
using bm::train::cuda::ModelSpec;
using bm::train::cuda::RunSpec;

constexpr double kPeak = 989.4e12;  // H100/H200 SXM bf16 (= fp16) dense

// N(0, std) by a counter-based hash (so threads fill disjoint ranges reproducibly).
float NormalAt(uint64_t i, float stddev) {
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  double u1 = ((mix(2 * i) >> 11) + 1) * (1.0 / 9007199254740993.0);
  double u2 = (mix(2 * i + 1) >> 11) * (1.0 / 9007199254740992.0);
  return static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) *
                            std::cos(6.283185307179586 * u2));
}

std::vector<float> InitParams(const bm::train::cuda::ParamLayout& layout) {
  std::vector<float> flat(layout.total(), 0.0f);
  std::vector<std::thread> threads;
  for (const auto& t : layout.tensors()) {
    bool gain = t.name.find("norm") != std::string::npos || t.name.find("ln_") != std::string::npos;
    bool bias = t.name.find(".bias") != std::string::npos;
    if (gain && !bias) {
      std::fill(flat.begin() + t.offset, flat.begin() + t.offset + t.numel(), 1.0f);
    } else if (!bias) {
      size_t begin = t.offset, end = t.offset + t.numel();
      size_t parts = 16, step = (end - begin + parts - 1) / parts;
      for (size_t p = 0; p < parts; ++p) {
        threads.emplace_back([&flat, begin, end, step, p] {
          for (size_t i = begin + p * step; i < std::min(end, begin + (p + 1) * step); ++i) {
            flat[i] = NormalAt(i, 0.02f);
          }
        });
      }
      for (auto& th : threads) th.join();
      threads.clear();
    }
  }
  return flat;
}

// The model as rank (tp_rank, pp_rank) of TPxPP holds it: a peer's name (ModelPreset) split by
// the trainer's stage rule, or a trainer preset through its shard (shard_map.h). vocab > 0
// replaces the vocabulary.
bm::Result<ModelSpec> RankSpec(const std::string& name, int vocab, int tp, int tp_rank, int pp,
                               int pp_rank) {
  ModelSpec spec;
  if (bm::train::cuda::ModelPreset(name, &spec)) {
    if (vocab > 0) spec.vocab = vocab;
    if (pp > spec.layers)
      return bm::Errorf(bm::ErrorCode::kInvalidArgument, "PP{} over {} layers", pp, spec.layers);
    const bm::train::PipelineStage stage = bm::train::StageOf(spec.layers, pp, pp_rank);
    spec.tp = tp, spec.tp_rank = tp_rank, spec.pp = pp, spec.pp_rank = pp_rank;
    spec.layer_begin = static_cast<int>(stage.layer_begin);
    spec.layer_end = static_cast<int>(stage.layer_end);
    spec.embeddings = stage.embeddings;
    spec.head = stage.head;
    return spec;
  }
  BM_ASSIGN_OR_RETURN(bm::train::ModelConfig config, bm::train::Preset(name));
  if (vocab > 0) config.vocab = vocab;
  BM_ASSIGN_OR_RETURN(bm::train::ModelShard shard,
                      bm::train::ModelShard::Make(config, {tp, tp_rank, pp, pp_rank}));
  return bm::train::cuda::SpecOfShard(config, shard);
}

int Fail(const bm::Status& s) {
  std::fprintf(stderr, "cuda_train_bench: %s\n", s.message().c_str());
  return s.code() == bm::ErrorCode::kUnavailable ? 3 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "gpt2-124m", json_path;
  int batch = 0, seq = 0, warmup = 10, steps = 30, accum = 1, tp = 1, pp = 1, vocab = 0;
  bool apart = false;  // --activations-apart: no layer's activations over the gradients
  bool force_nccl = false;
  std::string attention = "auto";
  bool tuning_log = false;
  RunSpec run;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model")
      model_name = next();
    else if (a == "--batch")
      batch = std::stoi(next());
    else if (a == "--seq")
      seq = std::stoi(next());
    else if (a == "--warmup")
      warmup = std::stoi(next());
    else if (a == "--steps")
      steps = std::stoi(next());
    else if (a == "--json")
      json_path = next();
    else if (a == "--accum")
      accum = std::stoi(next());
    else if (a == "--zero")
      run.zero = std::stoi(next());
    else if (a == "--grad-reduce") {
      std::string t = next();
      if (t != "fp32" && t != "bf16") {
        std::fprintf(stderr, "cuda_train_bench: --grad-reduce fp32|bf16, not %s\n", t.c_str());
        return 2;
      }
      run.grad_reduce_bf16 = t == "bf16";
    } else if (a == "--tp")
      tp = std::stoi(next());
    else if (a == "--pp")
      pp = std::stoi(next());
    else if (a == "--vocab")
      vocab = std::stoi(next());
    else if (a == "--nccl")
      force_nccl = true;
    else if (a == "--nccl-window")
      run.nccl_window = true;
    else if (a == "--zero3-keep")  // parameters; 1e9 as well as 1000000000
      run.zero3_keep_params = static_cast<int64_t>(std::stod(next()));
    else if (a == "--recompute")
      run.recompute = true;
    else if (a == "--recompute-norms")
      run.recompute_norms = true;
    else if (a == "--whole-masters")
      run.split_masters = false;
    else if (a == "--activations-apart")
      apart = true;
    else if (a == "--fp32")
      run.dtype = DType::kF32;
    else if (a == "--precision") {
      std::string p = next();
      if (p != "bf16" && p != "fp16" && p != "fp32") {
        std::fprintf(stderr, "cuda_train_bench: --precision bf16|fp16|fp32, not %s\n", p.c_str());
        return 2;
      }
      run.dtype = p == "bf16" ? DType::kBF16 : p == "fp16" ? DType::kF16 : DType::kF32;
    } else if (a == "--profile")
      run.profile = true;
    else if (a == "--attention") {
      attention = next();
      if (attention != "cudnn" && attention != "flash" && attention != "auto") {
        std::fprintf(stderr, "cuda_train_bench: --attention auto|cudnn|flash, not %s\n",
                     attention.c_str());
        return 2;
      }
    } else if (a == "--unfused")
      run.fused_epilogues = false;
    else if (a == "--no-tune")
      run.matmul_tuning = false;
    else if (a == "--tuning-log")
      tuning_log = true;
    else if (a == "--chunk")
      run.logits_chunk_rows = std::stoi(next());
    else if (a == "--attention-chunk")
      run.attention_chunk = std::stoi(next());
    else if (a == "--nondeterministic-attention")
      run.deterministic_attention = false;
    else {
      std::fprintf(stderr, "cuda_train_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  auto env = bm::train::dist::ReadRankEnvFromProcess();
  if (!env.ok()) return Fail(env.status());
  const int rank = env->rank, world = env->world_size;
  if (tp < 1 || pp < 1 || world % (tp * pp) != 0) {
    std::fprintf(stderr, "cuda_train_bench: TP%d PP%d does not divide %d ranks\n", tp, pp, world);
    return 2;
  }
  const int dp = world / (tp * pp);
  const bm::train::dist::Coords at = bm::train::dist::CoordsOf(rank, tp, pp, dp);
  auto spec_or = RankSpec(model_name, vocab, tp, at.tp, pp, at.pp);
  auto whole = RankSpec(model_name, vocab, 1, 0, 1, 0);
  if (!spec_or.ok()) return Fail(spec_or.status());
  if (!whole.ok()) return Fail(whole.status());
  const ModelSpec spec = *spec_or;
  int default_batch = model_name == "gpt2-124m" ? 32 : model_name == "llama-1b" ? 8 : 2;
  run.micro_batch = batch > 0 ? batch : default_batch;
  run.seq = seq > 0 ? seq : spec.max_positions;
  // This rank's GPU first: the cuDNN check below builds plans on the current one.
  if (cudaSetDevice(env->local_rank) != cudaSuccess)
    return Fail(bm::Errorf(bm::ErrorCode::kUnavailable, "no GPU {}", env->local_rank));
  // The device's use before anything of ours (the CUDA context), and before the model (with
  // cuDNN's check and the communicators): what lies outside the plan's arena, by source.
  auto used_at_start = bm::train::cuda::DeviceArena::DeviceUsedBytes();
  if (!used_at_start.ok()) return Fail(used_at_start.status());
  // auto (the default): cuDNN's fused attention when built in and usable, like the backend.
  bm::train::cuda::AttentionShape shape{run.micro_batch,         run.seq,
                                        spec.local_heads(),      spec.local_kv_heads(),
                                        spec.head_dim(),         run.attention_chunk,
                                        run.dtype == DType::kF16};
  if (attention == "cudnn" || (attention == "auto" && run.dtype != DType::kF32 &&
                               bm::train::cuda::CudnnAttentionUsable(shape)))
    run.attention = AttentionImpl::kCudnn;
  auto groups = bm::train::dist::ConnectProcessGroups(
      *env, tp, pp, dp, bm::train::dist::Transport::kNccl, env->local_rank, force_nccl);
  if (!groups.ok()) return Fail(groups.status());
  if (dp > 1 || force_nccl) run.comm = groups->dp.get();
  if (tp > 1) run.tp = groups->tp.get();
  if (pp > 1) {
    run.pp = groups->pp.get();
    run.pipeline_slots = bm::train::dist::MaxInFlight(pp, at.pp, accum);
  }
  run.micro_batches_per_step = apart ? 0 : accum;
  auto used_before_model = bm::train::cuda::DeviceArena::DeviceUsedBytes();
  if (!used_before_model.ok()) return Fail(used_before_model.status());
  auto model_or = CudaModel::Create(spec, run);
  if (!model_or.ok()) return Fail(model_or.status());
  CudaModel& model = **model_or;
  const auto& layout = model.layout();
  if (auto s = model.SetParameters(InitParams(layout)); !s.ok()) return Fail(s);

  int n = run.micro_batch * run.seq;
  std::mt19937_64 rng(1 + at.dp);
  std::uniform_int_distribution<int> tok(0, spec.vocab - 1);
  std::vector<int> tokens(n), targets(n);
  bm::train::cuda::AdamWHyper hyper;  // lr 3e-4, betas (0.9, 0.95), wd 0.1, clip 1.0 as the peer
  std::optional<bm::train::LossScaler> scaler;
  if (run.dtype == DType::kF16) scaler.emplace(bm::train::LossScalerOptions{});
  std::vector<double> ms;
  double loss = 0.0, norm = 0.0;
  std::vector<std::vector<int>> micro_tokens, micro_targets;  // a pipeline's micro-batches
  std::vector<bm::train::cuda::TokenBatch> micro;
  double queue_s_before = 0;  // HostQueueSeconds before the timed steps
  // The communication timing before them (the warm-up's first steps wait on NCCL's setup).
  double wait_s_before = 0;
  std::map<std::string, double> wait_s_by_site_before;
  std::map<int, CommTiming::Reduction> reductions_before;
  bm::train::cuda::NvmlGpu nvml;  // the energy the timed steps take (none without NVML)
  int cuda_device = 0;
  if (cudaGetDevice(&cuda_device) == cudaSuccess) nvml.Open(cuda_device);
  double joules_before = 0;
  std::chrono::steady_clock::time_point timed_from;
  for (int step = 0; step < warmup + steps; ++step) {
    for (int i = 0; i < n; ++i) {
      tokens[i] = tok(rng);
      targets[i] = tok(rng);
    }
    if (step == warmup) {
      model.ResetPhaseTimes();
      queue_s_before = model.HostQueueSeconds();
      wait_s_before = model.CommWaitSeconds();
      wait_s_by_site_before = model.CommWaitSecondsBySite();
      reductions_before = model.Reductions();
      joules_before = nvml.Joules();
      timed_from = std::chrono::steady_clock::now();
    }
    auto t0 = std::chrono::steady_clock::now();
    const double loss_scale = scaler ? scaler->scale() : 1.0;
    hyper.step = step + 1 - (scaler ? scaler->skipped() : 0);
    hyper.grad_scale = static_cast<float>(1.0 / loss_scale);
    if (auto s = model.ZeroGradients(); !s.ok()) return Fail(s);
    bm::train::cuda::TokenBatch batch;
    batch.tokens = tokens.data(), batch.targets = targets.data();
    batch.batch = run.micro_batch, batch.seq = run.seq;
    double total = 0;
    const float grad_scale = static_cast<float>(loss_scale) / (static_cast<float>(n) * accum * dp);
    if (pp > 1) {  // the step's micro-batches at once, in 1F1B
      micro_tokens.resize(accum), micro_targets.resize(accum), micro.resize(accum);
      for (int a = 0; a < accum; ++a) {
        micro_tokens[a] = a == 0 ? tokens : std::vector<int>(n);
        micro_targets[a] = a == 0 ? targets : std::vector<int>(n);
        for (int i = 0; a > 0 && i < n; ++i) {
          micro_tokens[a][i] = tok(rng);
          micro_targets[a][i] = tok(rng);
        }
        micro[a] = batch;
        micro[a].tokens = micro_tokens[a].data(), micro[a].targets = micro_targets[a].data();
      }
      auto sum = model.PipelineStep(micro, grad_scale);
      if (!sum.ok()) return Fail(sum.status());
      total = *sum;
    }
    for (int a = 0; pp == 1 && a < accum; ++a) {
      if (a > 0) {
        for (int i = 0; i < n; ++i) {
          tokens[i] = tok(rng);
          targets[i] = tok(rng);
        }
      }
      auto sum = model.ForwardBackward(batch, grad_scale, a == accum - 1);
      if (!sum.ok()) return Fail(sum.status());
      total += *sum;
    }
    bool apply = true;
    if (scaler) {  // the loop's decision: the norm read back, an overflow skips AdamW
      auto g = model.GradNorm();
      if (!g.ok()) return Fail(g.status());
      apply = std::isfinite(*g) && std::isfinite(total);
      if (auto s = scaler->Update(!apply); !s.ok()) return Fail(s);
    }
    if (apply) {
      if (auto s = model.OptimizerStep(hyper); !s.ok()) return Fail(s);
    }
    if (auto s = model.Synchronize(); !s.ok()) return Fail(s);
    auto t1 = std::chrono::steady_clock::now();
    loss = total / (static_cast<double>(n) * accum);
    if (step + 1 == warmup + steps) {
      auto g = model.GradNorm();
      if (g.ok()) norm = *g / loss_scale;
    }
    if (pp > 1 && at.pp != pp - 1) loss = 0;  // the last stage's (the largest, below)
    if (!std::isfinite(loss) && !scaler)
      return Fail(bm::Errorf(bm::ErrorCode::kFailed, "loss is {} at step {}", loss, step));
    if (step >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const double timed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_from).count();
  const double joules = nvml.ok() ? nvml.Joules() - joules_before : -1.0;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double med = sorted[sorted.size() / 2];
  // The slowest rank's median, and the largest memory, as the peer reports them. The device
  // use is the process's (nvidia-smi's figure, the CUDA context included) at its largest of
  // after Create and after the timed steps, by when every kernel and library has been loaded
  // and has run (lazy module loading, the matmul tuner's candidates, cuDNN's plans).
  auto after_steps = bm::train::cuda::DeviceArena::DeviceUsedBytes();
  if (!after_steps.ok()) return Fail(after_steps.status());
  double used = static_cast<double>(std::max(model.memory().device_used_bytes, *after_steps));
  const double used_after_create = static_cast<double>(model.memory().device_used_bytes);
  for (double* v : {&med, &used, &loss}) {
    if (auto s = groups->control->AllReduce(v, 1, bm::train::dist::DType::kFloat64,
                                            bm::train::dist::ReduceOp::kMax);
        !s.ok())
      return Fail(s);
  }
  // Per GPU: each data-parallel replica's tokens over its TP x PP GPUs.
  double tps = static_cast<double>(n) * accum * dp / world / (med / 1e3);
  double n_all = static_cast<double>(bm::train::cuda::ParamLayout(*whole).count());
  double n_emb =
      static_cast<double>(spec.vocab) * spec.hidden * (spec.tied ? 1 : 2) +
      (spec.family == Family::kGpt ? static_cast<double>(spec.max_positions) * spec.hidden : 0.0);
  double attn = 12.0 * spec.layers * spec.hidden * run.seq;
  nlohmann::json j;
  j["kind"] = "benchmake-cuda";
  j["model"] = model_name;
  j["batch"] = run.micro_batch;
  j["accum"] = accum;
  j["gpus"] = world;
  j["tp"] = tp;
  j["pp"] = pp;
  j["dp"] = dp;
  j["vocab"] = spec.vocab;
  j["zero"] = run.zero;
  j["grad_reduce"] = run.grad_reduce_bf16 ? "bf16" : "fp32";
  j["nccl_window"] = run.nccl_window;
  j["zero3_keep_params"] = run.zero3_keep_params;
  j["communicator"] = run.comm ? std::string(run.comm->transport()) : "none";
  j["seq"] = run.seq;
  j["precision"] = run.dtype == DType::kBF16 ? "bf16 compute / fp32 params+grads+AdamW"
                   : run.dtype == DType::kF16
                       ? "fp16 compute / fp32 params+grads+AdamW, dynamic loss scale"
                       : "fp32";
  j["dtype"] = bm::train::cuda::DTypeName(run.dtype);
  j["skipped_steps"] = scaler ? scaler->skipped() : 0;
  j["loss_scale"] = scaler ? nlohmann::json(scaler->scale()) : nlohmann::json(nullptr);
  j["recompute"] = run.recompute;
  j["recompute_norms"] = run.recompute_norms;
  j["split_masters"] = model.memory().split_masters;
  j["attention"] = run.attention == AttentionImpl::kCudnn ? "cudnn" : "flash";
  j["attention_chunk"] = model.memory().attention_key_block;  // keys per backward call
  j["deterministic_attention"] = run.deterministic_attention;
  j["matmul_tuning"] = run.matmul_tuning;
  j["n_all"] = n_all;
  j["step_ms_median"] = med;
  j["step_ms_min"] = sorted.front();
  j["step_ms_max"] = sorted.back();
  j["tokens_per_s"] = tps;  // per GPU
  // Over the timed steps, as everything else here.
  j["comm_wait_ms_per_step"] = (model.CommWaitSeconds() - wait_s_before) * 1e3 / steps;
  for (const auto& [site, s] : model.CommWaitSecondsBySite())
    j["comm_wait_ms_per_step_by_site"][site] = (s - wait_s_by_site_before[site]) * 1e3 / steps;
  // Each unit's reduction in the timed steps' last micro-batches, a step's mean: queued behind
  // earlier communication, its own length, and its end after the backward's (the "end of
  // micro-batch" wait is the last ones' positive ends).
  for (const auto& [unit, r] : model.Reductions()) {
    const CommTiming::Reduction& b = reductions_before[unit];
    const int n = r.steps - b.steps;
    if (n > 0)
      j["reductions_ms"][std::to_string(unit)] = {
          {"queued", (r.queued_ms - b.queued_ms) / n},
          {"reduce", (r.reduce_ms - b.reduce_ms) / n},
          {"after_backward", (r.after_backward_ms - b.after_backward_ms) / n}};
  }
  j["host_queue_ms_per_step"] = (model.HostQueueSeconds() - queue_s_before) * 1e3 / steps;
  if (joules >= 0) {  // this rank's GPU over the timed steps (NVML's energy counter: seconds)
    j["joules_per_step"] = joules / steps;
    j["watts_mean"] = joules / timed_s;
    j["energy_window_s"] = timed_s;
  }
  j["mfu_6n_all"] = 6.0 * n_all * tps / kPeak;
  j["mfu_palm_all"] = (6.0 * n_all + attn) * tps / kPeak;
  j["mfu_palm_nonemb"] = (6.0 * (n_all - n_emb) + attn) * tps / kPeak;
  j["final_loss"] = loss;
  j["ln_vocab"] = std::log(static_cast<double>(spec.vocab));
  j["grad_norm"] = norm;
  j["plan_GiB"] = model.memory().plan_bytes / 1073741824.0;
  j["layers_over_gradients"] = model.memory().layers_over_gradients;
  j["device_used_GiB"] = used / 1073741824.0;                            // the largest over ranks
  j["device_used_after_create_GiB"] = used_after_create / 1073741824.0;  // this rank's
  // This rank's use outside the arena, by source: the CUDA context; cuDNN's check and the
  // communicators (NCCL's buffers); the model's own beyond its plan (library handles, the
  // arena's rounding when NCCL allocates it as a window); the steps' (kernels loaded lazily,
  // cuDNN's plans, the tuner's candidates).
  j["device_outside_arena_GiB"] = {
      {"context", static_cast<double>(*used_at_start) / 1073741824.0},
      {"libraries_and_communicators",
       static_cast<double>(*used_before_model - *used_at_start) / 1073741824.0},
      {"model_beyond_plan", (used_after_create - static_cast<double>(*used_before_model) -
                             static_cast<double>(model.memory().plan_bytes)) /
                                1073741824.0},
      {"steps", (static_cast<double>(*after_steps) - used_after_create) / 1073741824.0}};
  if (run.profile) {
    nlohmann::json phases;
    for (const auto& [name, total] : model.PhaseTimes()) phases[name] = total / steps;
    j["phase_ms_per_step"] = phases;
  }
  if (rank != 0) return 0;
  auto facts = bm::train::cuda::ProbeGpus();
  if (facts.ok() && !facts->gpus.empty()) j["device"] = facts->gpus[0].name;
  j["cublaslt_version"] = cublasLtGetVersion();  // the library loaded (LD_LIBRARY_PATH decides)
  std::printf("%s\n", j.dump().c_str());
  std::printf(
      "SUMMARY %s %s B=%d T=%d accum %d GPUs %d TP%dPP%dDP%d zero %d: %.0f tok/s/GPU, step %.1f "
      "ms, MFU 6N %.1f%% PaLM %.1f%%, plan %.1f GiB, used %.1f GiB, loss %.3f (ln V %.3f)\n",
      model_name.c_str(), bm::train::cuda::DTypeName(run.dtype), run.micro_batch, run.seq, accum,
      world, tp, pp, dp, run.zero, tps, med, 100 * j["mfu_6n_all"].get<double>(),
      100 * j["mfu_palm_all"].get<double>(), j["plan_GiB"].get<double>(),
      j["device_used_GiB"].get<double>(), loss, std::log(static_cast<double>(spec.vocab)));
  if (run.profile) std::fprintf(stderr, "%s", model.memory().plan_summary.c_str());
  if (tuning_log) {
    for (const std::string& line : model.MatmulTuningLog())
      std::printf("tuning %s\n", line.c_str());
  }
  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::app);
    f << j.dump() << "\n";
  }
  return 0;
}
