#include "engine/report/report_table.h"

#include <fmt/format.h>

#include <cctype>

#include "engine/report/metrics_view.h"
#include "engine/report/number_format.h"

namespace bm::report {
namespace {

std::optional<Stat> Over(const MeasuredTarget& t, std::string_view path) {
  std::vector<double> values;
  for (const Measurement& m : t.measurements) {
    if (auto v = NumberAt(m.metrics, path)) values.push_back(*v);
  }
  return Summarize(std::move(values));
}

constexpr RowFigure kRowFigures[] = {
    {"throughput.tokens_per_device_per_s", &ReportRow::tokens_per_device_per_s},
    {"throughput.step_ms_median", &ReportRow::step_ms},
    {"mfu.6N", &ReportRow::mfu_6n},
    {"mfu.palm", &ReportRow::mfu_palm},
    {"memory.peak_bytes", &ReportRow::mem_peak_bytes},
    {"memory.device_total_bytes", &ReportRow::mem_total_bytes},
    {"loss.final", &ReportRow::loss},
    {"energy.joules_per_token", &ReportRow::joules_per_token},
    {"energy.watts_per_device", &ReportRow::watts_per_device},
    {"eval.val_loss", &ReportRow::val_loss},
    {"eval.perplexity", &ReportRow::perplexity},
    {"eval.accuracy", &ReportRow::accuracy},
    {"eval.exact_match", &ReportRow::exact_match},
    {"eval.quality.value", &ReportRow::quality},
    {"mlperf.time_to_train_s", &ReportRow::time_to_train_s}};

}  // namespace

std::span<const RowFigure> RowFigures() { return kRowFigures; }

ReportRow BuildRow(const MeasuredTarget& t) {
  ReportRow row;
  row.target = t.target;
  row.rule = t.rule;
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json& newest = t.measurements.empty() ? kEmpty : t.measurements.back().metrics;
  row.trainer = TrainerName(newest);
  row.device = DeviceName(newest);
  row.devices = DeviceCount(newest);
  row.parallel = ParallelLayout(newest);
  row.fix_hp = FixHp(newest);
  row.eval_task = StringAt(newest, "eval.task").value_or("");

  for (const RowFigure& f : RowFigures()) row.*f.field = Over(t, f.path);
  if (row.val_loss || row.accuracy) row.quality.reset();  // shown as a loss or an accuracy
  row.quality_metric = StringAt(newest, "eval.quality.metric").value_or("");
  row.quality_target = NumberAt(newest, "eval.quality.target");
  if (const nlohmann::json* h = ValueAt(newest, "eval.quality.higher_is_better");
      h != nullptr && h->is_boolean())
    row.quality_higher_is_better = h->get<bool>();

  std::vector<std::optional<double>> runs;
  for (const Measurement& m : t.measurements) {
    if (const nlohmann::json* r = ValueAt(m.metrics, "mlperf"); r != nullptr && r->is_object())
      runs.push_back(NumberAt(m.metrics, "mlperf.time_to_train_s"));
  }
  if (!runs.empty())
    row.mlperf_score = ScoreMlperfRuns(StringAt(newest, "mlperf.benchmark").value_or(""), runs);

  for (const Measurement& m : t.measurements) {
    switch (m.provenance.origin) {
      case Origin::kFresh:
        ++row.fresh;
        break;
      case Origin::kRestored:
        ++row.restored;
        break;
      case Origin::kFile:
        ++row.from_file;
        break;
    }
    row.provenance.push_back(m.provenance);
  }
  return row;
}

std::vector<ReportRow> BuildRows(const std::vector<MeasuredTarget>& targets) {
  std::vector<ReportRow> rows;
  rows.reserve(targets.size());
  for (const MeasuredTarget& t : targets) rows.push_back(BuildRow(t));
  return rows;
}

std::string PlatformText(const ReportRow& row) {
  if (row.devices <= 0) return row.device;
  return fmt::format("{}\u00d7{}", row.device.empty() ? "?" : row.device, row.devices);
}

std::string OriginText(const ReportRow& row) {
  struct Part {
    int count;
    Origin origin;
  };
  Part parts[] = {{row.fresh, Origin::kFresh},
                  {row.restored, Origin::kRestored},
                  {row.from_file, Origin::kFile}};
  int kinds = 0;
  for (const Part& p : parts) kinds += p.count > 0 ? 1 : 0;
  std::string out;
  for (const Part& p : parts) {
    if (p.count == 0) continue;
    if (!out.empty()) out += " + ";
    out += kinds == 1 ? std::string(OriginName(p.origin))
                      : fmt::format("{} {}", p.count, OriginName(p.origin));
  }
  return out;
}

std::string EvalText(const ReportRow& row) {
  std::string out;
  auto add = [&](const char* label, Quantity q, const std::optional<Stat>& s) {
    if (!s) return;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {}", label, FormatStat(q, *s));
  };
  add("val", Quantity::kLoss, row.val_loss);
  add("ppl", Quantity::kPerplexity, row.perplexity);
  add("acc", Quantity::kAccuracy, row.accuracy);
  add("em", Quantity::kAccuracy, row.exact_match);
  add(row.quality_metric.empty() ? "quality" : row.quality_metric.c_str(), Quantity::kScore,
      row.quality);
  if (!out.empty() && row.quality_target) {
    const Quantity q = row.val_loss   ? Quantity::kLoss
                       : row.accuracy ? Quantity::kAccuracy
                                      : Quantity::kScore;
    const char* side = !row.quality_higher_is_better   ? ""
                       : *row.quality_higher_is_better ? "\u2265"
                                                       : "\u2264";
    out += fmt::format(", target {}{}", side, FormatValue(q, *row.quality_target));
  }
  if (!out.empty() && !row.eval_task.empty()) out += fmt::format(" ({})", row.eval_task);
  return out;
}

std::string TimeToTrainText(const ReportRow& row) {
  if (!row.time_to_train_s) return "";
  const std::optional<MlperfScore>& s = row.mlperf_score;
  if (!s || !s->seconds) return FormatStat(Quantity::kMinutes, *row.time_to_train_s);
  std::string detail;
  const Stat& t = *row.time_to_train_s;
  if (t.varies()) {
    detail = fmt::format("{}\u2013{}; ", FormatValue(Quantity::kMinutes, t.min),
                         FormatValue(Quantity::kMinutes, t.max));
  }
  detail += s->required > s->runs ? fmt::format("{} of {} runs", s->runs, s->required)
                                  : fmt::format("{} runs", s->runs);
  if (s->not_converged > 0) detail += fmt::format(", {} not converged", s->not_converged);
  return fmt::format("{} ({})", FormatValue(Quantity::kMinutes, *s->seconds), detail);
}

std::string MemText(const ReportRow& row) {
  if (!row.mem_peak_bytes) return "";
  std::string total =
      row.mem_total_bytes ? FormatValue(Quantity::kGiB, row.mem_total_bytes->median) : "?";
  std::string text = FormatStat(Quantity::kGiB, *row.mem_peak_bytes) + "/" + total;
  return IsHostRun(row) ? text + " host" : text;
}

bool IsHostRun(const ReportRow& row) {
  std::string device = row.device;
  for (char& c : device) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return device == "cpu";
}

}  // namespace bm::report
