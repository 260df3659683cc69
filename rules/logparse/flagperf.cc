// FlagPerf's run log: the benchmark case's run_pretraining.py prints its
// summary at the end (training/benchmarks/*/run_pretraining.py, e.g.
// aquila2_7b/flagscale and llama2_7b/deepspeed at FlagPerf 1b5a030):
//
//   System tokens per second:  163840.0
//   Tokens/p/s:  20480.0
//   MFU:  0.4346...
//
// (print(label, value): two spaces; some cases log "MFU: 0.43" instead).
// Tokens/p/s is FlagPerf's figure per device, computed by the case's own
// convention (the Megatron cases from the last iteration line's elapsed time,
// the DeepSpeed ones from RunningAvgSamplesPerSec), and MFU its 6·N figure.
// When the run log also holds the trainer's own lines (Megatron, DeepSpeed,
// the Trainer, PaddleNLP: whichever `auto` recognises), they give the steps,
// losses, memory and facts as that format's parser reads them; the
// throughput is FlagPerf's stated figure unless excluded_warmup_steps is set.
// The classic cases (bert, cpm, glm, ...) log `[PerfLog] {"event": ...}` lines instead
// (flagperf_perflog.h): their STEP_END events are the steps, FINISHED's
// training_sequences_per_second the throughput.
#include <fmt/format.h>

#include "rules/logparse/flagperf_perflog.h"
#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// The number after `label` and a colon, at the start of the line (after a
// logger prefix ending in "- " or "] ").
std::optional<double> Summary(std::string_view line, std::string_view label) {
  size_t at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  if (at > 0 && line[at - 1] != ' ' && line[at - 1] != ']') return std::nullopt;
  std::string_view rest = line.substr(at + label.size());
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  return ParseNumber(rest.substr(1));
}

}  // namespace

bool IsFlagPerfSummaryLine(std::string_view line) {
  return Summary(line, "Tokens/p/s").has_value();
}

Result<ParsedLog> ParseFlagPerfLog(std::string_view text, std::string_view name) {
  std::optional<Fact> tokens, mfu;
  ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (std::optional<double> v = Summary(line, "Tokens/p/s")) tokens = Fact{*v, no};
    if (std::optional<double> v = Summary(line, "MFU")) mfu = Fact{*v, no};
  });
  // The trainer's own lines, read by their format's parser.
  ParsedLog log;
  std::string inner;
  std::string_view rest = text;
  std::string without_summary;
  bool perflog = false;
  bool own_lines = tokens.has_value();
  ForEachLine(text, [&](std::string_view line, int64_t) {
    own_lines = own_lines || IsFlagPerfEventLine(line);
  });
  if (own_lines) {  // detect what FlagPerf's lines wrap without those lines themselves
    ForEachLine(text, [&](std::string_view line, int64_t) {
      if (!IsFlagPerfSummaryLine(line) && !IsFlagPerfEventLine(line))
        without_summary.append(line).push_back('\n');
    });
    rest = without_summary;
  }
  if (std::optional<Detected> d = DetectLogFormat(rest); d && d->format != "flagperf") {
    BM_ASSIGN_OR_RETURN(log, FindLogParser(d->format)->parse(text, name));
    inner = std::string(d->format);
  } else {
    log.lines = CountLines(text);
    BM_TRY(ReadFlagPerfEvents(text, name, log));
    perflog = !log.iterations.empty() || log.trainer_average.has_value();
  }
  log.format = "flagperf";
  if (!tokens && !perflog && log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no FlagPerf summary ('Tokens/p/s:  X', printed at the end of the case's "
                  "run_pretraining.py), no '[PerfLog] {{\"event\": \"STEP_END\", ...}}' "
                  "events and no trainer lines in {} lines{}",
                  name, log.lines, OtherFormatHint(text, "flagperf"));
  }
  if (tokens) {
    TrainerAverage avg;
    avg.tokens_per_device_per_s = tokens->value;
    avg.line = tokens->line;
    // Which steps it covers is the case's business (the Megatron cases time the last
    // iteration line, the DeepSpeed ones DeepSpeed's running average): not claimed.
    avg.through_step = 0;
    avg.what = "FlagPerf's Tokens/p/s (the case's own convention)";
    log.trainer_average = avg;
  }
  if (mfu) log.stated_mfu = mfu;
  if (!inner.empty())
    log.notes.push_back(fmt::format("flagperf: the steps are read as a {} log", inner));
  if (perflog) {
    log.notes.push_back(fmt::format(
        "flagperf: {} read as FlagPerf's [PerfLog] events (STEP_END steps{})", name,
        log.trainer_average ? ", FINISHED's training_sequences_per_second as the throughput"
                            : "; no FINISHED event: throughput from the steps' rates"));
  } else if (!tokens) {
    log.notes.push_back(
        fmt::format("flagperf: {} has no 'Tokens/p/s:' summary (did the case "
                    "finish?): throughput from the trainer's lines",
                    name));
  }
  return log;
}

}  // namespace bm::logparse
