// The pretrain rule: runs benchmake-train (rules/train_common.h, docs/TRAINER.md).
#include "rules/pretrain.h"

#include "rules/train_common.h"

namespace bm::rules {
namespace {

class PretrainRule : public engine::Rule {
 public:
  PretrainRule() : params_(TrainParams(TrainKind::kPretrain)) {}

  std::string_view name() const override { return "pretrain"; }
  int version() const override { return 1; }
  const std::vector<engine::ParamSpec>& params() const override { return params_; }
  bool platform_dependent() const override { return true; }
  int gpus(const nlohmann::json& p) const override { return TrainGpus(p); }
  bool streams_progress(const nlohmann::json& p) const override {
    return p.value("progress", true);
  }
  std::vector<engine::ParamError> Check(const nlohmann::json& p) const override {
    return CheckTrainParams(TrainKind::kPretrain, p);
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    return RunTrainer(TrainKind::kPretrain, ctx);
  }

 private:
  std::vector<engine::ParamSpec> params_;
};

}  // namespace

std::unique_ptr<engine::Rule> MakePretrainRule() { return std::make_unique<PretrainRule>(); }

}  // namespace bm::rules
