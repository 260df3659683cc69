// From the engine's results (engine/results.h) and the cache to the measured
// targets that reports render. The only file of engine/report that knows the
// workspace, the action record and the cache layout.
//
// Origins: the record's measurement is kFresh when out/NAME was produced by
// running the step here (TargetResult::fresh), else kRestored. Remeasurements
// (ActionRecord::remeasurements) are kFresh when taken on this host after
// out/NAME was materialized, else kRestored: a measurement that came with the
// cache is never called fresh.
// Loss curves come from out/NAME/log.jsonl when the target has one. Metrics
// without a "platform" object get the record's platform facts as theirs.
//
// Thread safety: none needed (one call per command).
#pragma once

#include <string>
#include <vector>

#include "base/filesystem.h"
#include "engine/report/measurement.h"
#include "engine/results.h"
#include "engine/workspace.h"

namespace bm::report {

// One target's measurements. kCorrupt when its log.jsonl is malformed.
Result<MeasuredTarget> FromTargetResult(const engine::TargetResult& result, Filesystem& fs,
                                        const std::string& this_host);

// Resolves selectors (report_args.h) to measured targets, in the order given.
// Without selectors: every built target whose metrics are a trainer's
// metrics.json ("format": "benchmake-metrics") or that is platform-dependent
// (its record has platform facts) and reports metrics, in BENCHFILE order.
// `ws` may be null when every selector is a path.
// Errors: kInvalidArgument for an unknown target; kNotFound for a target that
// has not been built, or NAME@WHERE that matches nothing in the cache (the
// message lists what the cache holds for NAME); kInvalidArgument for a named
// target without metrics. `notes` receives warnings for the user (a target
// whose measurement is older than its BENCHFILE entry).
Result<std::vector<MeasuredTarget>> CollectMeasured(const engine::Workspace* ws,
                                                    const std::vector<std::string>& selectors,
                                                    std::vector<std::string>& notes);

// This machine's host name ("unknown" when it cannot be read).
std::string ThisHost();

}  // namespace bm::report
