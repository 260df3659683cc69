// Reading an external trainer's training log: Megatron-LM / FlagScale
// iteration lines, DeepSpeed's engine and ThroughputTimer lines, MLPerf
// `:::MLLOG` events. One parser per format (one file each), found by name in a
// small registry, so that the exec rule's `log_format = "megatron"` is one
// lookup and a new format is one file and one registry line (STYLE.md habit 8).
//
// A parser is a pure function from the log's text to a ParsedLog: the
// per-iteration series, the peak memory the log reports, and the facts the log
// states about the run (sequence length, batch sizes, layout, model size),
// each with the line that said it. What the series means in metrics.json
// terms is rules/external_metrics.h's business, not the parsers'.
//
// Tolerated, as real logs need: lines of any other kind (warnings, other
// ranks' output, progress bars), prefixes before a recognized line (a
// timestamp, `[default0]:`, srun's `0: `), the same iteration printed by
// several ranks (the first is kept), a run resumed from a checkpoint (Megatron:
// when a different record for a step at or below the last one appears, the
// records from that step on are replaced by the resumed run's), and a last
// line cut off mid-way (its unterminated field is ignored).
// Errors (kCorrupt, "NAME:LINE: what"): a recognized line whose field does not
// parse (`lm loss: abc |`); an empty log or one without a single iteration
// record ("NAME: no Megatron iteration lines (' iteration N/M | ...') in 1200
// lines"), naming what was looked for.
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
  std::optional<double> time_ms;        // wall clock at the record, ms since the epoch (MLLOG)
  std::optional<double> lr;
  std::optional<double> grad_norm;
  std::optional<double> loss_scale;  // fp16 dynamic loss scale
  int64_t skipped = 0;               // steps of the span the optimizer skipped (overflow)
  int64_t nan = 0;                   // steps of the span with a NaN or Inf loss
  int64_t line = 0;                  // 1-based line it was read from
};

// A value the log states about the run and where.
struct Fact {
  double value = 0;
  int64_t line = 0;
};

// A trainer's own running average of its throughput (DeepSpeed's
// RunningAvgSamplesPerSec at its last report).
struct TrainerAverage {
  double samples_per_s = 0;    // global samples per second
  int64_t excluded_steps = 0;  // the first steps it leaves out (ThroughputTimer start_step)
  int64_t through_step = 0;    // the last step it covers
  int64_t line = 0;
};

struct ParsedLog {
  std::vector<Iteration> iterations;        // strictly ascending step; never empty on success
  std::optional<double> peak_memory_bytes;  // per device, the largest any rank reported
  std::string memory_source;                // what the number is ("max reserved (report_memory)")
  std::optional<TrainerAverage> trainer_average;
  std::optional<double> wall_s;  // start to end of the run, when the log marks both (MLLOG)
  // Facts by our names: mpe, lbs, gas, gbs, tp, pp, dp, devices, layers,
  // hidden, heads, parameters. Precision separately (a word).
  std::map<std::string, Fact> facts;
  std::string precision;  // "bf16", "fp16", "fp32", or "" when the log does not say
  int64_t precision_line = 0;
  int64_t lines = 0;     // lines read
  int64_t restarts = 0;  // times a resumed run replaced records
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
// "deepspeed, flagscale, megatron, mllog"
std::string LogParserNames();

// The formats (each in its own file).
Result<ParsedLog> ParseMegatronLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseDeepSpeedLog(std::string_view text, std::string_view name);
Result<ParsedLog> ParseMllog(std::string_view text, std::string_view name);

}  // namespace bm::logparse
