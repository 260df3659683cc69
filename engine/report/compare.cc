#include "engine/report/compare.h"

#include <fmt/format.h>

#include <map>

#include "engine/report/metrics_view.h"
#include "engine/report/report_table.h"

namespace bm::report {
namespace {

const Measurement* NewestWithCurve(const MeasuredTarget& t) {
  for (auto it = t.measurements.rbegin(); it != t.measurements.rend(); ++it) {
    if (!it->losses.empty()) return &*it;
  }
  return nullptr;
}

void Flatten(const nlohmann::json& node, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      Flatten(it.value(), prefix + "." + it.key(), out);
    }
    return;
  }
  out[prefix] = ScalarText(node);
}

std::map<std::string, std::string> Settings(const nlohmann::json& metrics) {
  std::map<std::string, std::string> out;
  for (const char* section : {"config", "model"}) {
    if (const nlohmann::json* s = ValueAt(metrics, section)) Flatten(*s, section, out);
  }
  return out;
}

std::map<std::string, std::string> PlatformFacts(const nlohmann::json& metrics) {
  std::map<std::string, std::string> out;
  int count = DeviceCount(metrics);
  std::string device = DeviceName(metrics);
  out["platform"] = count > 0 ? fmt::format("{}\u00d7{}", device, count) : device;
  if (std::string trainer = TrainerName(metrics); !trainer.empty()) out["trainer"] = trainer;
  for (const char* path : {"platform.driver", "platform.cuda", "platform.blas.version",
                           "platform.blas.core", "provenance.trainer_build"}) {
    if (auto s = StringAt(metrics, path)) out[path] = *s;
  }
  return out;
}

const std::string kAbsent = "(absent)";

void Diff(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b,
          bool platform, std::vector<Difference>& out) {
  std::map<std::string, std::pair<std::string, std::string>> both;
  for (const auto& [k, v] : a) both[k] = {v, kAbsent};
  for (const auto& [k, v] : b) {
    auto it = both.find(k);
    if (it == both.end()) {
      both[k] = {kAbsent, v};
    } else {
      it->second.second = v;
    }
  }
  for (const auto& [k, v] : both) {
    if (v.first != v.second) out.push_back({k, v.first, v.second, platform});
  }
}

std::optional<double> Median(const std::optional<Stat>& s) {
  return s ? std::optional<double>(s->median) : std::nullopt;
}

// Each run's eval.quality.reached, nullopt when either does not say.
std::optional<Comparison::QualityCheck> QualityTargets(const Comparison& c, const ReportRow& ra,
                                                       const ReportRow& rb,
                                                       const nlohmann::json& ma,
                                                       const nlohmann::json& mb) {
  const nlohmann::json* a = ValueAt(ma, "eval.quality.reached");
  const nlohmann::json* b = ValueAt(mb, "eval.quality.reached");
  if (a == nullptr || b == nullptr || !a->is_boolean() || !b->is_boolean()) return std::nullopt;
  const std::string evals =
      fmt::format("{}: {}; {}: {}", c.a_label, EvalText(ra), c.b_label, EvalText(rb));
  if (a->get<bool>() && b->get<bool>()) {
    return Comparison::QualityCheck{
        true, fmt::format("QUALITY REACHED: both runs reached their quality target, what MLPerf "
                          "checks of a run read by its time to train (no loss curve to align). {}.",
                          evals)};
  }
  const std::string missed =
      !a->get<bool>() && !b->get<bool>()
          ? "neither run reached its quality target"
          : fmt::format("{} did not reach its quality target in any evaluation",
                        a->get<bool>() ? c.b_label : c.a_label);
  return Comparison::QualityCheck{false,
                                  fmt::format("QUALITY NOT REACHED: {}. {}.", missed, evals)};
}

}  // namespace

