#include "engine/report/workspace_results.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "base/nearest_name.h"
#include "cache/action_record.h"
#include "engine/report/loss_log.h"
#include "engine/report/metrics_view.h"
#include "engine/report/report_args.h"
#include "engine/report/run_files.h"

namespace bm::report {
namespace {

Measurement FromRecord(const nlohmann::json& metrics, const cache::Provenance& p, Origin origin,
                       const std::string& source) {
  Measurement m;
  m.metrics = metrics;
  // Metrics of external commands (exec, measure) rarely name the platform:
  // the engine's platform facts of the run stand in.
  if (m.metrics.is_object() && !m.metrics.contains("platform") && !p.platform.empty()) {
    m.metrics["platform"] = p.platform;
  }
  m.provenance.origin = origin;
  m.provenance.host = p.host;
  m.provenance.measured_at = p.date;
  m.provenance.trainer_build = TrainerBuildOf(metrics, p.platform);
  m.provenance.source = source;
  return m;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool IsTrainerMetrics(const nlohmann::json& metrics) {
  return metrics.is_object() && metrics.value("format", "") == "benchmake-metrics";
}

// Every action record in the local cache whose target is `name`.
Result<std::vector<cache::ActionRecord>> CachedRecordsOf(const engine::Workspace& ws,
                                                         const std::string& name) {
  BM_ASSIGN_OR_RETURN(engine::WorkspaceConfig config, engine::LoadConfig(ws));
  std::string ac = config.cache_dir + "/ac";
  std::vector<cache::ActionRecord> out;
  BM_ASSIGN_OR_RETURN(FileInfo info, ws.fs->Stat(ac));
  if (!info.exists) return out;
  BM_ASSIGN_OR_RETURN(std::vector<std::string> shards, ws.fs->ListDir(ac));
  for (const std::string& shard : shards) {
    Result<std::vector<std::string>> entries = ws.fs->ListDir(ac + "/" + shard);
    if (!entries.ok()) continue;
    for (const std::string& e : *entries) {
      Result<std::string> bytes = ws.fs->ReadFile(ac + "/" + shard + "/" + e);
      if (!bytes.ok()) continue;
      Result<cache::ActionRecord> record = cache::ParseRecord(*bytes);
      if (record.ok() && record->target == name) out.push_back(std::move(*record));
    }
  }
  return out;
}

std::string Describe(const cache::ActionRecord& r) {
  return fmt::format("{} on {} ({}, key {})", DeviceName(r.metrics), r.provenance.host,
                     r.provenance.date, r.key.Hex().substr(0, 12));
}

// NAME@WHERE: the newest cached record of NAME matching WHERE.
Result<MeasuredTarget> FromCache(const engine::Workspace& ws, const std::string& name,
                                 const std::string& where) {
  BM_ASSIGN_OR_RETURN(std::vector<cache::ActionRecord> records, CachedRecordsOf(ws, name));
  const cache::ActionRecord* best = nullptr;
  std::string w = Lower(where);
  for (const cache::ActionRecord& r : records) {
    bool match = Lower(DeviceName(r.metrics)).find(w) != std::string::npos ||
                 Lower(r.provenance.host).find(w) != std::string::npos ||
                 r.key.Hex().rfind(w, 0) == 0;
    if (match && (best == nullptr || r.provenance.date > best->provenance.date)) best = &r;
  }
  if (best == nullptr) {
    std::string known;
    for (const cache::ActionRecord& r : records) known += "\n  " + Describe(r);
    return Errorf(ErrorCode::kNotFound, "no cached measurement of {} matches '{}'{}", name, where,
                  records.empty() ? std::string(" (the cache holds none of this target)")
                                  : "; the cache holds:" + known);
  }
  MeasuredTarget t{name + "@" + where, "", {}};
  std::string source = "cache ac/" + best->key.Hex().substr(0, 12);
  t.measurements.push_back(FromRecord(best->metrics, best->provenance, Origin::kRestored, source));
  for (const cache::RecordedMeasurement& rm : best->remeasurements) {
    t.measurements.push_back(FromRecord(rm.metrics, rm.provenance, Origin::kRestored, source));
  }
  // The loss curve is one of the cached outputs.
  for (const cache::OutputFile& f : best->outputs) {
    if (f.path != "log.jsonl") continue;
    BM_ASSIGN_OR_RETURN(engine::WorkspaceConfig config, engine::LoadConfig(ws));
    BM_ASSIGN_OR_RETURN(std::unique_ptr<cache::Cache> cache, engine::OpenCache(ws, config));
    BM_ASSIGN_OR_RETURN(std::string text, cache->ReadBlob(f.digest));
    BM_ASSIGN_OR_RETURN(std::vector<LossPoint> losses, ParseLossLog(text, source + " log.jsonl"));
    for (Measurement& m : t.measurements) m.losses = losses;
  }
  return t;
}

}  // namespace

std::string ThisHost() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

Result<MeasuredTarget> FromTargetResult(const engine::TargetResult& r, Filesystem& fs,
                                        const std::string& this_host) {
  MeasuredTarget t{r.name, r.rule, {}};
  std::string source = "cache ac/" + r.key.Hex().substr(0, 12);
  t.measurements.push_back(FromRecord(r.record.metrics, r.record.provenance,
                                      r.fresh ? Origin::kFresh : Origin::kRestored, source));
  for (const cache::RecordedMeasurement& rm : r.record.remeasurements) {
    bool fresh = rm.provenance.host == this_host && rm.provenance.date >= r.materialized_at;
    t.measurements.push_back(
        FromRecord(rm.metrics, rm.provenance, fresh ? Origin::kFresh : Origin::kRestored, source));
  }
  std::string log = r.out_dir + "/log.jsonl";
  BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(log));
  if (info.exists) {
    BM_ASSIGN_OR_RETURN(std::string text, fs.ReadFile(log));
    BM_ASSIGN_OR_RETURN(std::vector<LossPoint> losses, ParseLossLog(text, log));
    // The curve belongs to the artifact: every round shares it.
    for (Measurement& m : t.measurements) m.losses = losses;
  }
  return t;
}

Result<std::vector<MeasuredTarget>> CollectMeasured(const engine::Workspace* ws,
                                                    const std::vector<std::string>& selectors,
                                                    std::vector<std::string>& notes) {
  std::vector<MeasuredTarget> out;
  std::vector<engine::TargetResult> results;
  bool need_ws =
      selectors.empty() || std::any_of(selectors.begin(), selectors.end(),
                                       [](const std::string& s) { return !IsPathSelector(s); });
  if (need_ws) {
    if (ws == nullptr) return Errorf(ErrorCode::kInvalidArgument, "no workspace (BENCHFILE.toml)");
    BM_ASSIGN_OR_RETURN(results, engine::LoadResults(*ws));
  }
  std::string host = ThisHost();
  auto add = [&](const engine::TargetResult& r) -> Status {
    if (!r.up_to_date) {
      notes.push_back(fmt::format(
          "{}: not up to date with the BENCHFILE; showing its last measurement", r.name));
    }
    BM_ASSIGN_OR_RETURN(MeasuredTarget t, FromTargetResult(r, *ws->fs, host));
    out.push_back(std::move(t));
    return Status::Ok();
  };
  if (selectors.empty()) {
    for (const engine::TargetResult& r : results) {
      bool measured = IsTrainerMetrics(r.record.metrics) ||
                      (!r.record.provenance.platform.empty() && !r.record.metrics.empty());
      if (r.built && measured) BM_TRY(add(r));
    }
    if (out.empty()) notes.push_back("no measured target yet (run `benchmake build`)");
    return out;
  }
  for (const std::string& sel : selectors) {
    if (IsPathSelector(sel)) {
      BM_ASSIGN_OR_RETURN(Measurement m, LoadRunFiles(sel));
      out.push_back({sel, "", {std::move(m)}});
      continue;
    }
    size_t at = sel.find('@');
    std::string name = sel.substr(0, at);
    auto it = std::find_if(results.begin(), results.end(),
                           [&](const engine::TargetResult& r) { return r.name == name; });
    if (it == results.end()) {
      std::vector<std::string> names;
      for (const engine::TargetResult& r : results) names.push_back(r.name);
      return Errorf(ErrorCode::kInvalidArgument, "unknown target '{}' in {}{}", name, ws->benchfile,
                    DidYouMean(name, names));
    }
    if (at != std::string::npos) {
      BM_ASSIGN_OR_RETURN(MeasuredTarget t, FromCache(*ws, name, sel.substr(at + 1)));
      t.rule = it->rule;
      out.push_back(std::move(t));
      continue;
    }
    if (!it->built) {
      return Errorf(ErrorCode::kNotFound, "{} has no measurement yet (run `benchmake build {}`)",
                    name, name);
    }
    if (!it->record.metrics.is_object() || it->record.metrics.empty()) {
      return Errorf(ErrorCode::kInvalidArgument, "{} (rule {}) reports no metrics", name, it->rule);
    }
    BM_TRY(add(*it));
  }
  return out;
}

}  // namespace bm::report
