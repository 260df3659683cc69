// The build plan: before a build runs any step, every target it will bring up
// to date — the requested ones and everything they depend on — must be able to
// run here: its step must fit on this machine's GPUs (StepParams::gpus against
// the workspace's GPU count), and its rule must have what its parameters need
// (Rule::Unsupported). Otherwise the build would run for hours and then fail,
// or wait forever for GPUs it can never get.
//
// It reads what Generate() wrote (t/NAME.params: rule, parameters, GPUs,
// upstream targets; config.json: the GPU count), so it costs the same on the
// no-op fast path. A target that cannot run here fails the build before
// anything runs, one line per target and reason (sorted), each at the
// target's [target.NAME] in its BENCHFILE (what Generate() recorded), e.g.
//
//   /w/BENCHFILE.toml:12:9: target 'gpt3_cpu' cannot run here: precision 'bf16'
//   on device cpu: the cpu backend is fp32 only ...
//   /w/BENCHFILE.toml:30:9: target 'gpt3_pp' needs 8 GPU(s) for layout TP1PP2DP4
//   but this machine has 1 ([benchmake] gpus or $BENCHMAKE_GPUS set the count);
//   nothing was run
//
// with "(needed by 'Y')" after a name that only a requested target Y needs.
// Errors: kInvalidArgument for those, and for an unknown target (with the
// nearest name); kCorrupt / kNotFound when the state Generate() writes is
// missing or damaged.
#pragma once

#include <string>
#include <vector>

#include "engine/workspace.h"

namespace bm::engine {

// "no target 'NAME' in BENCHFILE (did you mean 'X'?)": every command's
// error for a target name the workspace does not have (kInvalidArgument).
Status NoSuchTarget(const Workspace& ws, const std::string& name,
                    const std::vector<std::string>& names);

// The targets a build of `targets` brings up to date — them and everything
// they depend on, in the order of `all` (every target of the BENCHFILE,
// dependencies first, as GenerateResult::targets lists them) — after checking
// that each can run here. Empty `targets`: all of `all`.
Result<std::vector<std::string>> PlanBuild(const Workspace& ws,
                                           const std::vector<std::string>& targets,
                                           const std::vector<std::string>& all);

}  // namespace bm::engine
