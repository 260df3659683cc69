// The report as JSON, for programs: raw values in base units (fractions for
// MFU and accuracy, bytes for memory; not rounded), every round's provenance.
//
//   {"format": "benchmake-report", "version": 1,
//    "rows": [{"target", "rule", "trainer", "platform": {"device", "devices"},
//              "parallel", "fix_hp", "rounds", "origins": {"fresh", "cache", "file"},
//              "metrics": {NAME: {"median", "min", "max", "n"}, ...},
//              "eval_task",
//              "measurements": [{"origin", "host", "measured_at", "trainer_build",
//                                "source"}, ...],
//              "quality": {"metric", "target", "higher_is_better"},
//              "mlperf_score": {"time_to_train_s", "runs", "not_converged", "required"}}]}
// NAME ∈ tokens_per_device_per_s, step_ms, mfu_6n, mfu_palm, mem_peak_bytes,
// mem_total_bytes, loss, joules_per_token, watts_per_device, val_loss, perplexity, accuracy,
// exact_match, quality, time_to_train_s; absent metrics are left out, and so is "quality" of a
// row whose evaluation names no quality metric or target, and "mlperf_score" (MLPerf's score over
// the rounds, mlperf_score.h; time_to_train_s null where it cannot be had) of a row without
// MLPerf results. Output is pretty-printed with 2 spaces
// and a final newline.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/report/report_table.h"

namespace bm::report {

nlohmann::json ReportJson(const std::vector<ReportRow>& rows);
std::string RenderJson(const std::vector<ReportRow>& rows);

}  // namespace bm::report
