// FlagPerf's `[PerfLog] {"event": ...}` lines (driver/perf_logger.py), as the flagperf parser
// reads them beside the `Tokens/p/s:` summary of the LLM cases (flagperf.cc). What each event
// gives is flagperf_perflog.cc's header comment.
//
// Thread safety: pure functions.
#pragma once

#include <string_view>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// Reads the STEP_END, EVALUATE and FINISHED events into log.iterations (ascending, spans from
// the gaps), log.evals, log.trainer_average and log.wall_s. kCorrupt ("NAME:LINE: ...") for a
// [PerfLog] line that is not a JSON event, unless it is the last line (cut off).
Status ReadFlagPerfEvents(std::string_view text, std::string_view name, ParsedLog& log);

}  // namespace bm::logparse
