// RunConfig: what one benchmake-train run does, read from the JSON file the
// pretrain / finetune / evaluate rules write (docs/TRAINER.md lists every key).
//
//   {"mode": "pretrain" | "finetune" | "evaluate",
//    "data": "/abs/tokenize/out",            tokenize output directory
//    "out_dir": "/abs/out", "resume_dir": "/abs/resume" (may be ""),
//    "model": {"preset": "llama-small", "overrides": {...}},     pretrain
//    "init": "/abs/checkpoint dir or file.safetensors",          finetune, evaluate
//    "device": "cpu", "threads": 0, "precision": "fp32" (fp32, bf16, fp16; amp = bf16),
//    "recompute": false,
//    "attention": "auto" (CUDA: "auto" = cuDNN when usable, "flash", "cudnn"),
//    "layout": "TP1PP1DP1", "zero": 0, "sequence_parallel": false, "communicator": "auto",
//    "grad_reduce": "fp32" | "bf16" (cuda: gradients summed over the DP group in bf16),
//    "nccl_window": false (cuda over NCCL: the device memory as the DP group's NCCL window),
//    "zero3_keep_params": 0 (zero 3: parameters of the forward's last units kept gathered to
//    their backward, BackendOptions::zero3_keep_params),
//    "attention_backward": "auto" | "one_call" | "blocks" (cuda, cuDNN's attention:
//    BackendOptions::attention_backward),
//    "lbs": 8, "mpe": 256, "gas": 1, "steps": 100, "lr": 1e-3, "min_lr": 1e-4,
//    "warmup_steps": 10, "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8,
//    "grad_clip": 1.0, "seed": 1234, "checkpoint_every": 0, "peak_tflops": null,
//    fp16's dynamic loss scaling (trainer/run/loss_scaler.h; validated for any precision,
//    used with fp16 only): "init_scale": 65536, "growth_factor": 2, "backoff_factor": 0.5,
//    "growth_interval": 2000, "min_scale": 1, "hysteresis": 1,
//    "eval_tokens": 0, "eval_examples": 64, "eval_choices": 4, "eval_max_answer": 32,
//    "max_new_tokens": 128 (evaluate on MMMU data: tokens decoded per question, MMMU's 128),
//    "progress": false, "save_init": false,
//    LLaVA models only (trainer/model/llava_freeze.h), at most one of the three:
//    "llava_stage": "pretrain" | "finetune" | "full",
//    "freeze": ["vision_tower", "projector", "language_model"] (any that
//    leave something to train), or model.trainable: the parts that train}
//
// save_init (pretrain, finetune): also write the model as it starts, before the first step, to
// out_dir/init/ (model.safetensors + config.json, the final model's format): the weights a
// second framework starts from to check its loss curve against this run's
// (examples/pytorch_peer/).
//
// Values only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/result.h"
#include "trainer/backend.h"
#include "trainer/model/config.h"
#include "trainer/model/llava_freeze.h"
#include "trainer/run/loss_scaler.h"

namespace bm::train {

enum class RunMode { kPretrain, kFinetune, kEvaluate };
std::string_view RunModeName(RunMode mode);

struct ParallelLayout {
  int tp = 1, pp = 1, dp = 1;
  std::string ToString() const;  // "TP1PP1DP1"
};
// "TP1PP1DP1" (any order of the three, each at most once; missing ones are 1).
Result<ParallelLayout> ParseLayout(std::string_view text);

struct RunConfig {
  RunMode mode = RunMode::kPretrain;
  std::string data_dir, out_dir, resume_dir, init;
  std::string preset;
  nlohmann::json overrides = nlohmann::json::object();
  std::string device = "cpu";
  int threads = 0;
  Precision precision = Precision::kFp32;
  bool recompute = false;
  bool flash_attention = false;
  std::string attention = "auto";  // CUDA: "auto", "flash" or "cudnn" (BackendOptions)
  ParallelLayout layout;
  int zero = 0;  // ZeRO stage 0-3 over the DP group
  // Gradients summed over the DP group in bf16 rather than fp32 (Megatron's
  // --grad-reduce-in-bf16, FSDP2's reduce_dtype; cuda only: BackendOptions).
  bool grad_reduce_bf16 = false;
  bool nccl_window = false;                 // BackendOptions::nccl_window
  int64_t zero3_keep_params = 0;            // BackendOptions::zero3_keep_params
  std::string attention_backward = "auto";  // BackendOptions::attention_backward
  // Megatron's sequence parallelism over the TP group (BackendOptions); needs
  // TP > 1 and lbs·mpe divisible by TP.
  bool sequence_parallel = false;
  // The transport of the groups: "auto" (NCCL for cuda, Gloo for the cpu; a
  // world of one communicates with nobody), or "gloo"/"nccl" to insist, even
  // with one rank (tests: a one-rank NCCL run equals the run without one).
  // "gloo" on cuda stages the GPU's buffers through host memory: no NCCL, and
  // ranks may share a GPU (trainer/dist/staged_communicator.h).
  std::string communicator = "auto";
  int64_t lbs = 8, mpe = 256, gas = 1, steps = 100, warmup_steps = 10;
  double lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double grad_clip = 1.0;
  LossScalerOptions loss_scaler;  // precision fp16 only
  uint64_t seed = 1234;
  int64_t checkpoint_every = 0;
  std::optional<double> peak_tflops;
  int64_t eval_tokens = 0, eval_examples = 64, eval_choices = 4, eval_max_answer = 32;
  int64_t max_new_tokens = 128;  // MMMU decoding (trainer/run/llava_mmmu.h)
  bool progress = false;
  bool mllog = false;      // also write out_dir/mllog.txt: MLPerf :::MLLOG lines (base/mllog.h)
  bool save_init = false;  // also write out_dir/init/: the model before the first step
  // LLaVA: the parts that do not train, from llava_stage, freeze or model.trainable;
  // freeze_set: one of them was given (a text model refuses it).
  LlavaFreeze freeze;
  bool freeze_set = false;

  int64_t gbs() const { return lbs * gas * layout.dp; }
};

// Checks types and ranges (gas >= 1, lbs >= 1, 0 <= warmup <= steps, 0 <= zero
// <= 3, ...) and what this trainer supports (zero 0-3 with TP and PP on both devices; evaluation
// on one rank; precision by device), naming the key
// in every message. Whether the model splits TP x PP ways is the model's check (CheckModelParallel,
// trainer/model/config.h).
Result<RunConfig> ParseRunConfig(const nlohmann::json& json);

// The canonical JSON of the settings that determine a run's bits (for resume); with fp16 the
// loss scaler's settings too.
std::string Fingerprint(const RunConfig& config, const ModelConfig& model);

}  // namespace bm::train
