// Staleness: a pure function from what is known about a target to a verdict
// and the reasons for it (STYLE §2). `benchmake step` acts on the verdict;
// `explain` and `status` print it. No I/O here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/key_material.h"
#include "engine/target_state.h"

namespace bm::engine {

enum class Verdict {
  kUpToDate,  // out/NAME holds the outputs of the current key
  kRestore,   // the cache holds the current key: materialize, run nothing
  kRun,       // run the rule
  kPending,   // an upstream will run first; decided once its output is known
};
std::string_view VerdictName(Verdict v);  // "up to date", "restore from cache", ...

struct TargetFacts {
  KeyMaterial material;              // current; `input` values "" when pending
  std::vector<std::string> pending;  // upstreams whose output is not known yet
  std::optional<LastBuild> last;     // last materialization in this workspace
  bool outputs_present = false;      // out/NAME still matches `last`
  bool in_cache = false;             // the action cache holds material.Key()
};

struct Staleness {
  Verdict verdict = Verdict::kRun;
  std::vector<std::string> reasons;  // empty when up to date
};

Staleness Assess(const TargetFacts& facts);

}  // namespace bm::engine
