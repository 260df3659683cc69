#include "rules/train_rules.h"

#include "rules/train_common.h"

namespace bm::rules {
namespace {

class TrainRule : public engine::Rule {
 public:
  TrainRule(TrainKind kind, std::string_view name)
      : kind_(kind), name_(name), params_(TrainParams(kind)) {}

  std::string_view name() const override { return name_; }
  int version() const override { return 1; }
  const std::vector<engine::ParamSpec>& params() const override { return params_; }
  bool platform_dependent() const override { return true; }
  int gpus(const nlohmann::json& p) const override { return TrainGpus(p); }
  int ranks(const nlohmann::json& p) const override { return TrainWorldSize(p); }
  bool placeable() const override { return true; }
  bool streams_progress(const nlohmann::json& p) const override {
    return p.value("progress", true);
  }
  std::vector<engine::ParamError> Check(const nlohmann::json& p) const override {
    return CheckTrainParams(kind_, p);
  }
  nlohmann::json OutputFacts(const nlohmann::json& p,
                             const std::vector<engine::UpstreamInput>& in) const override {
    return TrainOutputFacts(kind_, p, in);
  }
  std::vector<engine::ParamError> CheckInputs(
      const nlohmann::json& p, const std::vector<engine::UpstreamInput>& in) const override {
    return CheckTrainInputs(kind_, p, in);
  }
  std::vector<std::string> Unsupported(const nlohmann::json& p) const override {
    return TrainUnsupported(kind_, p);
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    return RunTrainer(kind_, ctx);
  }

 private:
  TrainKind kind_;
  std::string_view name_;
  std::vector<engine::ParamSpec> params_;
};

}  // namespace

std::unique_ptr<engine::Rule> MakePretrainRule() {
  return std::make_unique<TrainRule>(TrainKind::kPretrain, "pretrain");
}
std::unique_ptr<engine::Rule> MakeFinetuneRule() {
  return std::make_unique<TrainRule>(TrainKind::kFinetune, "finetune");
}
std::unique_ptr<engine::Rule> MakeEvaluateRule() {
  return std::make_unique<TrainRule>(TrainKind::kEvaluate, "evaluate");
}

}  // namespace bm::rules
