// Building: `benchmake build` through ninja, and an in-process driver with the
// same results for unit tests (no ninja, any Filesystem and CommandRunner).
//
// BuildWithNinja: takes the workspace lock (.benchmake/lock; a second build
// waits and then says how long and why) and hands it down to ninja and its
// steps (an inherited descriptor, named by $BENCHMAKE_LOCK_FD), so that it is
// held until every one of them has ended, even when the build itself was
// killed (SIGKILL); runs Generate(), checks the plan
// (engine/plan.h: every target to build can run here), and runs `ninja`
// from PATH in .benchmake/ on the requested targets' NAME.out files. -j, -k
// and -n pass through. kNotFound when ninja is not on PATH; kFailed when a
// step failed (ninja has shown its log); kInvalidArgument, before anything
// runs, when a target to build (or one it depends on) cannot run here: it
// needs more GPUs than the machine has (steps whose GPUs Slurm or mpirun's
// hosts provide are not counted), or what its rule lacks (engine/plan.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/step.h"
#include "engine/workspace.h"

namespace bm::engine {

struct BuildOptions {
  std::vector<std::string> targets;  // empty: all
  // ninja -j: unset takes [benchmake] jobs, else ninja's default; 0 means no
  // limit, as for ninja.
  std::optional<int> jobs;
  int keep_going = 1;    // ninja -k
  bool dry_run = false;  // ninja -n
  // Color for the steps' notices and progress lines: passed to them as
  // BENCHMAKE_COLOR=always|never, and to ninja as CLICOLOR_FORCE / NO_COLOR
  // (base/terminal.h).
  bool color = false;
  // After ninja: take one more measurement of each of `targets` (engine/step.h,
  // step 6), still under the workspace lock. Precondition: targets not empty.
  bool remeasure = false;
  // The executor for this build (--executor): "local" or "slurm" over the
  // BENCHFILE's; "" keeps it (engine/placement.h).
  std::string executor;
};

Status BuildWithNinja(const Workspace& ws, const BuildOptions& options);

// Called first by `benchmake step`: keeps the workspace lock it inherited
// (BuildWithNinja) from the commands it starts, so that a process a step
// leaves behind does not hold the workspace. No-op outside a build.
void KeepWorkspaceLockFromCommands();

struct InProcessSummary {
  std::map<std::string, StepOutcome> outcomes;
  int ran = 0, restored = 0;
  std::map<std::string, int> remeasured;  // extra measurements per target
};

// Generate(), the plan (engine/plan.h), then RunStep() on `targets` (empty:
// all) and their dependencies, dependencies first; stops at the first
// failure. For tests: the outcome of each target.
Result<InProcessSummary> BuildInProcess(const Workspace& ws, const StepOptions& options = {},
                                        const std::vector<std::string>& targets = {});

}  // namespace bm::engine
