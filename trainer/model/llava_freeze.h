// LlavaFreeze: which parts of a LLaVA model do not train — LLaVA-1.5's two
// training stages. A frozen part gets no gradient buffer, no AdamW state and
// no data-parallel reduction or ZeRO shard; its weights stay as loaded, bit for
// bit (trainer/cpu/llava_trainer.h).
//
//   stage "pretrain"  (feature alignment)  frozen: vision_tower, language_model
//   stage "finetune"  (visual instruction) frozen: vision_tower
//   stage "full"                           nothing frozen
//
// LLaVA's own train.py flags map onto the parts (llava-hf names): its vision
// tower is always frozen (CLIPVisionTower.requires_grad_(False));
// --tune_mm_mlp_adapter True (pretrain.sh) freezes the whole model but the
// projector = stage "pretrain"; --freeze_backbone freezes the language model;
// --freeze_mm_mlp_adapter freezes the projector; neither (finetune.sh) =
// stage "finetune".
//
// Supported: any set that leaves something to train, except a frozen
// projector under a training tower (the projector's backward would have to
// run without weight gradients: not implemented, refused by name).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace bm::train {

struct LlavaFreeze {
  bool vision_tower = false;
  bool projector = false;
  bool language_model = false;

  bool any() const { return vision_tower || projector || language_model; }
  bool operator==(const LlavaFreeze&) const = default;
  // The part names frozen, in model order ("vision_tower", "projector",
  // "language_model").
  std::vector<std::string> Names() const;
};

// A stage name as above; kInvalidArgument naming the known ones otherwise.
Result<LlavaFreeze> LlavaFreezeForStage(std::string_view stage);
// Part names (llava-hf's module names), each at most once; kInvalidArgument
// for an unknown or repeated name. Then Validate.
Result<LlavaFreeze> LlavaFreezeFromNames(const std::vector<std::string>& names);
// kInvalidArgument when everything is frozen; kUnsupported for a frozen
// projector under a training vision tower.
Status Validate(const LlavaFreeze& freeze);

}  // namespace bm::train
