// The report's table model: one ReportRow per measured target, the rounds of
// its measurements aggregated (stat.h). Every format (markdown.h, csv.h,
// json_report.h, html.h) renders these rows; none reads metrics.json itself.
//
// Which metrics.json field feeds which column (docs/METRICS.md names):
//   tokens_per_device_per_s  throughput.tokens_per_device_per_s
//   mfu_6n, mfu_palm         mfu.6N, mfu.palm (fractions)
//   mem_peak, mem_total      memory.peak_bytes, memory.device_total_bytes
//   loss                     loss.final
//   joules_per_token,        energy.joules_per_token, energy.watts_per_device
//   watts_per_device         (JSON, CSV, compare and the HTML's energy bars; the suites' table
//                            has no column for them)
//   val_loss, perplexity,    eval.val_loss, eval.perplexity, eval.accuracy
//   accuracy, exact_match    (fractions), eval.exact_match, eval.task
//   time_to_train_s          mlperf.time_to_train_s (an MLPerf log's result, seconds)
// The trainer, platform, layout and fix_hp come from the newest measurement
// (metrics_view.h); rounds of one target share their action key, hence them.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/report/measurement.h"
#include "engine/report/mlperf_score.h"
#include "engine/report/stat.h"

namespace bm::report {

struct ReportRow {
  std::string target;
  std::string rule;
  std::string trainer;   // "benchmake-train", "megatron", ... ("" unknown)
  std::string device;    // "H100", "cpu"
  int devices = 0;       // 0: unknown
  std::string parallel;  // "TP1PP1DP8"; "" when not a training run
  std::string fix_hp;

  std::optional<Stat> tokens_per_device_per_s;
  std::optional<Stat> step_ms;
  std::optional<Stat> mfu_6n;
  std::optional<Stat> mfu_palm;
  std::optional<Stat> mem_peak_bytes;
  std::optional<Stat> mem_total_bytes;
  std::optional<Stat> loss;
  std::optional<Stat> joules_per_token;  // what the GPUs drew over the steps, per token
  std::optional<Stat> watts_per_device;
  std::optional<Stat> val_loss;
  std::optional<Stat> perplexity;
  std::optional<Stat> accuracy;     // multiple-choice, a fraction
  std::optional<Stat> exact_match;  // greedy decoding on instruction data, a fraction
  std::string eval_task;
  // The evaluation's quality metric (eval.quality): its value where it is neither a loss nor an
  // accuracy (mAP, Dice, AUC, FID), its name, and the target in its direction (the newest
  // measurement's).
  std::optional<Stat> quality;
  std::string quality_metric;
  std::optional<double> quality_target;
  std::optional<bool> quality_higher_is_better;
  std::optional<Stat> time_to_train_s;  // MLPerf's (mlperf.time_to_train_s), seconds
  // MLPerf's score over the rounds whose metrics have an `mlperf` block (mlperf_score.h); nullopt
  // when none has.
  std::optional<MlperfScore> mlperf_score;

  int fresh = 0;  // rounds by origin
  int restored = 0;
  int from_file = 0;
  std::vector<Provenance> provenance;  // one per round, oldest first

  int rounds() const { return fresh + restored + from_file; }
};

// The metrics.json numbers a row summarizes over its measurements, by path, and the field each
// fills (BuildRow; run_files.cc checks their type).
struct RowFigure {
  std::string_view path;
  std::optional<Stat> ReportRow::*field;
};
std::span<const RowFigure> RowFigures();

ReportRow BuildRow(const MeasuredTarget& target);
std::vector<ReportRow> BuildRows(const std::vector<MeasuredTarget>& targets);

// "H100×8", "cpu×1", "H100" when the count is unknown, "?×8" when the device is.
std::string PlatformText(const ReportRow& row);

// How the row's numbers were obtained, never calling a restored one fresh:
// "fresh", "cache", "file", or counts when mixed: "2 fresh + 1 cache".
std::string OriginText(const ReportRow& row);

// "val 3.120, ppl 22.65, acc 61.3%, em 12.5% (copa)" from whichever are
// present; "".
std::string EvalText(const ReportRow& row);

// "44/80" GiB, "44/?" when the device total is unknown; "" without a peak.
// A spread over rounds shows on the peak: "44 (43–45)/80".
// A CPU run's memory is the host's: "0.4/7.7 host" (its RAM, docs/METRICS.md).
// MLPerf's time to train in minutes: one run's, or over several MLPerf's score (the olympic mean,
// mlperf_score.h) with the converged runs' range and the runs it counts: "13.31 (12.90–13.80; 3 of
// 5 runs)"; where the score cannot be had (two runs), the median (min–max) as other cells.
std::string TimeToTrainText(const ReportRow& row);

std::string MemText(const ReportRow& row);

// Whether the row measured a CPU run (device "cpu"): its memory is host memory.
bool IsHostRun(const ReportRow& row);

}  // namespace bm::report
