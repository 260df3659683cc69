// Flag parsing shared by the subcommands, and the process-wide real
// Filesystem, CommandRunner and rule registry the CLI works with.
#pragma once

#include <string>
#include <vector>

#include "engine/workspace.h"

namespace bm::engine::cli {

struct CommonFlags {
  std::string dir;                // -C DIR
  std::string file;               // -f BENCHFILE
  std::vector<std::string> rest;  // everything else, in order
};

// Extracts -C DIR and -f FILE (anywhere); kInvalidArgument when a value is missing.
Result<CommonFlags> ParseCommonFlags(const std::vector<std::string>& args);

// The workspace named by the flags, with the real disk, subprocess runner and
// built-in rules.
Result<Workspace> OpenWorkspaceFromFlags(const CommonFlags& flags);

// Parses a non-negative integer flag value.
Result<int> ParseIntFlag(const std::string& flag, const std::string& value);

}  // namespace bm::engine::cli
