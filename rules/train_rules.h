// The pretrain, finetune and evaluate rules (docs/TRAINER.md): platform-dependent
// steps that launch benchmake-train. They differ only in their parameters and
// run config (rules/train_common.h, by TrainKind), so one class serves all three.
#pragma once

#include <memory>

#include "engine/rule.h"

namespace bm::rules {

std::unique_ptr<engine::Rule> MakePretrainRule();
std::unique_ptr<engine::Rule> MakeFinetuneRule();
std::unique_ptr<engine::Rule> MakeEvaluateRule();

}  // namespace bm::rules
