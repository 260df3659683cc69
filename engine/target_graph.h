// TargetGraph: a parsed BENCHFILE validated against the rule registry —
// parameters type-checked and normalized (defaults filled, 1_000 == 1000),
// inputs resolved to upstream targets or source files, cycles rejected — and
// put in dependency order.
//
// Errors (kInvalidArgument, one line each, "FILE:LINE:COL: ..."): unknown rule,
// unknown parameter (with the nearest valid name), mistyped parameter, missing
// required parameter, unknown input target (nearest name), missing source file,
// dependency cycle (the cycle printed), a rule's own Check() messages, and its
// CheckInputs() messages on what its upstream targets say of their outputs
// (Rule::OutputFacts, computed in dependency order once the graph is acyclic).
// All errors found are returned together, joined by newlines.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/filesystem.h"
#include "engine/benchfile.h"
#include "engine/rule.h"

namespace bm::engine {

struct InputRef {
  std::string param;  // the parameter that names it
  std::string name;   // as written
  bool is_target = false;
  int target = -1;   // index into TargetGraph::targets when is_target
  std::string path;  // absolute path of a source file (or directory)
  SourceLocation loc;
};

struct Target {
  std::string name;
  const Rule* rule = nullptr;
  nlohmann::json params;  // every parameter, normalized, defaults filled
  std::vector<InputRef> inputs;
  std::vector<int> deps;  // upstream target indices, unique, sorted
  SourceLocation loc;
};

struct TargetGraph {
  std::string benchfile;      // absolute path
  std::string workspace_dir;  // its directory
  Settings settings;
  std::vector<Target> targets;       // in file order
  std::map<std::string, int> index;  // name → position
  std::vector<int> order;            // dependencies first

  const Target* Find(std::string_view name) const;
  bool AnyPlatformDependent() const;
};

Result<TargetGraph> BuildGraph(const Benchfile& benchfile, const RuleRegistry& rules,
                               Filesystem& fs, const std::string& workspace_dir);

// Convenience: read, parse and validate.
Result<TargetGraph> LoadGraph(Filesystem& fs, const RuleRegistry& rules,
                              const std::string& benchfile);

}  // namespace bm::engine
