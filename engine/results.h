// Results: the read API for what the last builds produced — for reports
// (`benchmake report`, `compare`) and anything else that consumes metrics.
//
//   BM_ASSIGN_OR_RETURN(auto results, engine::LoadResults(ws));
//   for (const auto& r : results) if (r.built) Use(r.record.metrics, r.fresh);
//
// Per target: its current action key, the action record (output manifest,
// metrics such as the trainer's metrics.json, log digest, provenance: host,
// date, platform, benchmake version, duration), whether the outputs in out/
// were produced by running the step here (fresh) or restored from the cache,
// and whether it is up to date with the BENCHFILE. Reports must never present
// a restored measurement as a fresh one.
#pragma once

#include <string>
#include <vector>

#include "cache/action_record.h"
#include "engine/workspace.h"

namespace bm::engine {

struct TargetResult {
  std::string name;
  std::string rule;
  bool built = false;           // out/NAME holds a materialization (record valid)
  bool up_to_date = false;      // that materialization matches the current BENCHFILE
  bool fresh = false;           // it was produced by running the step, not restored
  std::string materialized_at;  // when out/NAME was written (UTC ISO 8601)
  Digest key;                   // the key of what is in out/NAME
  cache::ActionRecord record;
  std::string out_dir;   // absolute out/NAME
  std::string log_path;  // .benchmake/log/NAME.log (the last run here)
};

// Every target of the BENCHFILE, dependencies first. Generates state if
// needed (like `status`) but runs nothing.
Result<std::vector<TargetResult>> LoadResults(const Workspace& ws);

}  // namespace bm::engine
