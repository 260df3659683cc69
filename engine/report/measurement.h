// The input of every report: measured results of targets, one Measurement per
// round. Renderers (markdown.h, csv.h, json_report.h, html.h) and compare.h are
// pure functions of these values, so they are tested with fixtures and never
// touch the cache or the disk.
//
// A Measurement is what one run of a platform-dependent step reported: its
// metrics.json (docs/METRICS.md, "benchmake-metrics" version 1), its per-step
// loss curve (log.jsonl) and where the numbers came from. A measurement that
// the engine restored from the cache is kRestored, never kFresh: reports label
// it so everywhere (DESIGN.md, "Artifacts and measurements").
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace bm::report {

enum class Origin {
  kFresh,     // measured by this build (or a --remeasure of it)
  kRestored,  // an earlier measurement restored from the cache
  kFile,      // read from a metrics.json named on the command line
};

// "fresh", "cache", "file": the words every report uses.
std::string_view OriginName(Origin origin);

struct Provenance {
  Origin origin = Origin::kFile;
  std::string host;           // where it was measured
  std::string measured_at;    // ISO 8601 UTC, e.g. "2026-11-21T08:41:15Z"
  std::string trainer_build;  // benchmake-train's build id
  std::string source;         // where the record lives: "cache ac/3f2a…", a path
};

struct LossPoint {
  int64_t step = 0;
  double loss = 0;
};

struct Measurement {
  nlohmann::json metrics = nlohmann::json::object();  // metrics.json, or {}
  std::vector<LossPoint> losses;                      // log.jsonl, steps ascending; may be empty
  Provenance provenance;
};

struct MeasuredTarget {
  std::string target;                     // the BENCHFILE target (or a label for files)
  std::string rule;                       // "pretrain", "evaluate", "exec", ...
  std::vector<Measurement> measurements;  // one per round, oldest first; never empty
};

// Fills provenance.host / measured_at / trainer_build from the metrics'
// "provenance" object where the caller left them empty.
void FillProvenanceFromMetrics(Measurement& m);

// The build that measured a run, as its provenance shows it: the metrics'
// provenance.trainer_build, else `platform`'s trainer_build (the engine's facts
// of the run); for a CPU run with the BLAS kernels it ran appended ("...;
// OpenBLAS 0.3.21, SkylakeX kernels"): a CPU run's speed is theirs.
std::string TrainerBuildOf(const nlohmann::json& metrics,
                           const nlohmann::json& platform = nlohmann::json::object());

}  // namespace bm::report
