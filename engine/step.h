// `benchmake step NAME`: what one ninja edge does.
//
//   1. key material = NAME.spec + each upstream's NAME.out digest; key = its hash
//   2. Assess() (staleness.h) with the last materialization and the cache
//   3. up to date → nothing; restore → materialize the cached outputs into
//      out/NAME (hard links), verifying every blob; a corrupt blob is reported,
//      evicted, and the step runs instead
//   4. run → fresh scratch dir, the rule's Run(), ingest everything under the
//      step's out dir into the CAS, write the action record (manifest, metrics,
//      log digest, provenance), materialize
//   5. NAME.out is rewritten only when the manifest digest changed (restat)
// A failed step records nothing in the cache and leaves NAME.out as it was;
// its log is shown and kept in .benchmake/log/NAME.log. A killed step leaves
// only its scratch dir, removed by the next run of the same target.
#pragma once

#include <ostream>
#include <string>

#include "engine/workspace.h"

namespace bm::engine {

enum class StepOutcome { kUpToDate, kRestored, kRan };
std::string_view StepOutcomeName(StepOutcome o);  // "up to date", "restored", "ran"

struct StepOptions {
  bool interactive = false;         // attached to a terminal
  std::ostream* console = nullptr;  // one-line notices ("a: ran in 1.2s"); null: silent
  // Take a fresh measurement: a platform-dependent target runs even when the
  // cache holds its key (its new record replaces the old one). Also set by the
  // environment variable BENCHMAKE_REMEASURE=1 (how `build --remeasure` tells
  // the steps ninja starts).
  bool remeasure = false;
};

struct StepReport {
  StepOutcome outcome = StepOutcome::kUpToDate;
  Digest key;
  Digest manifest;
  double seconds = 0;
};

Result<StepReport> RunStep(const Workspace& ws, const std::string& target,
                           const StepOptions& options);

}  // namespace bm::engine
