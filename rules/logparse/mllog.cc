// MLPerf training logs: `:::MLLOG {json}` lines as mlperf_logging/mllog
// writes them (base/mllog.h is our writer), anywhere in a line (after srun's
// "0: " or a logger prefix):
//
//   :::MLLOG {"namespace": "", "time_ms": 1721026606541, "event_type": "INTERVAL_START",
//             "key": "run_start", "value": null, "metadata": {"file": "train.py", "lineno": 9}}
//   :::MLLOG {..., "key": "train_loss", "value": 3.12, "metadata": {..., "step": 20}}
//   :::MLLOG {..., "key": "tracked_stats", "value": {"throughput": 1.93, "loss": 3.1},
//             "metadata": {..., "step": 3072}}
//
// Records come from train_loss (value: the loss) and tracked_stats (value.loss,
// value.lr), at metadata.step (train_loss without one: numbered in order).
// Their time_ms stamps time the steps: a record's ms is the time since the
// previous record (the first: since run_start) over the steps between them.
// Facts: global_batch_size (gbs), max_sequence_length (mpe),
// gradient_accumulation_steps (gas); run_start to run_stop is wall_s.
// tracked_stats' throughput is not used: its unit differs between benchmarks
// (samples/s, tokens/s, sequences/s). The log has no memory figures.
#include "base/mllog.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kTrackedStats = "tracked_stats";

std::optional<double> Num(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

Result<ParsedLog> ParseMllog(std::string_view text, std::string_view name) {
  ParsedLog log;
  std::map<int64_t, Iteration> steps;
  std::optional<double> run_start, run_stop;
  int64_t unnumbered = 0;
  int64_t events = 0;
  Status error = Status::Ok();
  const int64_t total_lines = ForEachLine(text, [](std::string_view, int64_t) {});
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    size_t at = line.find(":::MLLOG");
    if (at == std::string_view::npos) return;
    nlohmann::json e = nlohmann::json::parse(line.substr(at + 8), nullptr, false);
    if (e.is_discarded() || !e.is_object() || !e.contains("key") || !e["key"].is_string()) {
      if (no == total_lines) return;  // a last line cut off mid-way
      error =
          Errorf(ErrorCode::kCorrupt, "{}:{}: an :::MLLOG line that is not a JSON event", name, no);
      return;
    }
    ++events;
    const std::string key = e["key"];
    const nlohmann::json& value = e.contains("value") ? e["value"] : nlohmann::json();
    const nlohmann::json& meta = e.contains("metadata") ? e["metadata"] : nlohmann::json();
    std::optional<double> time_ms = Num(e, "time_ms");
    if (key == mllog::kRunStart) {
      if (!run_start) run_start = time_ms;
    } else if (key == mllog::kRunStop) {
      run_stop = time_ms;
    } else if (key == mllog::kGlobalBatchSize && value.is_number()) {
      SetFact(log, "gbs", value.get<double>(), no);
    } else if (key == mllog::kMaxSequenceLength && value.is_number()) {
      SetFact(log, "mpe", value.get<double>(), no);
    } else if (key == mllog::kGradientAccumulationSteps && value.is_number()) {
      SetFact(log, "gas", value.get<double>(), no);
    } else if (key == mllog::kTrainLoss || key == kTrackedStats) {
      std::optional<double> step = Num(meta, "step");
      const bool loss_event = key == mllog::kTrainLoss;
      if (!step && !loss_event) return;
      int64_t s = step ? static_cast<int64_t>(*step) : ++unnumbered;
      std::optional<double> loss = loss_event && value.is_number()
                                       ? std::optional<double>(value.get<double>())
                                       : Num(value, "loss");
      Iteration& it = steps[s];
      if (it.line == 0) {
        it.step = s;
        it.line = no;
        it.time_ms = time_ms;
      }
      if (!it.loss) it.loss = loss;
      if (!it.lr) it.lr = Num(value, "lr");
    }
  });
  BM_TRY(error);
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no MLPerf train_loss or tracked_stats events (':::MLLOG {{... \"key\": "
                  "\"train_loss\" ...}}') in {} lines ({} :::MLLOG events)",
                  name, log.lines, events);
  }
  FillSpansFromGaps(log.iterations);
  std::optional<double> previous = run_start;
  for (size_t i = 0; i < log.iterations.size(); ++i) {
    Iteration& it = log.iterations[i];
    if (i == 0 && run_start) it.span = std::max<int64_t>(1, it.step);  // timed from run_start
    if (previous && it.time_ms && *it.time_ms >= *previous)
      it.ms = (*it.time_ms - *previous) / static_cast<double>(it.span);
    previous = it.time_ms;
  }
  if (run_start && run_stop) log.wall_s = (*run_stop - *run_start) / 1000.0;
  return log;
}

}  // namespace bm::logparse
