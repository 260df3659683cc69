// Reading the trainer's per-step log (log.jsonl, docs/METRICS.md): one JSON
// object per line, {"step", "loss", "lr", "grad_norm", "tokens_per_s", "ms"}.
// Only step and loss matter to reports; other fields are ignored, blank lines
// skipped.
//
// Errors (kCorrupt, naming `name` and the 1-based line): a line that is not a
// JSON object, a missing or non-numeric step or loss, steps not strictly
// increasing.
//
// Thread safety: pure function.
#pragma once

#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/report/measurement.h"

namespace bm::report {

Result<std::vector<LossPoint>> ParseLossLog(std::string_view jsonl, std::string_view name);

}  // namespace bm::report
