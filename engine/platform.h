// Platform facts: what platform-dependent rules put into their key (GPU model
// and count, driver and CUDA versions, trainer build id), as reported by
// `<tools_dir>/benchmake-train --probe` (JSON on stdout). Probed once per
// build by the generator and only when some target is platform-dependent; the
// steps read the facts from their spec.
//
// Test override: environment variable BENCHMAKE_PLATFORM holding a JSON object
// replaces the probe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/command_runner.h"
#include "base/filesystem.h"

namespace bm::engine {

// Errors: kNotFound when benchmake-train is absent (the message names
// `needed_by`, the platform-dependent targets), kFailed when the probe fails,
// kInvalidArgument for JSON that is not an object.
Result<nlohmann::json> ProbePlatform(Filesystem& fs, CommandRunner& runner,
                                     const std::string& tools_dir, const std::string& scratch_dir,
                                     const std::string& needed_by);

// GPUs on this machine: $BENCHMAKE_GPUS, else facts["gpu_count"], else the
// lines of `nvidia-smi -L`, else 0.
int DetectGpuCount(CommandRunner& runner, const nlohmann::json& facts,
                   const std::string& scratch_dir, Filesystem& fs);

}  // namespace bm::engine
