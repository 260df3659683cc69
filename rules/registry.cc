#include "rules/registry.h"

#include "rules/download.h"
#include "rules/exec.h"
#include "rules/tokenize.h"

namespace bm::rules {

void RegisterBuiltinRules(engine::RuleRegistry& registry) {
  registry.Register(MakeDownloadRule());
  registry.Register(MakeExecRule());
  registry.Register(MakeTokenizeRule());
  // One line per rule: registry.Register(MakeTokenizeRule()); ...
}

}  // namespace bm::rules
