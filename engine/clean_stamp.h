// The clean stamp: what ninja's view of the workspace was when a build of
// every target last succeeded, so that a no-op `benchmake build` can tell that
// nothing is stale without starting ninja (ninja `-n` would say "no work to
// do" too, but as a process of its own: about 8 ms at 1,000 targets).
//
// Ninja decides staleness from build.ninja, its log (.ninja_log, which restat
// edges rely on) and the mtimes of each edge's files: t/NAME.spec and the
// t/NAME.out stamps (engine/generate.h). After a successful build of all
// targets every edge is clean; while none of those files has changed since
// (same size, mtime and inode), none is stale. Anything that changes a key
// rewrites a .spec or build.ninja (Generate() writes only what changed), a
// removed out/NAME removes its NAME.out, and a step that ran rewrites its .out
// or ninja's log: each shows here as a changed stat.
//
// File (.benchmake/clean):
//   clean := "benchmake-clean 1\n" (stat " " path "\n")*
//   stat  := size " " mtime_ns " " inode   ("- - -" for a missing file)
// Thread safety: none; under the workspace lock.
#pragma once

#include <string>
#include <vector>

#include "engine/workspace.h"

namespace bm::engine {

// Writes the stamp for `targets` (all of the workspace's). Call after ninja
// succeeded on all of them.
Status WriteCleanStamp(const Workspace& ws, const std::vector<std::string>& targets);

// Removes the stamp: call before ninja runs (a build cut short leaves none).
Status ForgetCleanStamp(const Workspace& ws);

// What Generate() left for ninja: the stat of build.ninja and of each target's
// t/NAME.spec. Taken before ninja runs and again after it, the stamp is
// written only when they are equal: `status`, `explain` and `graph` take no
// workspace lock and regenerate, so an edit of the BENCHFILE during a build
// rewrites a .spec that ninja read before (its target stays stale), and a stamp
// taken over it said "no work to do".
Result<std::string> GeneratedState(const Workspace& ws, const std::vector<std::string>& targets);

// True when the stamp exists, covers exactly `targets`, and every file in it
// has the stat it recorded. Any error reads as false.
bool CleanStampHolds(const Workspace& ws, const std::vector<std::string>& targets);

}  // namespace bm::engine