Comparison Compare(const MeasuredTarget& a, const MeasuredTarget& b,
                   const AlignmentOptions& options) {
  Comparison c;
  c.a_label = a.target;
  c.b_label = b.target;
  ReportRow ra = BuildRow(a), rb = BuildRow(b);
  auto add = [&](const char* name, const char* id, Quantity q,
                 std::optional<Stat> ReportRow::*field) {
    std::optional<double> va = Median(ra.*field), vb = Median(rb.*field);
    if (va || vb) c.metrics.push_back({name, id, q, va, vb});
  };
  add("token/p/s", "tokens_per_device_per_s", Quantity::kTokensPerS,
      &ReportRow::tokens_per_device_per_s);
  add("step ms", "step_ms", Quantity::kMs, &ReportRow::step_ms);
  add("MFU (6N)", "mfu_6n", Quantity::kMfu, &ReportRow::mfu_6n);
  add("MFU (PaLM)", "mfu_palm", Quantity::kMfu, &ReportRow::mfu_palm);
  add("mem peak (GiB)", "mem_peak_bytes", Quantity::kGiB, &ReportRow::mem_peak_bytes);
  add("loss", "loss", Quantity::kLoss, &ReportRow::loss);
  add("energy (mJ/token)", "joules_per_token", Quantity::kJoulesPerToken,
      &ReportRow::joules_per_token);
  add("power (W/device)", "watts_per_device", Quantity::kWatts, &ReportRow::watts_per_device);
  add("val loss", "val_loss", Quantity::kLoss, &ReportRow::val_loss);
  add("perplexity", "perplexity", Quantity::kPerplexity, &ReportRow::perplexity);
  add("accuracy", "accuracy", Quantity::kAccuracy, &ReportRow::accuracy);
  add("exact match", "exact_match", Quantity::kAccuracy, &ReportRow::exact_match);
  const std::string quality = fmt::format(
      "quality ({})", ra.quality_metric.empty() ? rb.quality_metric : ra.quality_metric);
  add(quality.c_str(), "quality", Quantity::kScore, &ReportRow::quality);
  add("time to train (min)", "time_to_train_s", Quantity::kMinutes, &ReportRow::time_to_train_s);
  auto score = [](const ReportRow& r) {
    return r.mlperf_score ? r.mlperf_score->seconds : std::nullopt;
  };
  if (score(ra) || score(rb)) {
    c.metrics.push_back(
        {"MLPerf score (min)", "mlperf_score_s", Quantity::kMinutes, score(ra), score(rb)});
  }

  const nlohmann::json& ma = a.measurements.back().metrics;
  const nlohmann::json& mb = b.measurements.back().metrics;
  Diff(Settings(ma), Settings(mb), false, c.differences);
  Diff(PlatformFacts(ma), PlatformFacts(mb), true, c.differences);

  const Measurement* ca = NewestWithCurve(a);
  const Measurement* cb = NewestWithCurve(b);
  if (ca == nullptr || cb == nullptr) {
    c.alignment_note =
        fmt::format("{} has no loss curve (log.jsonl)", ca == nullptr ? c.a_label : c.b_label);
    c.quality = QualityTargets(c, ra, rb, ma, mb);
    return c;
  }
  Result<Alignment> al = CheckLossAlignment(ca->losses, cb->losses, options);
  if (al.ok()) {
    c.alignment = *al;
  } else {
    c.alignment_note = al.status().message();
  }
  return c;
}

std::string Comparison::Verdict() const {
  if (!alignment && quality) return quality->verdict;
  if (!alignment) return "loss alignment not checked: " + alignment_note;
  const Alignment& al = *alignment;
  std::string head = fmt::format(
      "{}: mean relative loss difference {} over steps {}\u2013{} ({} steps) is {} the "
      "tolerance {}; largest relative gap {} at step {}",
      al.pass ? "ALIGNED" : "NOT ALIGNED", FormatValue(Quantity::kRelDiff, al.mean_rel_diff),
      al.first_step, al.last_step, al.compared_steps, al.pass ? "below" : "not below",
      FormatValue(Quantity::kRelDiff, al.options.tolerance),
      FormatValue(Quantity::kRelDiff, al.largest.rel_diff), al.largest.step);
  if (al.pass) return head + ".";
  // A setting one side does not report (an external trainer's log says less
  // than benchmake-train) is unknown, not a known cause.
  auto known = [](const std::string& v) { return v != kAbsent && v != "null"; };
  std::vector<std::string> settings;
  int one_sided = 0;
  bool platform_differs = false;
  for (const Difference& d : differences) {
    if (d.platform) {
      platform_differs = true;
    } else if (known(d.a) && known(d.b)) {
      settings.push_back(fmt::format("{} {} \u2192 {}", d.field, d.a, d.b));
    } else {
      ++one_sided;
    }
  }
  if (!settings.empty()) {
    std::string list;
    for (const std::string& s : settings) list += (list.empty() ? "" : ", ") + s;
    return head + fmt::format(
                      ". The runs differ in their settings ({}): the curves are expected to "
                      "diverge; align runs of the same configuration.",
                      list);
  }
  if (platform_differs && one_sided > 0) {
    return head + fmt::format(
                      ". The settings both runs report are the same ({} known on one side only) "
                      "and the platform or trainer differs: its numerics (or its kernels) "
                      "change the training beyond the tolerance.",
                      one_sided);
  }
  if (platform_differs) {
    return head +
           ". The settings are the same and only the platform differs: its numerics (or "
           "its kernels) change the training beyond the tolerance.";
  }
  return head +
         ". Settings and platform are the same: the run is not reproducible "
         "(non-deterministic kernels or data order).";
}

}  // namespace bm::report
