// The training loop of a LLaVA model (model.preset a LlavaPreset, e.g.
// "llava-tiny") on a llava_data directory, on the CPU (trainer/cpu/llava_trainer.h, fp32) or
// with `device = "cuda"` on GPUs (trainer/cuda/cuda_llava_trainer.h, fp32 or bf16), through
// trainer/run/llava_trainer_api.h: whole samples per row, each micro-batch padded to its
// longest row rounded up to 64 positions (trainer/data/llava_batch.h), AdamW with the run's
// schedule and clipping, data parallel with any ZeRO stage over `layout = "DPn"`. Writes
// out_dir/log.jsonl (the loss curve, as RunTraining's), the final model
// (trainer/checkpoint/llava_checkpoint.h: llava-hf names, transformers' config.json) and
// metrics.json (benchmake-metrics; tokens and MFU as trainer/run/llava_metrics.h counts them).
// Starts from InitLlavaParameters(seed) or from `init` (a LLaVA checkpoint directory). run.freeze
// (llava_stage / freeze) names the parts that do not train (trainer/model/llava_freeze.h).
//
// Not supported yet (refused, naming the field): fp16, bf16 on the cpu, TP or PP,
// resume checkpoints (checkpoint_every), save_init, mllog, eval, grad_reduce bf16, nccl_window,
// zero3_keep_params.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "base/result.h"
#include "trainer/dist/rank_env.h"
#include "trainer/run/run_config.h"

namespace bm::train {

// Whether run.preset names a LLaVA model (RunTraining hands such runs here).
bool IsLlavaRun(const RunConfig& run);

Result<nlohmann::json> RunLlavaTraining(const RunConfig& run, std::ostream* progress,
                                        const dist::RankEnv& env);

}  // namespace bm::train
