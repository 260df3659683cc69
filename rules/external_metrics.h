// An external trainer's run as benchmake's own: from its training log
// (rules/logparse/log_parser.h) and the facts the BENCHFILE adds, the
// metrics.json and log.jsonl that benchmake-train writes (docs/METRICS.md,
// "External trainers"), so that `report` and `compare` put a Megatron,
// FlagScale, DeepSpeed, Trainer, PaddleNLP, FlagPerf or MLPerf run beside a
// benchmake-train run.
//
// The exec and measure rules take these parameters (docs/BENCHFILE.md):
//   log_format  none | auto | deepspeed | flagperf | flagscale | megatron | mllog |
//               paddle | trainer
//   log         the log file, relative to {out} or the working directory
//               ("": the command's own output)
//   layout, mpe, lbs, gas, precision      the run's terms where the log is silent
//   model, overrides | parameters, layers, hidden    the model, for MFU
//   peak_tflops, device, excluded_warmup_steps       MFU's peak, the timing window
// All enter the key: they change metrics.json, an output of the step, and a
// key must determine its outputs. Reinterpreting an expensive run is cheap
// all the same: let one target run the trainer and declare its log as an
// output, and a second target `cat` it with log_format (docs/BENCHFILE.md).
//
// A value the BENCHFILE gives and the log states differently is an error
// naming both ("mpe = 2048, but train.log:31 says 4096"): the log is what ran.
// Facts neither gives make the metrics that need them null, with a note
// (provenance.notes and the step log) naming the missing line or the
// parameter to set: without the sequence length or the batch no token/p/s,
// without the device count no token/p/s per device. Errors: a log with
// neither a loss nor a timed step ("nothing to report", with the note that
// says why); an excluded_warmup_steps the log cannot honour (its only timing
// is the trainer's own figure, which has its own window).
//
// Thread safety: pure functions except MetricsFromLog (the step's files).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "engine/rule.h"
#include "rules/logparse/log_parser.h"

namespace bm::rules {

// The parameters above, with their defaults (every one "not given").
std::vector<engine::ParamSpec> ExternalLogParams();

// The version of how a log is read: bumped whenever metrics.json or log.jsonl for the same log
// and parameters changes (a parser in rules/logparse/ or this file's arithmetic), so that a
// cached step parsed by an earlier release is not served as this one's. It enters the key of a
// step with a log_format (the exec rule's `impl log_reading` field). 2: config.gbs from the
// records' batch, DeepSpeed's MaxMemAllocated in Megatron-DeepSpeed and GPT-NeoX logs. 3:
// token/p/s from the printed per-device rates of records without a time (torchtitan's tps). 4:
// ms-swift's Trainer dicts timed by their elapsed time (trainer_elapsed.h). 5: a log whose steps
// are timed but give no token rate (no sequence length or batch) keeps their step_ms_median;
// LLaMA-Factory's trainer_log.jsonl timed by its elapsed time (trainer_elapsed.h). 6: PaddleMIX's
// benchmark line (`global step N / M, ..., avg_batch_cost: s sec, ..., max_mem_reserved: R MB`) is
// a paddle step line, timed by avg_batch_cost, its memory in MiB. 7: the Trainer's (and
// PaddleNLP's, with its lbs and gas) summary gives
// the data-parallel ranks (total train batch size / (per device x accumulation steps)), so
// config.dp and devices, and with them token/p/s per device; dicts numbered by the tqdm bar of
// their step are timed by its elapsed time. 8: TRL's num_tokens in the Trainer's dicts gives each
// record its tokens (the growth of the count) and, over train_runtime, the run's token rate in
// place of train_samples_per_second x mpe; DeepSpeed's flops profiler summary (also in a
// Megatron-DeepSpeed log) and Megatron-DeepSpeed's `TFLOPs` lines, which win, give mfu.stated and
// mfu.stated_flops_per_device; a DeepSpeed script's loss line naming a global step is read at it.
// 9: the per-device TFLOP/s other trainers print on their records give mfu.stated_flops_per_device
// (and mfu.stated over the peak where the log states no MFU): Megatron-LM's (FlagScale's,
// Megatron-Bridge's, Primus's) `throughput per GPU (TFLOP/s/GPU)`, GPT-NeoX's `approx flops per
// GPU`, NeMo 2's TFLOPS_per_GPU, Nanotron's model_tflops_per_gpu, torchtitan's tflops. 10: MLPerf
// events placed by their step_num (tracked_stats, eval_start) and an eval_accuracy printed after
// its eval_stop; FlagPerf's EVALUATE without a value is an eval of the STEP_END's eval_accuracy
// logged just before it; a Trainer restart or new run drops the evaluations and the token-rate
// average of the dicts it drops; log text in notes and labels with invalid UTF-8 as U+FFFD. 11: an
// MLPerf log's `mlperf` block (the time to train, the submission, the epochs it times), and the
// epoch-timed benchmarks (ResNet, SSD, U-Net3D, BERT, DLRM, R-GAT) read by it, not refused. 12: the
// evaluations of MLPerf's ResNet, BERT and GNN/R-GAT are eval.accuracy, not eval.val_loss. 13: an
// MLPerf benchmark's quality metric and target (eval.quality); SSD's mAP, U-Net3D's Dice, DLRM's
// AUC, Stable Diffusion's FID and the like leave eval.val_loss; eval.task without " (log)". 14: a
// log that states no device count (nor the BENCHFILE) gets config.devices, layout and dp null, and tp
// and pp only as logged, not TP1PP1DP1. 15: an MLPerf evaluation at a step past the one run_stop
// names (MaxDiffusion's checkpoints evaluated after the run) is left out of the series. 16: Mask
// R-CNN's {"BBOX", "SEGM"} evaluations are read (box mAP the series); eval.quality.reached of Stable
// Diffusion and Mask R-CNN asks both metrics of one evaluation.
inline constexpr int kLogReadingVersion = 16;

// Load-time checks: a known log_format, a relative log path, a valid layout,
// non-negative sizes, model or parameters (not both; layers/hidden only
// without a model), and — with log_format = "none" — none of the others set.
std::vector<engine::ParamError> CheckExternalLogParams(const nlohmann::json& params);

struct ExternalMetrics {
  nlohmann::json metrics;          // metrics.json (docs/METRICS.md)
  std::string log_jsonl;           // log.jsonl, its header first
  std::vector<std::string> notes;  // what could not be computed, and why
};

// params: the step's (validated, defaults filled); platform: its platform
// facts, or {} (exec). log_name names the log in messages. With the `auto`
// parser the log is timed and labelled as the format it was recognised as
// (log.format).
Result<ExternalMetrics> BuildExternalMetrics(const logparse::LogParser& parser,
                                             const logparse::ParsedLog& log,
                                             std::string_view log_name,
                                             const nlohmann::json& params,
                                             const nlohmann::json& platform);

// After the command of an exec/measure step with log_format set: reads the
// log, writes {out}/metrics.json and {out}/log.jsonl, returns the metrics.
// Errors: kFailed when the log was not produced, or when the command wrote
// metrics.json or log.jsonl itself; the parser's and BuildExternalMetrics'.
Result<engine::StepResult> MetricsFromLog(engine::StepContext& ctx);

}  // namespace bm::rules
