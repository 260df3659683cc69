// Megatron-LM's (and FlagScale's, a fork that keeps them) log lines, as
// megatron/training/training.py `training_log` and utils.py `report_memory`
// print them:
//
//    [2024-06-01 10:00:00] iteration       10/     100 | consumed samples:          640 |
//    elapsed time per iteration (ms): 812.4 | throughput per GPU (TFLOP/s/GPU): 402.1 |
//    learning rate: 1.500000E-04 | global batch size:    64 | lm loss: 7.812345E+00 |
//    loss scale: 65536.0 | grad norm: 2.345 | number of skipped iterations:   0 |
//    number of nan iterations:   0 |                                      (one line)
//   [Rank 0] (after 10 iterations) memory (MB) | allocated: 15123.5 | max allocated: 40211.2 |
//    reserved: 42000.0 | max reserved: 42000.0                            (one line)
//
// Megatron-Bridge (training/utils/train_utils.py `report_memory`) prints the memory in
// decimal GB, torch.cuda.memory_stats()' bytes / 1e9 to five significant digits:
//   [Rank 0] (after 1 iterations) memory (GB) | mem-allocated-gigabytes: 61.555 | ... |
//    mem-max-allocated-gigabytes: 78.383 | ... | mem-max-reserved-gigabytes: 80.487 |
//    mem-alloc-retires: 0 | mem-allocated-count: 404                      (one line)
//
// GPT-NeoX prints the same line with its loss as `lm_loss: 1.118665E+01 |`. Megatron-LM of July
// to October 2019 (pretrain_gpt2.py) and the forks that kept its line (THUDM's
// Chinese-Transformer-XL, GLM) print ` learning rate 6.300E-06 | lm loss 6.758929E+00 | loss scale
// 64.0 |` with no colons, `lm loss NAN` for an interval with a NaN loss (a NaN loss and one NaN
// iteration), and ` validation loss at iteration N | LM loss: x | LM PPL: y`.
// argonne-lcf/Megatron-DeepSpeed (training.py `training_log` from 981b7d98,
// April 2024; training_log.py later) prints it as `name=value` fields with
// underscore names: ` iteration=       2/  317892 | ... |
// elapsed_time_per_iteration_ms=16030.6 | learning_rate=0.000000 |
// global_batch_size=  256 | lm loss=11.208171 | loss_scale=65536.0 |
// actual_seqlen= 4096 | number_of_skipped_iterations=  0 | ... |
// tokens_per_gpu_per_second_tgs=8176.383 | ...` (its later lines also `grad_norm=6.363 |`).
// BigScience Megatron-DeepSpeed (training.py `training_log` from 4c2aea04,
// "Fix throughput unit", January 2022) and its forks print the time in
// seconds, `elapsed time per iteration (s): 7.2310 | ... | samples per second:
// 13.276 |` (96 / 7.2310 = 13.276): read as ms x 1000.
// ms-swift's Megatron trainer (swift/megatron/trainers/base.py `training_log`, July 2025 to
// its v4 rewrite of February 2026) adds `memory(GiB): 21.54 | elapsed time: 10m 7s | remaining
// time: ... |` after the elapsed time: torch.cuda.max_memory_reserved() / 2^30 of the printing
// (last) rank, to two decimals; read as that rank's peak. That trainer also prints iteration 1
// (`iteration % log_interval == 0 or iteration == 1`, from 0e97eaa, June 2025) and, unlike core
// 0.16 below, resets its timer and sums there: with --log-interval 5 the line at 5 averages
// iterations 2-5, so a first line past 1 spans the iterations after 1 (the line at 1 printed
// before it, not in the log) and no iteration is taken out.
// Primus (AMD's fork, its trainer.py `training_log`) prints the elapsed time
// and its throughputs as `current/running mean` pairs
// (`elapsed time per iteration (ms): 13372.8/13364.7`): the first is read. Its
// `hip mem usage/free/total/usage_ratio: 153.81GB/...` (training_log patch
// MemoryStatsExtension: torch.cuda.mem_get_info's total - free, / 2^30) is the device's memory
// in use at the line, not a peak: the largest is read as the memory, its source saying so; where
// the line also prints rocm-smi's figures (`| rank-3 rocm max mem usage/usage_ratio:
// 172.64GB/59.95%`, the largest used memory of all ranks; 2026 logs), that one where larger
// (the printing rank is not the fullest: PP stages, uneven experts). Its
// `tokens per GPU (tokens/s/GPU): 9801.4/9807.3` (`tokens/s/GPU inst/harmonic mean:` from July
// 2026) is read as the printed per-device token rate (the first).
// MindSpeed-LLM's FSDP2 trainer (mindspeed_llm/fsdp2/utils/train_monitor.py `TrainMonitor`, from
// March 2026; Ascend NPUs) prints `INFO [ts] >>  iteration 2/ 2000 | consumed samples: 16 |
// consumed tokens: 1357 | elapsed time per iteration (ms): 1331.74 | [tokens/s: x | mfu: y |]
// learning rate: ... | global batch size: 8 | lm loss: ... | [mtp loss: ... |] grad norm: ... |
// max_memory_allocated(GB): 19.07 | max_memory_reserved(GB): 22.43 |`, no skipped counts. Its
// `tokens/s` is all ranks' tokens since the last line over that time; its reserved figure is
// torch's max_memory_reserved() / 2^30, the largest of all ranks (all_reduce max): the peak.
// Megatron-DeepSpeed and GPT-NeoX run on DeepSpeed's engine, whose ThroughputTimer lines
// (`epoch=0/micro_step=34/global_step=34, RunningAvgSamplesPerSec=..., MaxMemAllocated=63.31GB`,
// torch's max_memory_allocated() / 2^30) sit between the iteration lines: where no
// report_memory line gives the peak, their largest MaxMemAllocated is the memory (allocated, not
// reserved: a lower bound, as the source says).
// Megatron-DeepSpeed's iteration lines also print `TFLOPs: 125.18 |` (ALCF's `TFLOPs=72.91 |`):
// throughput_calculator's FLOPs per iteration (24 x f x B x s x L x h^2 x (1 + s/6h + V/16Lh), f =
// 4 with activation recomputation, else 3) over the seconds per iteration x world size: the
// record's achieved FLOP/s per device. With `flops_profiler` in its ds_config, DeepSpeed's engine
// prints its summary too (deepspeed_flops_profile.h, read as the deepspeed parser reads it): its
// `FLOPS per GPU` is one micro-batch on rank 0, its FLOPs those the module hooks see, and it misses
// most of a Megatron model's (deepspeedai/DeepSpeed#2565: 13.36 TFLOPS against the lines' 125.18,
// while both give the same samples/s); the lines' figure, over the timed steps, wins
// (rules/external_metrics.cc).
// Megatron-LM's `throughput per GPU (TFLOP/s/GPU): 402.1 |` (--log-throughput, from 2748e7c,
// November 2023; FlagScale, Megatron-Bridge and Primus print it too) is the same kind of figure:
// num_floating_point_operations(args, global batch) / (the interval's mean seconds per
// iteration x world size) / 1e12, model FLOPs (forward and both backward GEMMs, no
// recomputation). Primus prints it as a `current/mean` pair (the first read) and from July 2026
// (868d32e) as `compute per GPU (TFLOP/s/GPU): 615.5 (avg 612.8)` (the first read; a line with
// both labels keeps `throughput per GPU`). Core 0.16's first interval (below) gets the same FLOPs
// over the time of the iterations after the first. Megatron-Bridge's figure counts
// cfg.model.seq_length tokens a sample: where its config print (megatron_bridge_config.h) states
// a model.seq_length other than the training length, the records' figures are dropped, with a
// note. GPT-NeoX's `approx flops per GPU: 112.9TFLOPS |` (megatron/logging.py get_actual_flops,
// human_readable_flops: a decimal prefix glued on, SiValue) counts, from 5f36401 (September 2023),
// Megatron-DeepSpeed's formula with f = 4 under checkpoint_activations: hardware FLOPs, the
// recomputed forward included (before it, 6 x parameters + 60 x s x h x L a token). A figure that
// does not parse is an error naming the line; one not above 0 is left out of
// mfu.stated_flops_per_device with a note (rules/external_metrics.cc).
// `consumed tokens` (also Megatron-DeepSpeed's and ModelLink's) counts all ranks' tokens since
// the run's start: where a line prints no token rate, the growth over its steps gives one (not
// across an excerpt's elision mark, nor a lone line's whole count after a batch-size ramp-up).
// A line without `global batch size` (a fork's, or one a README cuts after its throughput)
// gets its samples per step from `consumed samples`: the growth since the previous line over
// the steps between (a run's first line: its consumed samples over its step, when that equals
// the next line's batch), with a note.
// Evaluations: ` validation loss at iteration N | lm loss value: x | lm loss PPL: ... |` gives
// an eval at N (the first validation set's, when there are several; the test set's and a
// repeat at the same iteration after training left out); so do GPT-NeoX's ` validation results
// at iteration N | lm_loss value: x | lm_loss_ppl value: ... |` and MindSpeed-MM's FSDP
// trainer's ` ** validation after iteration N ** | validation steps: S | validation loss: x |`.
// A terminal copy's hard-wrapped iteration line (or report_memory line) is read joined
// (wrapped_lines.h) when the lines after it complete it: up to `number of nan iterations`
// (`max reserved:`). A `report_memory` line of zeros (FlagScale on Moore Threads GPUs: torch.cuda's
// allocator does not see the device's memory) is no figure: a note says so.
// A complete iteration line with none of the fields below is an error, not an
// empty record (NeMo 2's ProgressPrinter lines look alike: log_format "nemo").
// A line's numbers are averages over the --log-interval iterations since the
// previous line (elapsed time, losses over the iterations not skipped), so a
// record's span is the gap to the previous line, except where an excerpt's elision mark
// (`...`, `[...]`: a README or notes page left lines out) comes between them: then the record
// spans the log interval the unmarked gaps show (a note says so). An interval whose
// iterations were all skipped (fp16 overflow) prints no loss, or, since
// Megatron-LM b09ee64 (March 2026), `lm loss: 0.000000E+00`: neither is a
// loss, and the record gets none (its skipped count says why). A line that
// prints no loss although some of its iterations were not skipped is a NaN
// loss: training_log prints a loss only `if avg >= 0.0` (`> 0.0` before
// b09ee64), and a NaN average is not, as when a bf16 run, which has no loss
// scaler to skip the step, meets a NaN loss (`grad norm: nan`, `number of
// skipped iterations: 0`; Megatron counts NaN iterations only among the
// skipped ones). Such a record gets a NaN loss and one more NaN iteration (at
// least one of its iterations had one), with a note, when the line prints
// the skipped count as Megatron-LM does (else the line is a fork's, and
// nothing is known about its loss). Megatron-DeepSpeed's iteration lines print no skipped
// steps for its DeepSpeed pipeline engine: where the engine's `step=N, skipped=K` lines bracket a
// record and count more, the record takes their count, with a note (deepspeed_progress.h).
// Megatron-LM core 0.16 (2dc8873, January 2026) also prints the run's first
// iteration and does not reset its timers and sums there, so with
// --log-interval 10 the lines are at 1, 10, 20, ... and the line at 10
// averages iterations 1-10. Recognised by a first record whose step is not a
// multiple of the interval the later lines keep, followed by one that is,
// less than an interval on: that record is turned into the iterations after
// the first one by subtracting the first (time, loss over the iterations not
// skipped, skipped and NaN counts), and a note says so. Not where taking the first out would
// leave the others no time (the line cannot average it in), nor for a log of two lines at 1 and
// 2, which is --log-interval 1's as likely as not (MindSpeed-MM's FSDP docs print just those),
// nor for a line a whole interval or more after the line before it (a README's pick of lines: a
// resumed run's first line comes within an interval of its previous run's last), nor where an
// excerpt's elision mark (`...`) comes between the two lines.
// Start-up prints supply facts: the argument block (`  seq_length ..... 4096`,
// micro/global batch size, the parallel sizes, world size, layers, hidden
// size, heads, bf16 / fp16); Megatron-DeepSpeed's `actual seqlen` field;
// ` > number of parameters on (tensor, pipeline) model parallel rank (0, 0): N`
// or, from July 2026, `(tensor, gtp_weight_remat, pipeline) ... (0, 0, 0): N`, or before October
// 2020 ` > number of parameters on model parallel rank 1: N`
// (summed over the distinct rank tuples: the model's parameter count, with a
// tied embedding counted once per pipeline end); without those lines, or where they leave out
// some of the tensor or pipeline ranks the argument block states (a launcher showing rank 0's
// output only: Primus's `torchrun --local-ranks-filter 0` prints stage 0's count alone), or
// where expert_model_parallel_size > 1 (only data-parallel rank 0 prints, whose experts are one
// expert-parallel shard: DeepSeek-V2-Lite under EP8 prints 3.23e9 of its 15.82e9),
// `Total number of parameters in billions: 6.44` (two decimals). Megatron-Bridge prints no
// argument block but its ConfigContainer (megatron_bridge_config.h): its batch sizes, training
// sequence length (dataset's, never model.seq_length), TP/PP, layers and precision are facts
// where the argument block did not state them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <span>

