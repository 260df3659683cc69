#include "engine/rule.h"

namespace bm::engine {

std::string_view ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "a string";
    case ParamType::kInt:
      return "an integer";
    case ParamType::kFloat:
      return "a number";
    case ParamType::kBool:
      return "a boolean";
    case ParamType::kStringList:
      return "a list of strings";
    case ParamType::kStringMap:
      return "a table of strings";
    case ParamType::kTable:
      return "a table";
    case ParamType::kInput:
      return "an input (target name or file path)";
    case ParamType::kInputList:
      return "a list of inputs (target names or file paths)";
  }
  return "?";
}

void RuleRegistry::Register(std::unique_ptr<Rule> rule) {
  std::string name(rule->name());
  rules_[name] = std::move(rule);
}

const Rule* RuleRegistry::Find(std::string_view name) const {
  auto it = rules_.find(name);
  return it == rules_.end() ? nullptr : it->second.get();
}

std::vector<std::string> RuleRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, rule] : rules_) names.push_back(name);
  return names;
}

}  // namespace bm::engine
