// The out/ check: before ninja decides what is stale, every target whose
// materialized outputs are no longer what its step left in out/NAME (the
// directory or a file removed, a file replaced or resized) loses its
// t/NAME.out stamp, so that ninja runs its step, which restores it from the
// cache (engine/step.h). Ninja stats the outputs it knows of on every build;
// out/NAME is ours, so this is where it is looked at.
//
// What "as the step left it" means is NAME.last's record (engine/target_state.h:
// OutputsPresent, the test `status` and `explain` use too): each file's size
// and inode. A file edited in place at the same size keeps both and is not
// seen (materialized files are hard links into the cache, read-only; root
// ignores that); a restore verifies the cache's bytes, so such an edit,
// which changes the cache's copy too, is caught when the target next
// restores, and by `benchmake cache verify`.
//
// Reading every NAME.last on each build would parse JSON per target, so the
// stats a check found good are kept in .benchmake/out_checked, and the next
// check compares against those alone (and stats NAME.last: a target whose
// record is gone or unreadable loses its stamp too, and its step restores
// out/NAME and writes the record again); a step that materializes removes the
// file (ForgetOutCheck), and the next check reads NAME.last again.
//
// File (.benchmake/out_checked):
//   file  := "benchmake-out-checked 2\n" entry*
//   entry := target " " size " " inode " " path "\n"
//            (path: relative to out/NAME; "." for the directory, size 0)
// Thread safety: none; under the workspace lock, by `benchmake build` alone
// (a `status` beside a running build must not remove a stamp a step just wrote).
#pragma once

#include <string>
#include <vector>

#include "engine/workspace.h"

namespace bm::engine {

// Removes t/NAME.out of every target of `targets` whose out/NAME no longer
// holds what its step left there (above).
Status CheckOutDirs(const Workspace& ws, const std::vector<std::string>& targets);

// Drops the kept stats: call before out/NAME changes.
Status ForgetOutCheck(const Workspace& ws);

}  // namespace bm::engine
