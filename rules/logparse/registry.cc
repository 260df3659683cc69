#include <fmt/format.h>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// Sorted by name. The warm-up conventions are docs/METRICS.md's.
// "auto" takes the convention of the format it recognises.
constexpr LogParser kParsers[] = {
    {"auto", ParseAutoLog, 1, "the recognised format's"},
    {"deepspeed", ParseDeepSpeedLog, 2,
     "as DeepSpeed's ThroughputTimer (start_step = 2), whose RunningAvgSamplesPerSec FlagPerf "
     "reports"},
    {"flagperf", ParseFlagPerfLog, 1,
     "FlagPerf's own Tokens/p/s or training_sequences_per_second when the log has it; else "
     "every step after the first"},
    {"flagscale", ParseMegatronLog, 1,
     "FlagScale's cases average the step times without the first"},
    {"megatron", ParseMegatronLog, 1, "as FlagScale: every iteration after the first"},
    {"mllog", ParseMllog, 1, "every step after the first"},
    {"nemo", ParseNemoLog, 1, "as Megatron: every step after the first"},
    {"paddle", ParsePaddleLog, 10,
     "as PaddleNLP's benchmark scripts (skip_steps = 10: the first steps are unstable)"},
    {"torchtitan", ParseTorchtitanLog, 1,
     "every step after the first: step 1's record includes the start-up (compilation, the first "
     "batches)"},
    {"trainer", ParseTrainerLog, 1,
     "the Trainer's train_samples_per_second when the log has it (the whole run)"},
};

}  // namespace

const LogParser* FindLogParser(std::string_view name) {
  for (const LogParser& p : kParsers)
    if (p.name == name) return &p;
  return nullptr;
}

std::string LogParserNames() {
  std::string out;
  for (const LogParser& p : kParsers) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

}  // namespace bm::logparse
