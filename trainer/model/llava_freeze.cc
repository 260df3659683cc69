#include "trainer/model/llava_freeze.h"

#include <fmt/format.h>

namespace bm::train {

std::vector<std::string> LlavaFreeze::Names() const {
  std::vector<std::string> names;
  if (vision_tower) names.push_back("vision_tower");
  if (projector) names.push_back("projector");
  if (language_model) names.push_back("language_model");
  return names;
}

Result<LlavaFreeze> LlavaFreezeForStage(std::string_view stage) {
  if (stage == "pretrain") return LlavaFreeze{true, false, true};
  if (stage == "finetune") return LlavaFreeze{true, false, false};
  if (stage == "full") return LlavaFreeze{};
  return Errorf(ErrorCode::kInvalidArgument,
                "llava_stage '{}': one of pretrain (only the projector trains), finetune (the "
                "projector and the language model), full (everything)",
                stage);
}

Result<LlavaFreeze> LlavaFreezeFromNames(const std::vector<std::string>& names) {
  LlavaFreeze f;
  for (const std::string& name : names) {
    bool* part = name == "vision_tower"     ? &f.vision_tower
                 : name == "projector"      ? &f.projector
                 : name == "language_model" ? &f.language_model
                                            : nullptr;
    if (!part)
      return Errorf(ErrorCode::kInvalidArgument,
                    "freeze: unknown part '{}' (vision_tower, projector, "
                    "language_model)",
                    name);
    if (*part) return Errorf(ErrorCode::kInvalidArgument, "freeze: '{}' named twice", name);
    *part = true;
  }
  BM_TRY(Validate(f));
  return f;
}

Status Validate(const LlavaFreeze& f) {
  if (f.vision_tower && f.projector && f.language_model)
    return Status(ErrorCode::kInvalidArgument,
                  "freeze: every part is frozen (vision_tower, projector, "
                  "language_model): nothing would train");
  if (f.projector && !f.vision_tower)
    return Status(ErrorCode::kUnsupported,
                  "freeze: a frozen projector under a training vision_tower is not "
                  "supported (freeze the vision_tower too)");
  return Status::Ok();
}

}  // namespace bm::train
