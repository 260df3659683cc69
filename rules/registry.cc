#include "rules/registry.h"

#include "rules/download.h"
#include "rules/evaluate.h"
#include "rules/exec.h"
#include "rules/finetune.h"
#include "rules/pretrain.h"
#include "rules/tokenize.h"

namespace bm::rules {

void RegisterBuiltinRules(engine::RuleRegistry& registry) {
  registry.Register(MakeDownloadRule());
  registry.Register(MakeExecRule());
  registry.Register(MakeTokenizeRule());
  registry.Register(MakePretrainRule());
  registry.Register(MakeFinetuneRule());
  registry.Register(MakeEvaluateRule());
  registry.Register(MakeMeasureRule());
}

}  // namespace bm::rules
