// What the pretrain, finetune and evaluate rules share: their parameters, the
// run config they write for benchmake-train (trainer/run/run_config.h), the
// checks they make when the BENCHFILE is loaded, and how they launch the
// trainer and collect metrics.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/rule.h"
#include "trainer/run/run_config.h"

namespace bm::rules {

enum class TrainKind { kPretrain, kFinetune, kEvaluate };

// Parameters common to the three rules (device, threads, precision, layout,
// batch terms, seed, peak_tflops, progress) plus, for pretrain / finetune, the
// optimizer's and the schedule's. Defaults suit the kind (finetune: smaller lr).
std::vector<engine::ParamSpec> TrainParams(TrainKind kind);

// The JSON run config for benchmake-train from the rule's parameters and the
// step's paths (inputs resolved through ctx.inputs; "" for Check()).
nlohmann::json RunConfigJson(TrainKind kind, const nlohmann::json& params,
                             const engine::StepContext* ctx);

// Load-time checks: everything ParseRunConfig calls invalid (not what it calls
// unsupported: TrainUnsupported), plus, for pretrain, the
// model (preset, overrides, heads divide hidden, mpe <= max_seq; a LLaVA
// preset's language model). Each error names the parameter it is about.
std::vector<engine::ParamError> CheckTrainParams(TrainKind kind, const nlohmann::json& params);

// What a train step's output is to the targets reading it: {"llava": true}
// for a LLaVA model (pretrain: model is a LLaVA preset; finetune: its init's
// facts, when init is a target), {"llava": false} for a text model, {} when
// unknown (a finetune from a checkpoint file). Evaluate: {}.
nlohmann::json TrainOutputFacts(TrainKind kind, const nlohmann::json& params,
                                const std::vector<engine::UpstreamInput>& inputs);

// Load-time check of the model against the data (at `data`): a LLaVA model
// reads a llava_data target (text with images), a text model a tokenize
// target; a source directory or a checkpoint file passes (unknown). Evaluate: a
// LLaVA checkpoint reads an mmmu_data target (MMMU) on the cpu, a text one
// anything else; llava_data is refused.
std::vector<engine::ParamError> CheckTrainInputs(TrainKind kind, const nlohmann::json& params,
                                                 const std::vector<engine::UpstreamInput>& inputs);

// Writes scratch/run.json, runs <tools_dir>/benchmake-train --config on it
// (its output into the step's log, echoed when interactive) and returns
// out/metrics.json. A failed run is kFailed with the trainer's last message
// in the step log.
//
// The process runs where the step is placed (ctx.placement: this machine, or a
// srun task under the Slurm executor). A layout of N = TP*PP*DP > 1 ranks
// starts N processes through the placement's launcher (rules/launch/: local
// processes, srun's tasks, mpirun's), all on the same run.json: on cuda one
// per GPU (of ctx.gpus locally), on cpu `threads` each (0: the cores of each
// rank's machine divided by its ranks there).
// Rank 0 writes the step log and out/; rank k logs to NAME.rank-k.log beside it.
// The first rank to fail stops the others; the step then fails with that
// rank's name, how it ended and its log's last lines, and the step log lists
// how every rank ended. BENCHMAKE_COLLECTIVE_TIMEOUT is `collective_timeout`.
Result<engine::StepResult> RunTrainer(TrainKind kind, engine::StepContext& ctx);

// Plan-time refusals (engine::Rule::Unsupported): what ParseRunConfig calls
// unsupported (ZeRO-2 or 3 with model parallelism, a precision the device lacks,
// ...), each message naming the layout or value. (GPUs: the engine's check.)
std::vector<std::string> TrainUnsupported(TrainKind kind, const nlohmann::json& params);

// Ranks of the layout: TP*PP*DP (1 for a layout that does not parse).
int TrainWorldSize(const nlohmann::json& params);

// GPUs a step needs: every rank of the layout on device "cuda", else 0.
int TrainGpus(const nlohmann::json& params);

}  // namespace bm::rules