#include "rules/logparse/deepspeed_flops_profile.h"
#include "rules/logparse/deepspeed_progress.h"
#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/megatron_bridge_config.h"
#include "rules/logparse/megatron_lines.h"
#include "rules/logparse/megatron_spans.h"
#include "rules/logparse/records_mfu.h"
#include "rules/logparse/wrapped_lines.h"

namespace bm::logparse {
namespace {

// After " iteration N/M |" (or ALCF's " iteration=  N/  M |"): the step and
// where the fields start; npos if the line is not an iteration line. The step is -1 when N is no
// step (a fraction, a negative number, nan, inf, beyond 2^53: WholeCount).
size_t IterationFields(std::string_view line, int64_t* step) {
  size_t from = 0;
  while (true) {
    size_t at = line.find("iteration", from);
    if (at == std::string_view::npos) return std::string_view::npos;
    from = at + 1;
    const size_t after_word = at + 9;
    if (after_word >= line.size() || (line[after_word] != ' ' && line[after_word] != '=')) continue;
    size_t end = 0;
    std::string_view rest = line.substr(after_word + 1);
    std::optional<double> n = LeadingNumber(rest, &end);
    if (!n || end >= rest.size() || rest[end] != '/') continue;
    std::string_view after = rest.substr(end + 1);
    size_t end2 = 0;
    if (!LeadingNumber(after, &end2)) continue;
    size_t bar = after.find_first_not_of(' ', end2);
    if (bar == std::string_view::npos || after[bar] != '|') continue;
    *step = WholeCount(*n).value_or(-1);
    return static_cast<size_t>(after.data() - line.data()) + bar + 1;
  }
}

struct FieldTarget {
  std::string_view key;
  std::optional<double> Iteration::*number;  // or nullptr for the counters
  int64_t Iteration::*count;
  double scale = 1;         // what the printed number is multiplied by (seconds to ms)
  std::string_view unit{};  // printed after the number ("/s")
  // The unit follows an SI prefix (GPT-NeoX's `112.9TFLOPS`: SiValue in line_scan.h); a bare
  // number is in the unit itself.
  bool prefixed = false;
};

const FieldTarget kFields[] = {
    {"elapsed time per iteration (ms)", &Iteration::ms, nullptr},
    // BigScience Megatron-DeepSpeed from 4c2aea04 (January 2022) and its forks print seconds.
    {"elapsed time per iteration (s)", &Iteration::ms, nullptr, 1000},
    {"learning rate", &Iteration::lr, nullptr},
    {"global batch size", &Iteration::samples, nullptr},
    {"gloabl batch size", &Iteration::samples, nullptr},  // ModelLink's spelling
    {"lm loss", &Iteration::loss, nullptr},
    {"lm_loss", &Iteration::loss, nullptr},  // GPT-NeoX's spelling
    {"loss scale", &Iteration::loss_scale, nullptr},
    {"grad norm", &Iteration::grad_norm, nullptr},
    {"number of skipped iterations", nullptr, &Iteration::skipped},
    {"number of nan iterations", nullptr, &Iteration::nan},
    // Primus: seq_length x global batch / elapsed / world size, `current/mean` (the mean harmonic
    // from July 2026's `tokens/s/GPU inst/harmonic mean`).
    {"tokens per GPU (tokens/s/GPU)", &Iteration::tokens_per_device_per_s, nullptr},
    {"tokens/s/GPU inst/harmonic mean", &Iteration::tokens_per_device_per_s, nullptr},
    // Forks that add batch x seq_length / elapsed / world size (swiss-ai's, 2025; a
    // Pai-Megatron-Patch training.py patched for "TGS").
    {"tokens/sec/gpu", &Iteration::tokens_per_device_per_s, nullptr},
    // Megatron-DeepSpeed (microsoft's, from 2023): tokens / elapsed / world size.
    {"tokens per gpu per second (tgs)", &Iteration::tokens_per_device_per_s, nullptr},
    // argonne-lcf's fork before its `name=value` lines (early 2024): the same, no space.
    {"tokens per gpu per second(tgs)", &Iteration::tokens_per_device_per_s, nullptr},
    // ModelLink on DeepLink (2024): the same, printed last and without its ` |` (see below).
    {"tgs (tokens/gpu/second)", &Iteration::tokens_per_device_per_s, nullptr},
    // MindSpeed-LLM's FSDP2 TrainMonitor (--log_throughput): all ranks' tokens since the last
    // line over its elapsed time.
    {"tokens/s", &Iteration::tokens_per_s, nullptr},
    // FlagScale's fork on Moore Threads GPUs (2024): `chip_throughput: 1196.22 /s ` (tokens /
    // elapsed / world size), its ` |` missing before `learning rate`.
    {"chip_throughput", &Iteration::tokens_per_device_per_s, nullptr, 1, "/s"},
    // Megatron-DeepSpeed (megatron/utils.py throughput_calculator; BigScience's fork, from its
    // PR 210): its FLOPs per iteration (Narayanan et al.'s equation 3, x 4/3 with activation
    // recomputation) / (seconds per iteration x world size) / 1e12; forks that print the field
    // (ModelLink's DeepLink port, vendors' ports) keep the division by time and devices.
    {"TFLOPs", &Iteration::flops_per_device_per_s, nullptr, 1e12},
    // Megatron-LM's --log-throughput (from 2748e7c, November 2023; FlagScale, Megatron-Bridge,
    // Primus keep it): num_floating_point_operations(args, global batch) / (the interval's mean
    // seconds per iteration x world size) / 1e12, model FLOPs (forward and both backward GEMMs,
    // no recomputation). Primus prints `current/mean` (the first read).
    {"throughput per GPU (TFLOP/s/GPU)", &Iteration::flops_per_device_per_s, nullptr, 1e12},
    // GPT-NeoX (megatron/logging.py get_actual_flops, human_readable_flops: `112.9TFLOPS`): with
    // checkpoint_activations its FLOPs count the recomputed forward (hardware FLOPs, from
    // 5f36401, September 2023; before, 6 x parameters + 60 x s x h x L a token).
    {"approx flops per GPU", &Iteration::flops_per_device_per_s, nullptr, 1, "FLOPS", true},
};

// Primus's label for Megatron's `throughput per GPU (TFLOP/s/GPU)` (its training_log patch, from
// 868d32e, July 2026): `compute per GPU (TFLOP/s/GPU): 615.5 (avg 615.5)`, the current figure
// first. Read where the line prints no `throughput per GPU`.
constexpr std::string_view kPrimusCompute = "compute per GPU (TFLOP/s/GPU)";

// ALCF Megatron-DeepSpeed's `name=value` fields ("lm loss" keeps its space).
const FieldTarget kKeyValueFields[] = {
    {"elapsed_time_per_iteration_ms", &Iteration::ms, nullptr},
    {"learning_rate", &Iteration::lr, nullptr},
    {"global_batch_size", &Iteration::samples, nullptr},
    {"lm loss", &Iteration::loss, nullptr},
    {"lm_loss", &Iteration::loss, nullptr},
    {"loss_scale", &Iteration::loss_scale, nullptr},
    {"grad_norm", &Iteration::grad_norm, nullptr},
    {"number_of_skipped_iterations", nullptr, &Iteration::skipped},
    {"number_of_nan_iterations", nullptr, &Iteration::nan},
    // The same tokens / elapsed / world size as `tokens per gpu per second (tgs)` above.
    {"tokens_per_gpu_per_second_tgs", &Iteration::tokens_per_device_per_s, nullptr},
    // Its `TFLOPs: x |` above, as `TFLOPs=x |`.
    {"TFLOPs", &Iteration::flops_per_device_per_s, nullptr, 1e12},
};

// Megatron-LM of July to October 2019 (pretrain_gpt2.py, abe36e2 to 73af129) and the forks that
// kept its line (THUDM's Chinese-Transformer-XL, GLM): ` learning rate 6.300E-06 | lm loss
// 6.758929E+00 | loss scale 64.0 |`, the name and value with no colon between.
const FieldTarget kSpacedFields[] = {
    {"learning rate", &Iteration::lr, nullptr},
    {"lm loss", &Iteration::loss, nullptr},
    {"loss scale", &Iteration::loss_scale, nullptr},
};

// "13372.8/13364.7" (Primus: this iteration's, then a running mean) -> the first; so for
// "615.5 (avg 615.5)" (Primus's `compute per GPU` from July 2026).
std::optional<double> FieldNumber(std::string_view text) {
  if (std::optional<double> v = ParseNumber(text)) return v;
  constexpr std::string_view kAvg = " (avg ";
  if (size_t avg = text.find(kAvg); avg != std::string_view::npos && text.ends_with(')')) {
    std::string_view mean = text.substr(avg + kAvg.size());
    if (!ParseNumber(mean.substr(0, mean.size() - 1))) return std::nullopt;
    return ParseNumber(text.substr(0, avg));
  }
  size_t slash = text.find('/');
  if (slash == std::string_view::npos || !ParseNumber(text.substr(slash + 1))) return std::nullopt;
  return ParseNumber(text.substr(0, slash));
}

// *known: how many fields it read.
// The known field whose key ends `key` after a space, where `key` holds another field's `name:
// value` before it (a fork that prints `chip_throughput: 1196.22 /s  learning rate: x |`, no `|`
// between): where that key starts in `key`, npos if none.
size_t GluedKey(std::string_view key, std::span<const FieldTarget> table) {
  if (key.find(':') == std::string_view::npos) return std::string_view::npos;
  for (const FieldTarget& f : table) {
    if (key.size() > f.key.size() && key.ends_with(f.key) &&
        key[key.size() - f.key.size() - 1] == ' ')
      return key.size() - f.key.size();
  }
  return std::string_view::npos;
}

// *known: how many fields it read.
Result<Iteration> ParseIterationLine(std::string_view line, size_t fields, int64_t step,
                                     std::string_view name, int64_t line_no, int* known) {
  Iteration it;
  it.step = step;
  it.line = line_no;
  *known = 0;
  std::optional<double> plain_loss;  // a field named just "loss" (some forks)
  std::optional<double> compute;     // Primus's `compute per GPU (TFLOP/s/GPU)`
  auto read_field = [&](std::string_view field, auto&& self) -> Status {
    // `name: value`, else ALCF's `name=value`, else 2019's `name value`.
    size_t sep = field.rfind(':');
    std::span<const FieldTarget> table = kFields;
    if (sep == std::string_view::npos) {
      sep = field.find('=');
      table = kKeyValueFields;
    }
    if (sep == std::string_view::npos) {
      const std::string_view spaced = Trim(field);
      for (const FieldTarget& f : kSpacedFields) {
        if (!spaced.starts_with(f.key) || spaced.size() <= f.key.size() ||
            spaced[f.key.size()] != ' ')
          continue;
        if (std::optional<double> v = ParseNumber(spaced.substr(f.key.size()))) {
          it.*(f.number) = *v;
          // `lm loss NAN`: the interval's average is NaN, so at least one of its iterations
          // had a NaN loss (the 2019 line prints no NaN count).
          if (f.number == &Iteration::loss && std::isnan(*v)) it.nan = 1;
          ++*known;
        }
        break;
      }
      return Status::Ok();
    }
    std::string_view key = Trim(field.substr(0, sep));
    std::string_view text = Trim(field.substr(sep + 1));
    const FieldTarget* target = nullptr;
    for (const FieldTarget& f : table)
      if (key == f.key) target = &f;
    const bool primus_compute = target == nullptr && key == kPrimusCompute;
    if (target == nullptr && key != "loss" && !primus_compute) {
      size_t glued = GluedKey(key, table);
      if (glued == std::string_view::npos) return Status::Ok();
      const size_t at = static_cast<size_t>(key.data() - field.data()) + glued;
      BM_TRY(self(field.substr(0, at), self));
      return self(field.substr(at), self);
    }
    ++*known;
    const bool prefixed = target != nullptr && target->prefixed;
    if (target != nullptr && !prefixed && !target->unit.empty() && text.ends_with(target->unit))
      text = Trim(text.substr(0, text.size() - target->unit.size()));
    std::optional<double> v = prefixed ? SiValue(text, target->unit) : FieldNumber(text);
    if (!v && prefixed) v = ParseNumber(text);  // below 1 kilo: no prefix, no unit (`0.0`)
    if (!v) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is '{}', not a number", name, line_no, key,
                    text);
    }
    if (primus_compute) {
      compute = *v * 1e12;
    } else if (target == nullptr) {
      plain_loss = v;
    } else if (target->number) {
      it.*(target->number) = *v * target->scale;
    } else if (std::optional<int64_t> count = WholeCount(*v)) {
      it.*(target->count) = *count;
    } else {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: '{}' is '{}', not a count", name, line_no, key,
                    text);
    }
    return Status::Ok();
  };
  size_t pos = fields;
  while (true) {
    size_t bar = line.find('|', pos);
    if (bar == std::string_view::npos) break;
    BM_TRY(read_field(line.substr(pos, bar - pos), read_field));
    pos = bar + 1;
  }
  // A last field without its ` |` is a line cut off, and ignored, except where the timers'
  // `time (ms)` follows it on the same line (ModelLink on DeepLink, 2024: `... | TFLOPs: 148.25 |
  // tgs (tokens/gpu/second): 353.02 time (ms)`): then it is whole.
  constexpr std::string_view kTimers = " time (ms)";
  if (std::string_view rest = line.substr(pos); rest.ends_with(kTimers))
    BM_TRY(read_field(rest.substr(0, rest.size() - kTimers.size()), read_field));
  if (!it.loss) it.loss = plain_loss;
  if (!it.flops_per_device_per_s) it.flops_per_device_per_s = compute;
  return it;
}

