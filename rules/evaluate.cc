// The evaluate rule: runs benchmake-train (rules/train_common.h, docs/TRAINER.md).
#include "rules/evaluate.h"

#include "rules/train_common.h"

namespace bm::rules {
namespace {

class EvaluateRule : public engine::Rule {
 public:
  EvaluateRule() : params_(TrainParams(TrainKind::kEvaluate)) {}

  std::string_view name() const override { return "evaluate"; }
  int version() const override { return 1; }
  const std::vector<engine::ParamSpec>& params() const override { return params_; }
  bool platform_dependent() const override { return true; }
  int gpus(const nlohmann::json& p) const override { return TrainGpus(p); }
  bool streams_progress(const nlohmann::json& p) const override {
    return p.value("progress", true);
  }
  std::vector<engine::ParamError> Check(const nlohmann::json& p) const override {
    return CheckTrainParams(TrainKind::kEvaluate, p);
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    return RunTrainer(TrainKind::kEvaluate, ctx);
  }

 private:
  std::vector<engine::ParamSpec> params_;
};

}  // namespace

std::unique_ptr<engine::Rule> MakeEvaluateRule() { return std::make_unique<EvaluateRule>(); }

}  // namespace bm::rules
