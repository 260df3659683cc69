// Reading an external trainer's training log: Megatron-LM / FlagScale iteration lines, NeMo 2's
// ProgressPrinter lines, NeMo 1's training bars and NeMo Automodel's step lines, DeepSpeed's
// engine and ThroughputTimer lines, the Hugging Face Trainer's log dicts (transformers,
// accelerate), PaddleNLP's step lines, FlagPerf's summary and `[PerfLog]` events, MLPerf
// `:::MLLOG` events, torchtitan's `step: N  loss: X ...  tps: T` lines, Nanotron's
// `iteration: N / M | ...` lines, LitGPT's `iter I step S | loss train: X, ... (step)` lines,
// torchtune's `Step N | loss:X ...` lines (or its `E|S|Loss: X` training bar), MaxText's
// `completed step: N, seconds: S, ...` lines, and `auto`, which
// recognises the format from the log. One parser per format (one file each), found by name in a
// small registry, so that the exec rule's `log_format = "megatron"`
// is one lookup and a new format is one file and one registry line (STYLE.md
// habit 8).
//
// A parser is a pure function from the log's text to a ParsedLog: the
// per-iteration series, the peak memory the log reports, the trainer's own
// throughput figures, and the facts the log states about the run (sequence
// length, batch sizes, layout, model size), each with the line that said it.
// What the series means in metrics.json terms is rules/external_metrics.h's
// business, not the parsers'. Every format is checked against verbatim real
// logs (tests/data/logs/SOURCES.md).
//
// Tolerated, as real logs need: lines of any other kind (warnings, other
// ranks' output, progress bars), prefixes before a recognized line (a
// timestamp, `[default0]:`, srun's `0: `, indentation), tqdm's carriage
// returns (each `\r`-separated segment is read as a line of its own, with the
// line's number), the same record printed by several ranks (the first is
// kept), terminal colour codes (removed by the registry's parsers), a Megatron iteration or memory
// line hard-wrapped over several lines by a terminal copy (rules/logparse/wrapped_lines.h), a run
// resumed from a checkpoint (when a different record for a step at or below the last one appears,
// the records from that step on are replaced by the resumed run's), and a last line cut off mid-way
// (its unterminated field is ignored), CRLF line ends and a UTF-8 byte order mark (a log saved by a
// Windows editor). Errors (kCorrupt, "NAME:LINE: what"): a recognized line
// whose field does not parse (`lm loss: abc |`), or whose step is no whole number from 0 to 2^53
// (`iteration nan/`, NeMo's `global_step: inf`; a DeepSpeed, PaddleNLP or Trainer line with such a
// step is no record: WholeCount in rules/logparse/line_scan.h); a complete
// Megatron iteration line from which no field was read (a NeMo 2 line read as Megatron says to set
// "nemo"); NeMo Automodel records beside NeMo 2 / NeMo 1 ones (two runs' steps, numbered
// differently); a log without a single record, naming what was looked for and, when another
// format's lines are there, which log_format reads them ("NAME: no Megatron iteration lines (...)
// in 61 lines; line 12 is a transformers Trainer log dict: set log_format = \"trainer\"").
//
// Thread safety: pure functions; the registry is immutable.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::logparse {

// One logged point of training: one optimizer step, or the average over the
// `span` steps that end at `step` (Megatron's --log-interval).
struct Iteration {
  int64_t step = 0;               // 1-based optimizer step the record ends at
  int64_t span = 1;               // optimizer steps it covers
  std::optional<double> loss;     // mean training loss of the span's counted steps (may be NaN)
  std::optional<double> ms;       // wall time per step, averaged over the span
  std::optional<double> samples;  // samples (sequences) per step over all ranks: the global batch
  std::optional<double> samples_per_s;  // the step's rate as the trainer printed it (DeepSpeed)
  // The step's token rate as the trainer printed it, over all devices
  // (PaddleNLP's ips_total) or per device (interval_tokens_per_second_per_device).
  std::optional<double> tokens_per_s;
  std::optional<double> tokens_per_device_per_s;
  // The tokens of all devices the record's span processed, as the trainer counted them (TRL's
  // num_tokens: the growth of its running count since the record before), and that running count
  // at the record (rules/logparse/trainer_num_tokens.cc).
  std::optional<double> tokens;
  std::optional<double> tokens_seen;
  std::optional<double> time_ms;  // wall clock at the record, ms since the epoch (MLLOG)
  std::optional<double> lr;
  std::optional<double> grad_norm;
  std::optional<double> loss_scale;  // fp16 dynamic loss scale
  // The trainer's own MFU over the record's span, a fraction (torchtitan's `mfu: U%`); one
  // figure for a window of steps: MfuOverRecords (rules/logparse/records_mfu.h).
  std::optional<double> mfu;
  // The trainer's own achieved FLOP/s per device over the record's span, by its own FLOPs count:
  // Megatron-DeepSpeed's `TFLOPs: x`, Megatron-LM's (FlagScale's, Megatron-Bridge's, Primus's)
  // `throughput per GPU (TFLOP/s/GPU): x`, GPT-NeoX's `approx flops per GPU: xTFLOPS` (hardware
  // FLOPs under activation checkpointing), NeMo 2's `TFLOPS_per_GPU: x`, Nanotron's
  // `model_tflops_per_gpu: x`, torchtitan's `tflops: x` (x 1e12); one figure for a window of steps
  // as for mfu (records_mfu.h).
  std::optional<double> flops_per_device_per_s;
  int64_t skipped = 0;  // steps of the span the optimizer skipped (overflow)
  int64_t nan = 0;      // steps of the span with a NaN or Inf loss
  int64_t line = 0;     // 1-based line it was read from
};

