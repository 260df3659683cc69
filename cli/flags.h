// The workspace the common flags (-C DIR, -f FILE; base/cli/flag_table.h)
// name, with the process-wide real Filesystem, CommandRunner and rule
// registry the CLI works with.
#pragma once

#include "base/cli/flag_table.h"
#include "engine/workspace.h"

namespace bm::cli {

// The workspace named by args.dir() and args.file(), with the real disk,
// subprocess runner and built-in rules.
Result<engine::Workspace> OpenWorkspaceFromFlags(const ParsedArgs& args);

}  // namespace bm::cli
