#include "rules/registry.h"

#include "rules/download.h"
#include "rules/exec.h"
#include "rules/llava/llava_data.h"
#include "rules/llava/mmmu_data.h"
#include "rules/tokenize.h"
#include "rules/train_rules.h"

namespace bm::rules {

void RegisterBuiltinRules(engine::RuleRegistry& registry) {
  registry.Register(MakeDownloadRule());
  registry.Register(MakeExecRule());
  registry.Register(MakeTokenizeRule());
  registry.Register(llava::MakeLlavaImagesRule());
  registry.Register(llava::MakeLlavaDataRule());
  registry.Register(llava::MakeMmmuDataRule());
  registry.Register(MakePretrainRule());
  registry.Register(MakeFinetuneRule());
  registry.Register(MakeEvaluateRule());
  registry.Register(MakeMeasureRule());
}

}  // namespace bm::rules
