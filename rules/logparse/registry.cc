#include <fmt/format.h>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// Sorted by name. The warm-up conventions are docs/METRICS.md's.
constexpr LogParser kParsers[] = {
    {"deepspeed", ParseDeepSpeedLog, 2,
     "as DeepSpeed's ThroughputTimer (start_step = 2), whose RunningAvgSamplesPerSec FlagPerf "
     "reports"},
    {"flagscale", ParseMegatronLog, 1,
     "FlagScale's cases average the step times without the first"},
    {"megatron", ParseMegatronLog, 1, "as FlagScale: every iteration after the first"},
    {"mllog", ParseMllog, 1, "every step after the first"},
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
