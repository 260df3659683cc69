#include <fmt/format.h>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/nan_steps.h"

namespace bm::logparse {
namespace {

// Every format reads the log without its terminal colour codes: PaddleNLP's and PaddleFormers'
// colorlog logger wraps each line in them (`\x1b[32m[...] [    INFO]\x1b[0m - ...\x1b[0m`), and
// a code glued to a number (`= 8\x1b[0m`) would make it unreadable. Nor its UTF-8 byte order
// mark (a log saved by a Windows editor): before a first line that is a record (`:::MLLOG`, a
// dict's `{`) it would hide it. The mark is part of line 1, so line numbers do not change.
// Then every format counts its NaN steps alike (CountNonFiniteLosses).
template <ParseFn kParse>
Result<ParsedLog> Read(std::string_view text, std::string_view name) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::optional<std::string> plain = WithoutTerminalEscapes(text);
  BM_ASSIGN_OR_RETURN(ParsedLog log, kParse(plain ? std::string_view(*plain) : text, name));
  CountNonFiniteLosses(log, name);
  return log;
}

// Sorted by name. The warm-up conventions are docs/METRICS.md's.
// "auto" takes the convention of the format it recognises.
constexpr LogParser kParsers[] = {
    {"auto", Read<ParseAutoLog>, 1, "the recognised format's"},
    {"deepspeed", Read<ParseDeepSpeedLog>, 2,
     "as DeepSpeed's ThroughputTimer (start_step = 2), whose RunningAvgSamplesPerSec FlagPerf "
     "reports"},
    {"flagperf", Read<ParseFlagPerfLog>, 1,
     "FlagPerf's own Tokens/p/s or training_sequences_per_second when the log has it; else "
     "every step after the first"},
    {"flagscale", Read<ParseMegatronLog>, 1,
     "FlagScale's cases average the step times without the first"},
    {"litgpt", Read<ParseLitgptLog>, 1,
     "every step after the first: the first iteration holds the start-up (compilation, the first "
     "kernels)"},
    {"maxtext", Read<ParseMaxtextLog>, 3,
     "every step after the first three: the first holds the compilation, and while JAX's "
     "asynchronous dispatch fills the device's queue the next one or two time their dispatch "
     "alone (MaxText's own benchmark scripts average the last steps only)"},
    {"megatron", Read<ParseMegatronLog>, 1, "as FlagScale: every iteration after the first"},
    {"mllog", Read<ParseMllog>, 1, "every step after the first"},
    {"nanotron", Read<ParseNanotronLog>, 1,
     "every step after the first: step 1's time includes the first step's allocations and "
     "kernel set-up"},
    {"nemo", Read<ParseNemoLog>, 1, "as Megatron: every step after the first"},
    {"paddle", Read<ParsePaddleLog>, 10,
     "as PaddleNLP's benchmark scripts (skip_steps = 10: the first steps are unstable)"},
    {"torchtitan", Read<ParseTorchtitanLog>, 1,
     "every step after the first: step 1's record includes the start-up (compilation, the first "
     "batches)"},
    {"torchtune", Read<ParseTorchtuneLog>, 1,
     "every step after the first: step 1's time runs from before the training loop (the first "
     "batches, compilation)"},
    {"trainer", Read<ParseTrainerLog>, 1,
     "the Trainer's train_samples_per_second when the log has it (the whole run)"},
};

}  // namespace

const LogParser* FindLogParser(std::string_view name) {
  for (const LogParser& p : kParsers)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> LogParserNameList() {
  std::vector<std::string> out;
  for (const LogParser& p : kParsers) out.emplace_back(p.name);
  return out;
}

std::string LogParserNames() {
  std::string out;
  for (const std::string& name : LogParserNameList()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace bm::logparse
