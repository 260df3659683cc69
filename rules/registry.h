// The built-in rules, registered by name. Adding a step kind: one file in
// rules/ and one line in registry.cc.
#pragma once

#include "engine/rule.h"

namespace bm::rules {

void RegisterBuiltinRules(engine::RuleRegistry& registry);

}  // namespace bm::rules