// A value the log states about the run and where.
struct Fact {
  double value = 0;
  int64_t line = 0;
};

// A trainer's own figure for its throughput over many steps: DeepSpeed's
// RunningAvgSamplesPerSec (or, before 0.7, SamplesPerSec) at its last report,
// the Trainer's closing train_samples_per_second, FlagPerf's Tokens/p/s or its [PerfLog]
// FINISHED training_sequences_per_second, LLaMA-Factory's trainer_log.jsonl throughput, the
// Trainer's train_tokens_per_second (include_num_input_tokens_seen), TRL's num_tokens over the
// Trainer's train_runtime.
// Exactly one of the three rates is set.
struct TrainerAverage {
  std::optional<double> samples_per_s;            // global samples per second
  std::optional<double> tokens_per_device_per_s;  // tokens per device per second
  std::optional<double> tokens_per_s;             // global tokens per second
  int64_t excluded_steps = 0;  // the first steps it leaves out (ThroughputTimer start_step)
  int64_t through_step = 0;    // the last step it covers (0: not known)
  int64_t line = 0;
  std::string what;  // "RunningAvgSamplesPerSec", "train_samples_per_second", "Tokens/p/s"
};

// An evaluation the log reports (MLPerf eval_accuracy, the Trainer's eval_loss).
struct EvalPoint {
  int64_t step = 0;  // 0 when the log does not say
  double value = 0;
  int64_t line = 0;
};

// What a log's evaluations measure, where the log names it: MLPerf's benchmarks state a quality
// metric and the target a run trains to (rules/logparse/mlperf_quality.h).
struct EvalMetric {
  // Where the value goes in metrics.json's eval block: val_loss (a loss or log perplexity),
  // accuracy (a classification accuracy, a fraction), or neither (mAP, Dice, AUC, FID, ...): the
  // quality block alone.
  enum class Kind { kLoss, kAccuracy, kScore };
  Kind kind = Kind::kLoss;
  std::string name;                      // "top-1 accuracy", "mAP", "log perplexity"; "" unknown
  std::optional<bool> higher_is_better;  // nullopt: not known
  std::optional<double> target;          // the quality a run must reach, nullopt: none stated
  bool target_strict = false;            // the target is to be passed, not met (GRPO's `v > 0.69`)
  // Whether an evaluation reached the target: one of the series, or where MLPerf's target asks two
  // metrics of one evaluation (Stable Diffusion's FID and CLIP, Mask R-CNN's box and mask mAP),
  // one that met both. nullopt: no target or no direction.
  std::optional<bool> reached;
};

// MLPerf's own result for a run (`:::MLLOG` logs): what mlperf_logging's result summarizer scores,
// the time to train, with the submission it names and the epochs it timed.
struct MlperfRun {
  std::string benchmark, submitter, division, platform;  // submission_* ("" when not logged)
  std::string status;                     // run_stop's metadata.status ("" when it names none)
  std::optional<double> run_s;            // run_start to run_stop, seconds
  std::optional<double> time_to_train_s;  // run_s of a run whose status is "success"
  // The epochs the log times (an epoch_start and an epoch_stop of one epoch_num; the last may be
  // cut short by run_stop) and the median of their seconds; nullopt where none is timed (BERT,
  // DLRM, R-GAT stop at an epoch_num other than their start's: samples, epoch fractions).
  std::optional<int64_t> epochs;
  std::optional<double> epoch_s_median;
  std::optional<double> train_samples, eval_samples;  // as logged (NVIDIA's SSD: iterations)
  // The last evaluation's metadata.epoch_num (or its eval_start's) as logged: an epoch, an epoch
  // fraction, or in some benchmarks samples (BERT) or tokens (GPT-3).
  std::optional<double> eval_epoch_num;
  // The log places no training step (ResNet, SSD, U-Net3D, BERT, R-GAT, DLRM time whole epochs or
  // evaluate at epoch fractions): the run is read by these figures and its evaluations alone.
  bool by_time_to_train = false;
};

