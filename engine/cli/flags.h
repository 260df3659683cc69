// The workspace the common flags (-C DIR, -f FILE; engine/cli/flag_table.h)
// name, with the process-wide real Filesystem, CommandRunner and rule
// registry the CLI works with.
#pragma once

#include "engine/cli/flag_table.h"
#include "engine/workspace.h"

namespace bm::engine::cli {

// The workspace named by args.dir() and args.file(), with the real disk,
// subprocess runner and built-in rules.
Result<Workspace> OpenWorkspaceFromFlags(const ParsedArgs& args);

}  // namespace bm::engine::cli
