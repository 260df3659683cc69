// Inspect: the state of every target without running anything — what
// `explain`, `status` and `graph` print. Walks the targets dependencies first,
// predicting each upstream's output digest (up to date: its NAME.out; restore:
// the cached manifest; run: unknown, so dependents are "pending").
// Call Generate() first so that the .spec files match the BENCHFILE.
#pragma once

#include <string>
#include <vector>

#include "engine/staleness.h"
#include "engine/workspace.h"

namespace bm::engine {

struct TargetInspection {
  std::string name;
  std::string rule;
  std::vector<std::string> upstream;
  Staleness staleness;
  Digest key;  // meaningful when staleness.verdict != kPending
  KeyMaterial material;
};

Result<std::vector<TargetInspection>> InspectWorkspace(const Workspace& ws,
                                                       const std::vector<std::string>& order);

}  // namespace bm::engine
