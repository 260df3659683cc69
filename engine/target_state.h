// Per-target state files in .benchmake/t/ (see workspace.h), each starting
// with a magic and a version:
//   NAME.out    := "benchmake-out 1\n" hex32 "\n"         manifest digest
//   NAME.params := "benchmake-params 2 " hex32 "\n" json  StepParams (sealed: base/sealed_text.h)
//   NAME.last   := "benchmake-last 1\n" json               LastBuild
// and, one for all targets, .benchmake/locations :=
//   "benchmake-locations 1\n" json {NAME: "FILE:LINE:COL"}  where each target is declared
// (not a ninja input: moving a target in its BENCHFILE runs no step).
// Readers treat a missing or foreign file as absent (state is rebuildable).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cache/action_record.h"
#include "engine/key_material.h"
#include "engine/workspace.h"

namespace bm::engine {

// What `benchmake step NAME` needs besides the key material.
struct StepParams {
  std::string rule;
  nlohmann::json params;                      // all parameters, normalized
  std::map<std::string, std::string> inputs;  // written name → absolute path
  std::vector<std::string> upstream_targets;  // target inputs
  bool platform_dependent = false;
  int gpus = 0;
  Placement placement;  // where it runs (engine/placement.h); job_name unset
};

// The last materialization of a target in this workspace.
struct LastBuild {
  Digest key;
  KeyMaterial material;  // with input digests filled in
  std::vector<cache::OutputFile> outputs;
  std::string outcome;  // "ran" | "restored"
  std::string date;     // when it was materialized
  struct Materialized {
    std::string path;
    uint64_t size = 0;
    uint64_t inode = 0;
  };
  std::vector<Materialized> files;  // stat of out/NAME/* when materialized
};

std::string SerializeStepParams(const StepParams& p);
Result<StepParams> ParseStepParams(std::string_view text);

Result<std::optional<Digest>> ReadOutStamp(const Workspace& ws, const std::string& target);
// Writes NAME.out only when the digest differs (ninja restat).
Status WriteOutStamp(const Workspace& ws, const std::string& target, const Digest& manifest);

Result<std::optional<LastBuild>> ReadLastBuild(const Workspace& ws, const std::string& target);
Status WriteLastBuild(const Workspace& ws, const std::string& target, const LastBuild& last);

// True when every file of `last` is still in out/NAME with the recorded size
// and inode (what materialization left there).
Result<bool> OutputsPresent(const Workspace& ws, const std::string& target, const LastBuild& last);

// Where each target is declared ([target.NAME]'s NAME), for messages about a
// target after the BENCHFILE is loaded (engine/plan.h). Written only when it
// changes; Read gives an empty map for a missing or foreign file.
Status WriteTargetLocations(const Workspace& ws, const std::map<std::string, std::string>& where);
std::map<std::string, std::string> ReadTargetLocations(const Workspace& ws);

std::string NowIso8601();

}  // namespace bm::engine
