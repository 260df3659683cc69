// Rules for engine unit tests: `count` writes "<steps>" to {out}/result.txt
// through the Filesystem (no process), with a key parameter (lbs, steps), a
// non-key one (log_every), and a platform-dependent twin `measure`.
#pragma once

#include <memory>

#include "engine/rule.h"

namespace bm::testing {

class CountRule : public engine::Rule {
 public:
  explicit CountRule(bool platform_dependent = false) : platform_(platform_dependent) {
    using engine::ParamType;
    params_ = {
        {"steps", ParamType::kInt, nlohmann::json(10), "steps", true},
        {"lbs", ParamType::kInt, nlohmann::json(4), "micro batch", true},
        {"lr", ParamType::kFloat, nlohmann::json(0.1), "learning rate", true},
        {"log_every", ParamType::kInt, nlohmann::json(1), "not in the key", false},
        {"data", ParamType::kInputList, nlohmann::json::array(), "inputs", true},
    };
  }
  std::string_view name() const override { return platform_ ? "measure" : "count"; }
  int version() const override { return 1; }
  const std::vector<engine::ParamSpec>& params() const override { return params_; }
  bool platform_dependent() const override { return platform_; }
  std::vector<engine::ParamError> Check(const nlohmann::json& p) const override {
    if (p["steps"].get<int64_t>() < 0) return {{"steps", "steps must be >= 0"}};
    return {};
  }
  Result<engine::StepResult> Run(engine::StepContext& ctx) const override {
    ++runs;
    std::string text = ctx.params["steps"].dump() + " " + ctx.params["lbs"].dump();
    for (const auto& [name, path] : ctx.inputs) {
      Result<FileInfo> info = ctx.fs->Stat(path);
      text += " " + name + (info.ok() && info->exists ? "+" : "-");
    }
    BM_TRY(ctx.fs->WriteFileAtomic(ctx.out_dir + "/result.txt", text));
    engine::StepResult r;
    r.metrics = {{"steps", ctx.params["steps"]},
                 {"platform", measured_platform.is_null() ? ctx.platform : measured_platform}};
    return r;
  }
  mutable int runs = 0;
  // What a run reports as the platform it ran on (metrics.json's "platform"):
  // when null, the facts in its key.
  nlohmann::json measured_platform;

 private:
  bool platform_;
  std::vector<engine::ParamSpec> params_;
};

}  // namespace bm::testing
