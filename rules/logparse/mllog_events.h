// One pass over an MLPerf `:::MLLOG` log: its events as ParseMllog (mllog.cc) needs
// them, before any step is numbered or timed. The facts the log states (global_batch_size,
// max_sequence_length, gradient_accumulation_steps) and its eval_accuracy values go straight
// into the ParsedLog; the rest waits here: the training statistics events, the blocks and
// evaluations with their positions, the time the log brackets as not training, and the counts
// the notes and errors name. What each event means is mllog.cc's header comment.
//
// Thread safety: a value type, one per log.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

struct MllogEvents {
  struct Raw {
    Iteration it;
    std::optional<double> step;  // metadata.step (else step_num) as logged (0 included)
    std::optional<double> samples_count;
    std::optional<double> own_ms;  // tracked_stats' train_step_time, in ms
    bool timing_in_s = false;      // NeMo 1's "train_step_timing in s" (GPT-3: step in tokens)
    bool tracked = false;          // a tracked_stats event, not train_loss
  };
  // A block's position: samples_count, or (NVIDIA's GPT-3) first_epoch_num[+epoch_count] in
  // tokens; mlperf_common also names the step.
  struct Block {
    double time_ms = 0;
    std::optional<double> samples, tokens;
    std::optional<double> step;  // mlperf_common names it; its samples_count is per block
    int64_t line = 0;
    std::optional<double> loss, lr;  // a block_stop's metadata.loss and lr (MaxDiffusion)
  };
  std::vector<Raw> raws;
  std::vector<std::pair<Block, Block>> blocks;  // start, stop
  std::optional<Block> open_block;
  // Where each eval_accuracy is: the enclosing eval_start's step (tinygrad's step_num) or
  // samples_count (the run's step count; AMD's eval_accuracy names the Lightning logger's 0-based
  // step x gbs), else its own.
  struct EvalAt {
    std::optional<double> step, samples, tokens;
    // The eval_accuracy event's own metadata.step (else step_num), as run_stop names its step.
    std::optional<double> named_step;
  };
  std::vector<EvalAt> eval_at;
  // When each evaluation began: its eval_start's time_ms, else the eval_accuracy's own.
  std::vector<std::optional<double>> eval_began;
  // Each eval_accuracy's metadata.metric ("" when it names none; Stable Diffusion's "FID" and
  // "CLIP").
  std::vector<std::string> eval_metrics;
  // Each value an eval_accuracy event gives a named metric, for the quality targets that ask two
  // metrics of one evaluation (Stable Diffusion's FID and CLIP: two events at one samples_count;
  // Mask R-CNN's BBOX and SEGM: one event's object): the metric, its value, and the evaluation's
  // position (samples_count, else its step, else the event's line).
  struct MetricValue {
    std::string metric;
    double value = 0;
    double position = 0;
  };
  std::vector<MetricValue> metric_values;
  // eval_accuracy events whose value is neither a number nor Mask R-CNN's object, the first's line.
  int64_t eval_not_number = 0, eval_not_number_line = 0;
  EvalAt open_eval_at;
  // The last eval_stop's evaluation, for an eval_accuracy printed after it (tinygrad's BERT).
  EvalAt closed_eval_at;
  std::optional<double> run_start, run_stop;
  // run_stop's metadata.status ("success", "aborted"; "" when it names none) and the lines.
  std::string run_status;
  int64_t run_start_line = 0, run_stop_line = 0;
  // The step run_stop names (metadata.step, else step_num: MaxDiffusion, NVIDIA's Stable
  // Diffusion, the LLM references), as logged.
  std::optional<double> run_stop_step;
  // Each block_stop that names a samples_count: its line, that count, the step it names
  // (mlperf_common and Megatron-Bridge's callbacks do) and its time_ms.
  struct BlockStopAt {
    int64_t line = 0;
    double samples = 0;
    std::optional<double> step, time_ms;
  };
  std::vector<BlockStopAt> block_stop_at;
  // epoch_stop events (retinanet, rgat, the tinygrad logs: training timed by whole epochs).
  int64_t epoch_stops = 0, epoch_stop_line = 0;
  // Each epoch_num's first epoch_start and last epoch_stop, time_ms.
  std::map<double, double> epoch_began, epoch_ended;
  // What the run names, the first of each: submission_benchmark, _org, _division, _platform,
  // train_samples and eval_samples (mllog.cc adds the rest of MLPerf's result).
  MlperfRun named;
  // The quality target the run's code logs (target_accuracy; newer references log it), the first,
  // and its line.
  std::optional<double> target_accuracy;
  int64_t target_line = 0;
  // Time the log brackets as not training: eval_start..eval_stop, and block_stop..the next
  // block_start (the blocks are the training between evaluations).
  std::vector<std::pair<double, double>> paused;
  std::optional<double> eval_open, between_blocks;
  int64_t events = 0, stray = 0, stray_line = 0, block_means = 0, block_means_line = 0;
  // Lines with ":::MLLOG {" that are no JSON object but name a key nothing here reads (garbled
  // mid-log), the first's line and key (NoteText: a garbled line's bytes may be no UTF-8).
  int64_t garbled = 0, garbled_line = 0;
  std::string garbled_key;
  // A train_step_time alone at a fractional "step": the run's mean at an epoch fraction (NVIDIA's
  // HugeCTR DLRM), its value and line.
  std::optional<double> epoch_mean_step_s;
  int64_t epoch_mean_line = 0;
  int64_t tracked = 0, block_stops = 0, epoch_blocks_line = 0;
  // Positions that NVIDIA's GPT-3 logs count in tokens: the blocks' first_epoch_num and
  // first_epoch_num + epoch_count, epoch_num, and "train_step_timing in s"'s step.
  std::vector<double> token_positions;
  // metadata.step of the last training tracked_stats event with no samples_count, and at each
  // eval_accuracy that the log places by samples_count, that step and those samples: where they
  // are equal, the steps count samples (NVIDIA's v5.0 NeMo MetricsLogger).
  std::optional<double> last_plain_step;
  std::vector<std::pair<double, double>> step_at_eval;  // (last_plain_step, samples_count)
  std::optional<double> peak_gib, init_checkpoint;
  int64_t peak_line = 0;
};

// Reads `text`'s events into `ev`, and the facts, the evaluations and log.lines into `log`;
// kCorrupt ("NAME:LINE: ...") for an :::MLLOG line that is not a JSON event, unless it is the
// last line (cut off) or names a key that nothing here reads (garbled; counted in `ev`).
Status ReadMllogEvents(std::string_view text, std::string_view name, ParsedLog& log,
                       MllogEvents& ev);

}  // namespace bm::logparse
