#include "engine/report/csv.h"

#include <fmt/format.h>

#include "engine/report/number_format.h"

namespace bm::report {
namespace {

std::string Num(const std::optional<Stat>& s, Quantity q) {
  return s ? FormatPlain(q, s->median) : "";
}
std::string Min(const std::optional<Stat>& s, Quantity q) {
  return s ? FormatPlain(q, s->min) : "";
}
std::string Max(const std::optional<Stat>& s, Quantity q) {
  return s ? FormatPlain(q, s->max) : "";
}

}  // namespace

std::string CsvField(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string RenderCsv(const std::vector<ReportRow>& rows) {
  static const char* kHeader =
      "target,rule,trainer,device,devices,parallel,fix_hp,rounds,fresh,cache,file,"
      "tokens_per_device_per_s,tokens_per_device_per_s_min,tokens_per_device_per_s_max,"
      "mfu_6n_pct,mfu_6n_pct_min,mfu_6n_pct_max,mfu_palm_pct,mfu_palm_pct_min,"
      "mfu_palm_pct_max,mem_peak_gib,mem_peak_gib_min,mem_peak_gib_max,mem_total_gib,"
      "step_ms,loss,energy_mj_per_token,watts_per_device,val_loss,perplexity,accuracy_pct,"
      "exact_match_pct,quality,quality_metric,quality_target,eval_task,time_to_train_min,"
      "mlperf_score_min,mlperf_runs,host,measured_at,trainer_build\n";
  std::string out = kHeader;
  for (const ReportRow& r : rows) {
    Provenance newest = r.provenance.empty() ? Provenance{} : r.provenance.back();
    std::vector<std::string> f = {
        r.target,
        r.rule,
        r.trainer,
        r.device,
        r.devices > 0 ? fmt::format("{}", r.devices) : "",
        r.parallel,
        r.fix_hp,
        fmt::format("{}", r.rounds()),
        fmt::format("{}", r.fresh),
        fmt::format("{}", r.restored),
        fmt::format("{}", r.from_file),
        Num(r.tokens_per_device_per_s, Quantity::kTokensPerS),
        Min(r.tokens_per_device_per_s, Quantity::kTokensPerS),
        Max(r.tokens_per_device_per_s, Quantity::kTokensPerS),
        Num(r.mfu_6n, Quantity::kMfu),
        Min(r.mfu_6n, Quantity::kMfu),
        Max(r.mfu_6n, Quantity::kMfu),
        Num(r.mfu_palm, Quantity::kMfu),
        Min(r.mfu_palm, Quantity::kMfu),
        Max(r.mfu_palm, Quantity::kMfu),
        Num(r.mem_peak_bytes, Quantity::kGiB),
        Min(r.mem_peak_bytes, Quantity::kGiB),
        Max(r.mem_peak_bytes, Quantity::kGiB),
        Num(r.mem_total_bytes, Quantity::kGiB),
        Num(r.step_ms, Quantity::kMs),
        Num(r.loss, Quantity::kLoss),
        Num(r.joules_per_token, Quantity::kJoulesPerToken),
        Num(r.watts_per_device, Quantity::kWatts),
        Num(r.val_loss, Quantity::kLoss),
        Num(r.perplexity, Quantity::kPerplexity),
        Num(r.accuracy, Quantity::kAccuracy),
        Num(r.exact_match, Quantity::kAccuracy),
        Num(r.quality, Quantity::kScore),
        r.quality_metric,
        r.quality_target ? FormatPlain(Quantity::kScore, *r.quality_target) : "",
        r.eval_task,
        Num(r.time_to_train_s, Quantity::kMinutes),
        r.mlperf_score && r.mlperf_score->seconds
            ? FormatPlain(Quantity::kMinutes, *r.mlperf_score->seconds)
            : "",
        r.mlperf_score ? fmt::format("{}", r.mlperf_score->runs) : "",
        newest.host,
        newest.measured_at,
        newest.trainer_build,
    };
    for (size_t i = 0; i < f.size(); ++i) {
      if (i > 0) out += ',';
      out += CsvField(f[i]);
    }
    out += '\n';
  }
  return out;
}

}  // namespace bm::report
