// The finetune rule: runs benchmake-train (rules/train_common.h, docs/TRAINER.md).
#include "rules/finetune.h"

#include "rules/train_common.h"

namespace bm::rules {
namespace {

class FinetuneRule : public engine::Rule {
 public:
  FinetuneRule() : params_(TrainParams(TrainKind::kFinetune)) {}

  std::string_view name() const override { return "finetune"; }
  int version() const override { return 1; }
  const std::vector<engine::ParamSpec>& params() const override { return params_; }
  bool platform_dependent() const override { return true; }
  int gpus(const nlohmann::json& p) const override { return TrainGpus(p); }
  bool streams_progress(const nlohmann::json& p) const override {
    return p.value("progress", true);
  }
  std::vector<engine::ParamError> Check(const nlohmann::json& p) const override {
    return CheckTrainParams(TrainKind::kFinetune, p);
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    return RunTrainer(TrainKind::kFinetune, ctx);
  }

 private:
  std::vector<engine::ParamSpec> params_;
};

}  // namespace

std::unique_ptr<engine::Rule> MakeFinetuneRule() { return std::make_unique<FinetuneRule>(); }

}  // namespace bm::rules
