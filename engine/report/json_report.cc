#include "engine/report/json_report.h"

namespace bm::report {
namespace {

void Put(nlohmann::json& metrics, const char* name, const std::optional<Stat>& s) {
  if (!s) return;
  metrics[name] = {{"median", s->median}, {"min", s->min}, {"max", s->max}, {"n", s->n}};
}

}  // namespace

nlohmann::json ReportJson(const std::vector<ReportRow>& rows) {
  nlohmann::json out = {{"format", "benchmake-report"}, {"version", 1}};
  nlohmann::json& list = out["rows"] = nlohmann::json::array();
  for (const ReportRow& r : rows) {
    nlohmann::json metrics = nlohmann::json::object();
    Put(metrics, "tokens_per_device_per_s", r.tokens_per_device_per_s);
    Put(metrics, "step_ms", r.step_ms);
    Put(metrics, "mfu_6n", r.mfu_6n);
    Put(metrics, "mfu_palm", r.mfu_palm);
    Put(metrics, "mem_peak_bytes", r.mem_peak_bytes);
    Put(metrics, "mem_total_bytes", r.mem_total_bytes);
    Put(metrics, "loss", r.loss);
    Put(metrics, "joules_per_token", r.joules_per_token);
    Put(metrics, "watts_per_device", r.watts_per_device);
    Put(metrics, "val_loss", r.val_loss);
    Put(metrics, "perplexity", r.perplexity);
    Put(metrics, "accuracy", r.accuracy);
    Put(metrics, "exact_match", r.exact_match);
    Put(metrics, "quality", r.quality);
    Put(metrics, "time_to_train_s", r.time_to_train_s);
    nlohmann::json measurements = nlohmann::json::array();
    for (const Provenance& p : r.provenance) {
      measurements.push_back({{"origin", std::string(OriginName(p.origin))},
                              {"host", p.host},
                              {"measured_at", p.measured_at},
                              {"trainer_build", p.trainer_build},
                              {"source", p.source}});
    }
    list.push_back({{"target", r.target},
                    {"rule", r.rule},
                    {"trainer", r.trainer},
                    {"platform", {{"device", r.device}, {"devices", r.devices}}},
                    {"parallel", r.parallel},
                    {"fix_hp", r.fix_hp},
                    {"rounds", r.rounds()},
                    {"origins", {{"fresh", r.fresh}, {"cache", r.restored}, {"file", r.from_file}}},
                    {"metrics", std::move(metrics)},
                    {"eval_task", r.eval_task},
                    {"measurements", std::move(measurements)}});
    if (const std::optional<MlperfScore>& s = r.mlperf_score) {
      list.back()["mlperf_score"] = {
          {"time_to_train_s", s->seconds ? nlohmann::json(*s->seconds) : nlohmann::json(nullptr)},
          {"runs", s->runs},
          {"not_converged", s->not_converged},
          {"required", s->required > 0 ? nlohmann::json(s->required) : nlohmann::json(nullptr)}};
    }
    if (!r.quality_metric.empty() || r.quality_target) {
      auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
      list.back()["quality"] = {
          {"metric",
           r.quality_metric.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.quality_metric)},
          {"target", or_null(r.quality_target)},
          {"higher_is_better", or_null(r.quality_higher_is_better)}};
    }
  }
  return out;
}

std::string RenderJson(const std::vector<ReportRow>& rows) {
  return ReportJson(rows).dump(2) + "\n";
}

}  // namespace bm::report
