// `benchmake step NAME`: what one ninja edge does.
//
//   1. key material = NAME.spec + each upstream's NAME.out digest; key = its hash.
//      State the generator wrote that does not read (NAME.spec, NAME.params:
//      damaged by a disk or a hand) fails the step naming the file, and forgets
//      the generator's stamp so that the next build writes it again; an
//      upstream's NAME.out that does not read is removed, so that the next
//      build restores that target
//   2. Assess() (staleness.h) with the last materialization and the cache
//   3. up to date → nothing; restore → materialize the cached outputs into
//      out/NAME (hard links), verifying every blob; a corrupt blob is reported,
//      evicted, and the step runs instead
//   4. run → fresh scratch dir, the rule's Run(), ingest everything under the
//      step's out dir into the CAS, write the action record (manifest, metrics,
//      log digest, provenance), materialize
//   5. NAME.out is rewritten only when the manifest digest changed (restat)
//   6. measurements (platform-dependent rules only): when the target asks for
//      `rounds = N` and the record holds fewer, or with options.remeasure, the
//      rule runs again in a fresh scratch dir with a fresh resume dir; what it
//      measured is appended to the record's remeasurements, its outputs are
//      discarded: out/NAME and every digest stay those of the cached artifact.
//      (--remeasure on a step that just ran adds nothing: that run is fresh.)
// Before 5, NAME.spec is read again: when it changed since step 1 (a `status`
// beside the build regenerated it), the step fails and leaves NAME.out as it
// was, whatever it cached for the key it started with.
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
  bool color = false;               // color the notices and progress lines (base/terminal.h)
  std::ostream* console = nullptr;  // one-line notices ("a: ran in 1.2s"); null: silent
  bool remeasure = false;           // take one more measurement even on a cache hit
  // `cache pull`: never run the rule. A target no cache can restore (no
  // record, or a blob missing or corrupt) is kNotFound or kCorrupt instead,
  // and no measurement is taken.
  bool restore_only = false;
};

struct StepReport {
  StepOutcome outcome = StepOutcome::kUpToDate;
  Digest key;
  Digest manifest;
  double seconds = 0;
  int remeasured = 0;  // extra measurements recorded (rounds, --remeasure)
};

Result<StepReport> RunStep(const Workspace& ws, const std::string& target,
                           const StepOptions& options);

}  // namespace bm::engine