// Whether the line after `line` (a piece of `text`) holds a field the parser reads: `line` is
// the head of an iteration line carried over several lines.
bool FieldsGoOnNextLine(std::string_view text, std::string_view line, int64_t step,
                        std::string_view name, int64_t no) {
  const std::less<const char*> before;
  if (before(line.data(), text.data()) ||
      !before(line.data() + line.size(), text.data() + text.size()))
    return false;  // a joined copy, or the last line
  std::string_view next = text.substr(line.data() + line.size() - text.data());
  next.remove_prefix(next.starts_with("\r\n") ? 2 : 1);  // a Windows-edited log's CRLF too
  next = next.substr(0, next.find('\n'));
  if (next.ends_with('\r')) next.remove_suffix(1);
  if (IsMegatronIterationLine(next)) return false;  // another record, not a continuation
  int known = 0;
  return ParseIterationLine(next, 0, step, name, no + 1, &known).ok() && known > 0;
}

struct ArgFact {
  std::string_view arg;
  const char* fact;
};
constexpr ArgFact kArgs[] = {
    {"seq_length", "mpe"},
    {"micro_batch_size", "lbs"},
    {"global_batch_size", "gbs"},
    {"tensor_model_parallel_size", "tp"},
    {"pipeline_model_parallel_size", "pp"},
    {"data_parallel_size", "dp"},
    {"world_size", "devices"},
    {"num_layers", "layers"},
    {"hidden_size", "hidden"},
    {"num_attention_heads", "heads"},
};

}  // namespace

