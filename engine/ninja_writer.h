// Writes .benchmake/build.ninja: one edge per target,
//   build t/NAME.out: step t/NAME.spec | [t/NAME.params] t/UP.out ...
// (NAME.params only for platform-dependent targets, so that editing
// `rounds = N` runs the step, which takes the missing measurements),
// with restat = 1 (a step that leaves NAME.out untouched prunes its
// dependents: early cutoff), the console pool for targets that stream
// progress here, and a `gpu` pool (depth = GPU count) for targets that need this
// machine's GPUs (not those whose GPUs Slurm or mpirun's hosts provide).
// Paths are relative to .benchmake/ (ninja runs with -C .benchmake).
#pragma once

#include <set>
#include <string>

#include "engine/target_graph.h"

namespace bm::engine {

struct NinjaOptions {
  std::string step_command;  // e.g. "exec '/usr/bin/benchmake' step -f '/ws/BENCHFILE.toml'"
  int gpu_pool_depth = 1;
  // Targets that need GPUs but not this machine's (engine/placement.h,
  // UsesLocalGpus): outside the gpu pool.
  std::set<std::string> remote_gpus;
  // Targets that run under Slurm: outside the console pool too, so that many
  // run at once (their progress goes to their logs).
  std::set<std::string> slurm;
};

std::string RenderNinja(const TargetGraph& graph, const NinjaOptions& options);

// Single-quotes a word for /bin/sh, escaping '$' for ninja.
std::string NinjaShellQuote(std::string_view word);

}  // namespace bm::engine
