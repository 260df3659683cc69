// Platform facts: what platform-dependent rules put into their key (GPU model
// and count, driver and CUDA versions, interconnect, trainer build id), as
// reported by `<tools_dir>/benchmake-train --probe` (JSON on stdout). Probed
// once per build by the generator and only when some target is
// platform-dependent; the steps read the facts from their spec.
//
// Where: a step that runs here is measured on this machine, a step that runs
// under Slurm on a node of its placement — so it is probed there, through
// `srun --nodes=1 --ntasks=1` with that placement's partition, account and
// srun flags (and one GPU when its steps use GPUs): one probe per such site
// and build. Results of different node types then never share a key.
//
// Test override: environment variable BENCHMAKE_PLATFORM holding a JSON object
// replaces the probe (at every site).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/command_runner.h"
#include "base/filesystem.h"
#include "engine/placement.h"

namespace bm::engine {

// Where the platform is probed: this machine, or a node that Slurm gives a
// job of `options` (its partition, account, srun_args; the probe has its own
// time limit), with a GPU when `gpu`.
struct ProbeSite {
  bool slurm = false;
  SlurmOptions options;
  bool gpu = false;

  // "local", or the JSON of what selects the node: identifies the site.
  std::string Key() const;
  static Result<ProbeSite> FromKey(std::string_view key);
};

// The site that measures a step placed as `p` that needs `gpus` GPUs.
ProbeSite ProbeSiteOf(const Placement& p, int gpus);

// Errors: kNotFound when benchmake-train is absent (the message names
// `needed_by`, the platform-dependent targets), kFailed when the probe fails
// (under Slurm with srun's message), kInvalidArgument for JSON that is not an
// object.
Result<nlohmann::json> ProbePlatform(Filesystem& fs, CommandRunner& runner,
                                     const std::string& tools_dir, const std::string& scratch_dir,
                                     const std::string& needed_by, const ProbeSite& site = {});

// GPUs on this machine: $BENCHMAKE_GPUS, else facts["gpu_count"], else the
// lines of `nvidia-smi -L`, else 0.
int DetectGpuCount(CommandRunner& runner, const nlohmann::json& facts,
                   const std::string& scratch_dir, Filesystem& fs);

}  // namespace bm::engine