struct ParsedLog {
  // Strictly ascending step. Empty only when the log gives its throughput as
  // a trainer figure (FlagPerf's summary without the trainer's own lines, the Trainer's closing
  // dict of a run shorter than logging_steps).
  std::vector<Iteration> iterations;
  std::optional<double> peak_memory_bytes;  // per device, the largest any rank reported
  std::string memory_source;                // what the number is ("max reserved (report_memory)")
  std::optional<TrainerAverage> trainer_average;
  std::optional<double> wall_s;     // start to end of the run, when the log says (MLLOG, Trainer)
  std::optional<MlperfRun> mlperf;  // an MLPerf log's result (mllog)
  std::vector<EvalPoint> evals;
  std::string eval_what;  // "MLPerf resnet eval_accuracy", "Trainer eval_loss"
  // What the evaluations measure where the log says (an MLPerf benchmark's quality metric);
  // nullopt: a validation loss.
  std::optional<EvalMetric> eval_metric;
  // The trainer's own MFU for the run (FlagPerf's summary), as a fraction. Per-record figures
  // (Iteration::mfu) are averaged where the timing window is known (rules/external_metrics.cc).
  std::optional<Fact> stated_mfu;
  // The trainer's own achieved FLOP/s per device (DeepSpeed's flops profiler: its whole-iteration
  // FLOPS per GPU at the profiled step, rules/logparse/deepspeed_flops_profile.h). Where the
  // records print their own (Iteration::flops_per_device_per_s), theirs win
  // (rules/external_metrics.cc).
  std::optional<Fact> stated_flops_per_device;
  // Facts by our names: mpe, lbs, gas, gbs, tp, pp, dp, devices, layers,
  // hidden, heads, parameters. Precision separately (a word).
  std::map<std::string, Fact> facts;
  std::string precision;  // "bf16", "fp16", "fp32", or "" when the log does not say
  int64_t precision_line = 0;
  int64_t lines = 0;               // lines read
  int64_t restarts = 0;            // times a resumed run replaced records
  std::string format;              // the format that read it (what `auto` recognised)
  std::vector<std::string> notes;  // how the log was read where it matters ("steps 2-10 derived")
};

using ParseFn = Result<ParsedLog> (*)(std::string_view text, std::string_view name);

struct LogParser {
  std::string_view name;  // the log_format value: "megatron"
  ParseFn parse;
  // Leading steps left out of the throughput average unless the BENCHFILE
  // says otherwise (excluded_warmup_steps): the convention of the suites that
  // use the format. A log with a TrainerAverage is timed by it instead.
  int64_t default_warmup_steps;
  std::string_view convention;  // why, for docs and messages
};

// nullptr for an unknown name.
const LogParser* FindLogParser(std::string_view name);
// "auto, deepspeed, flagperf, flagscale, litgpt, maxtext, megatron, mllog, nanotron, nemo,
// paddle, torchtitan, torchtune, trainer"
std::string LogParserNames();
// The same names, one an element.
std::vector<std::string> LogParserNameList();

// Which format a log is in, by the first line that only that format prints,
// in this order: FlagPerf's summary (it wraps another trainer's lines) or `[PerfLog]` events,
// :::MLLOG events, NeMo 2 ProgressPrinter lines, NeMo 1 training bars, Megatron iteration lines,
// PaddleNLP step lines, DeepSpeed's engine and timer lines, Trainer dicts, torchtitan's training
// lines, NeMo Automodel's step lines (these two after the others: a log another format recognises
// keeps it), then Nanotron's iteration lines, LitGPT's training lines, torchtune's metric lines and
// training bars, MaxText's step lines (the formats added last, so that a log an earlier release
// recognised keeps its format).
// nullopt when no line matches.
struct Detected {
  std::string_view format;  // a registry name
  int64_t line = 0;
  std::string_view what;  // "a Megatron iteration line"
};
std::optional<Detected> DetectLogFormat(std::string_view text);

// ", line 12 is a transformers Trainer log dict: set log_format = \"trainer\""
// when the log is in another format than `tried`, else "".
std::string OtherFormatHint(std::string_view text, std::string_view tried);

// The formats (each in its own file).
Result<ParsedLog> ParseMegatronLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseNemoLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseDeepSpeedLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseMllog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseTrainerLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParsePaddleLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseFlagPerfLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseTorchtitanLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseTorchtuneLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseNanotronLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseLitgptLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseMaxtextLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseAutoLog(std::string_view text, std::string_view name);

}  // namespace bm::logparse