bool IsMegatronIterationLine(std::string_view line) {
  int64_t step = 0;
  return IterationFields(line, &step) != std::string_view::npos;
}

Result<ParsedLog> ParseMegatronLog(std::string_view text, std::string_view name) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  ParsedLog log;
  log.format = "megatron";
  Status error = Status::Ok();
  std::set<std::vector<int>> param_ranks;
  std::optional<Fact> billions;  // "Total number of parameters in billions: 6.44"
  double parameters = 0;
  int64_t parameters_line = 0;
  std::optional<bool> bf16, fp16;
  std::optional<double> expert_parallel;  // expert_model_parallel_size: the experts' shards
  int64_t precision_line = 0;
  double peak_bytes = -1;
  IterationLineExtras extras;    // consumed samples and tokens, skipped counts, ms-swift's lines
  int64_t zero_memory_line = 0;  // the first report_memory line that prints 0
  std::optional<std::string> eval_set;  // the first validation set's name ("" for the only one)
  BridgeConfigReader bridge_config;     // Megatron-Bridge's ConfigContainer print
  bool elided = false;                  // an elision mark since the last iteration line
  DeepSpeedSkipCounts deepspeed_skips;  // Megatron-DeepSpeed's engine `step=N, skipped=K` lines
  double deepspeed_peak_gib = -1;       // its ThroughputTimer's largest MaxMemAllocated
  FlopsProfileReader profile;           // its flops profiler's summary (deepspeed_flops_profile.h)
  auto read_line = [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    if (IsElisionMark(line)) {
      elided = true;
      return;
    }
    if (line.find("MaxMemAllocated=") != std::string_view::npos) {  // DeepSpeed's timer line
      if (std::optional<double> gib = NumberAfter(line, "MaxMemAllocated", "="))
        deepspeed_peak_gib = std::max(deepspeed_peak_gib, *gib);
      return;
    }
    if (bridge_config.Read(line, no) || deepspeed_skips.Read(line, no)) return;
    // A line of DeepSpeed's flops profiler summary is no other record (an iteration line never
    // is one of its fields).
    if (!IsMegatronIterationLine(line)) {
      Result<bool> summary = profile.Read(line, no, name);
      if (!summary.ok()) {
        error = summary.status();
        return;
      }
      if (*summary) return;
    }
    if (std::optional<EvalLine> e = ReadEvalLine(line)) {
      if (!eval_set) eval_set = e->set;
      const bool repeat = !log.evals.empty() && log.evals.back().step == e->step;
      if (e->set == *eval_set && !repeat) log.evals.push_back({e->step, e->value, no});
      log.eval_what = "Megatron validation" + *eval_set + " loss (the first loss's value)";
      return;
    }
    int64_t step = 0;
    if (size_t fields = IterationFields(line, &step); fields != std::string_view::npos) {
      if (step < 0) {
        std::string_view head = line.substr(0, fields);
        head.remove_prefix(head.rfind("iteration"));
        error = Errorf(ErrorCode::kCorrupt,
                       "{}:{}: '{}' names no step (a whole number from 0 to 2^53)", name, no, head);
        return;
      }
      int known = 0;
      Result<Iteration> it = ParseIterationLine(line, fields, step, name, no, &known);
      if (!it.ok()) {
        error = it.status();
        return;
      }
      if (known == 0) {
        // Only a last line cut off before its first field read gives a bare record.
        const bool cut_last =
            line.data() + line.size() == text.data() + text.size() && !Trim(line).ends_with('|');
        if (IsNemoProgressLine(line)) {
          error = Errorf(ErrorCode::kCorrupt,
                         "{}:{}: a NeMo 2 ProgressPrinter line ('Training epoch E, iteration "
                         "N/M | ... | global_step: S | reduced_train_loss: x | ...'), not a "
                         "Megatron iteration line: set log_format = \"nemo\" (or \"auto\")",
                         name, no);
          return;
        }
        if (!cut_last && FieldsGoOnNextLine(text, line, step, name, no)) {
          error = Errorf(ErrorCode::kCorrupt,
                         "{}:{}: an iteration line whose fields go on at the next line, and the "
                         "lines after it never reach Megatron's last field ('number of nan "
                         "iterations |'): a line re-typed or cut over several lines (a README's "
                         "`| ... |`?), not read",
                         name, no);
          return;
        }
        if (!cut_last) {
          // A last field without its closing ` |` is not read (a line cut off): say so.
          const std::string_view last = Trim(line.substr(line.rfind('|') + 1));
          const std::string cut =
              last.find(':') == std::string_view::npos
                  ? std::string()
                  : fmt::format(
                        "; its last field, '{}', has no closing ' |' (a line cut off), "
                        "and a cut-off field is not read",
                        last);
          error = Errorf(ErrorCode::kCorrupt,
                         "{}:{}: an iteration line without any field the megatron parser reads "
                         "(elapsed time per iteration (ms), lm loss, learning rate, global batch "
                         "size, ...){}",
                         name, no, cut);
          return;
        }
      }
      if (line.find("number of skipped iterations:") != std::string_view::npos)
        extras.counted_lines.insert(no);
      if (elided) extras.after_elision.insert(no);
      elided = false;
      if (std::optional<double> c = MemoryField(line, "consumed samples:"))
        extras.consumed_samples[no] = *c;
      if (std::optional<double> c = MemoryField(line, "consumed tokens:"))
        extras.consumed_tokens[no] = *c;
      if (std::optional<double> gib = MemoryField(line, "memory(GiB):")) {  // ms-swift's
        extras.swift = true;
        if (*gib * kGiB > peak_bytes) {
          peak_bytes = *gib * kGiB;
          log.memory_source = "max reserved (ms-swift training_log memory(GiB))";
        }
      }
      if (std::optional<double> gib = MemoryField(line, "max_memory_reserved(GB):");
          gib && *gib * kGiB > peak_bytes) {  // MindSpeed-LLM's FSDP2 TrainMonitor
        peak_bytes = *gib * kGiB;
        log.memory_source =
            "max reserved (MindSpeed-LLM FSDP2 TrainMonitor max_memory_reserved(GB), the largest "
            "of all ranks)";
      }
      if (std::optional<MemoryPeak> used = PrimusUsedMemory(line);
          used && used->bytes > peak_bytes) {
        peak_bytes = used->bytes;
        log.memory_source = used->source;
      }
      if (std::optional<double> seqlen = MemoryField(line, "actual seqlen:"))
        SetFact(log, "mpe", *seqlen, no);  // Megatron-DeepSpeed
      else if (std::optional<double> alcf = MemoryField(line, "actual_seqlen="))
        SetFact(log, "mpe", *alcf, no);  // its `name=value` lines
      AddIteration(log.iterations, *it, &log.restarts);
      return;
    }
    if (line.find("memory (MB)") != std::string_view::npos ||
        line.find("memory (GB)") != std::string_view::npos) {
      std::optional<MemoryPeak> peak = MemoryReport(line);
      if (peak && peak->bytes <= 0 && !zero_memory_line) zero_memory_line = no;
      if (peak && peak->bytes > 0 && peak->bytes > peak_bytes) {
        peak_bytes = peak->bytes;
        log.memory_source = peak->source;
      }
      return;
    }
    std::vector<int> rank;
    double count = 0;
    if (ParameterLine(line, &rank, &count)) {
      if (param_ranks.insert(rank).second) parameters += count;
      parameters_line = parameters_line ? parameters_line : no;
      return;
    }
    constexpr std::string_view kBillions = "Total number of parameters in billions:";
    if (size_t at = line.find(kBillions); at != std::string_view::npos && !billions) {
      if (std::optional<double> b = ParseNumber(line.substr(at + kBillions.size())))
        billions = Fact{*b * 1e9, no};
      return;
    }
    if (std::optional<std::string_view> v = DottedArg(line, "expert_model_parallel_size")) {
      expert_parallel = ParseNumber(*v);
      return;
    }
    for (const ArgFact& a : kArgs) {
      if (std::optional<std::string_view> v = DottedArg(line, a.arg)) {
        if (std::optional<double> n = ParseNumber(*v)) SetFact(log, a.fact, *n, no);
        return;
      }
    }
    for (auto [arg, flag] : {std::pair{"bf16", &bf16}, std::pair{"fp16", &fp16}}) {
      if (std::optional<std::string_view> v = DottedArg(line, arg); v && !flag->has_value()) {
        *flag = *v == "True";
        precision_line = precision_line ? precision_line : no;
      }
    }
  };
  // A terminal copy's hard-wrapped iteration and memory lines are read joined.
  auto completion = [](std::string_view l) -> std::string_view {
    if (IsMegatronIterationLine(l) && l.find("number_of_nan_iterations") == std::string_view::npos)
      return "number of nan iterations";
    return l.find("memory (MB)") != std::string_view::npos ? "max reserved:" : "";
  };
  auto starts_another = [](std::string_view l) {
    std::string_view t = Trim(l);
    return IsMegatronIterationLine(l) || l.find("memory (MB)") != std::string_view::npos ||
           l.find("memory (GB)") != std::string_view::npos || t.starts_with('[') ||
           t.starts_with("time (ms)");
  };
  bool failed = false;
  const UnwrappedRead read = ForEachUnwrappedLine(
      text, completion, starts_another,
      [&](std::string_view line, int64_t no) {
        read_line(line, no);
        failed = !error.ok();
      },
      &failed);
  log.lines = read.lines;
  BM_TRY(error);
  if (read.joined > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} iteration or memory line(s) hard-wrapped over several lines (a terminal "
        "copy) read joined",
        name, read.first_joined, read.joined));
  }
  if (log.iterations.empty()) {
    // Megatron-Bridge's `Step Time : 11.65s GPU utilization: ...` (train_utils.py training_log)
    // is print_rank_0's, the iteration line print_rank_last's: rank 0's output alone has no
    // iteration line when the pipeline has more than one stage.
    std::string step_time;
    ForEachLine(text, [&](std::string_view line, int64_t no) {
      if (step_time.empty() && line.find("Step Time : ") != std::string_view::npos &&
          line.find(" GPU utilization: ") != std::string_view::npos) {
        step_time = fmt::format(
            "; line {} is Megatron-Bridge's 'Step Time : ...' line, which gives no step or loss: "
            "rank 0 prints it, the iteration lines come from the last rank (the last pipeline "
            "stage): give that rank's output",
            no);
      }
    });
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no Megatron iteration lines (' iteration N/M | ... |') in {} lines{}{}",
                  name, log.lines, step_time, OtherFormatHint(text, "megatron"));
  }
  SpanMegatronRecords(log, extras, name);
  deepspeed_skips.Apply(name, log);  // the steps its pipeline engine skipped
  if (peak_bytes >= 0) {
    log.peak_memory_bytes = peak_bytes;
  } else if (deepspeed_peak_gib >= 0) {  // Megatron-DeepSpeed, GPT-NeoX: no report_memory lines
    log.peak_memory_bytes = deepspeed_peak_gib * kGiB;
    log.memory_source = "MaxMemAllocated (DeepSpeed ThroughputTimer; allocated, not reserved)";
  } else if (zero_memory_line) {
    log.notes.push_back(fmt::format(
        "mem: {}:{}: report_memory prints 0 MB (torch.cuda's allocator does not count this "
        "device's memory): no memory read",
        name, zero_memory_line));
  }
  if (bf16.value_or(false) || fp16.value_or(false)) {
    log.precision = bf16.value_or(false) ? "bf16" : "fp16";
  } else if (bf16 && fp16) {
    log.precision = "fp32";
  }
  if (!log.precision.empty()) log.precision_line = precision_line;
  bridge_config.Apply(log, name);
  if (std::string mismatch = bridge_config.SeqLengthMismatch(name); !mismatch.empty()) {
    DropRecordsFlops(log, name, "'throughput per GPU (TFLOP/s/GPU)'",
                     "Megatron-Bridge counts each sample's FLOPs at its model.seq_length, not "
                     "the length trained (" +
                         mismatch + ")");
  }
  profile.Report(name, log);  // Megatron-DeepSpeed's flops profiler: its FLOPS per GPU
  auto stated = [&](const char* fact) -> std::optional<double> {
    auto f = log.facts.find(fact);
    return f == log.facts.end() ? std::nullopt : std::optional<double>(f->second.value);
  };
  const bool missing =
      !param_ranks.empty() && ParameterLinesMissRanks(param_ranks, stated("tp"), stated("pp"));
  const bool one_shard = !param_ranks.empty() && expert_parallel && *expert_parallel > 1;
  const bool partial = missing || one_shard;
  std::string why = "no 'number of parameters on (...) model parallel rank' line";
  if (partial) {
    why = fmt::format("the 'number of parameters on (...) model parallel rank' lines from {}:{} ",
                      name, parameters_line);
    why += missing ? fmt::format("give {} of the tensor x pipeline ranks' counts only",
                                 param_ranks.size())
                   : fmt::format(
                         "count one expert-parallel rank's experts only "
                         "(expert_model_parallel_size {})",
                         *expert_parallel);
  }
  if (!param_ranks.empty() && !partial) {
    SetFact(log, "parameters", parameters, parameters_line);
  } else if (billions) {
    SetFact(log, "parameters", billions->value, billions->line);
    log.notes.push_back(fmt::format(
        "parameters: {}:{} gives the count in billions to two decimals ({}): set parameters or "
        "model for an exact MFU",
        name, billions->line, why));
  } else if (partial) {
    log.notes.push_back(fmt::format("parameters: none read ({})", why));
  }
  return log;
}

}  // namespace bm::logparse
