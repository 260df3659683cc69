#include "rules/registry.h"

#include "rules/exec.h"

namespace bm::rules {

void RegisterBuiltinRules(engine::RuleRegistry& registry) {
  registry.Register(MakeExecRule());
  registry.Register(MakeMeasureRule());
  // One line per rule: registry.Register(MakeTokenizeRule()); ...
}

}  // namespace bm::rules
