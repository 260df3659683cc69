// Reading the trainer's per-step log (log.jsonl, docs/METRICS.md): a header
// line {"format": "benchmake-log", "version": 1}, then one JSON object per
// step, {"step", "loss", "lr", "grad_norm", "tokens", "tokens_per_s", "ms"}.
// Only step and loss matter to reports; other fields are ignored, blank lines
// skipped; the header is optional (logs of other tools have none). A null loss
// (an fp16 step whose forward pass overflowed, or an external trainer's step
// that skipped every micro-batch) gives no point.
//
// Errors (naming `name` and the 1-based line): kCorrupt for a line that is not
// a JSON object, another format, a missing or non-numeric step or loss, steps
// not strictly increasing; kUnsupported for a log version newer than 1.
//
// Thread safety: pure function.
#pragma once

#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/report/measurement.h"

namespace bm::report {

inline constexpr int kLogVersion = 1;

Result<std::vector<LossPoint>> ParseLossLog(std::string_view jsonl, std::string_view name);

}  // namespace bm::report
