// The pretrain rule (docs/TRAINER.md): platform-dependent; launches benchmake-train.
#pragma once

#include <memory>

#include "engine/rule.h"

namespace bm::rules {

std::unique_ptr<engine::Rule> MakePretrainRule();

}  // namespace bm::rules
