// A rule's parameters as the engine hands them to it: `params`, then every
// parameter the rule declares with a default and `params` does not set.
// Header-only: the tests that include it already link the engine.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/rule.h"

namespace bm::testing {

inline nlohmann::json WithDefaults(const engine::Rule& rule, nlohmann::json params) {
  for (const engine::ParamSpec& s : rule.params())
    if (!params.contains(s.name) && s.default_value) params[s.name] = *s.default_value;
  return params;
}

}  // namespace bm::testing
