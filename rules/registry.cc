#include "rules/registry.h"

#include "rules/evaluate.h"
#include "rules/exec.h"
#include "rules/finetune.h"
#include "rules/pretrain.h"

namespace bm::rules {

void RegisterBuiltinRules(engine::RuleRegistry& registry) {
  registry.Register(MakeExecRule());
  registry.Register(MakePretrainRule());
  registry.Register(MakeFinetuneRule());
  registry.Register(MakeEvaluateRule());
  // One line per rule: registry.Register(MakeTokenizeRule()); ...
}

}  // namespace bm::rules
