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
// Records come from train_loss (value: the loss) and tracked_stats (value.loss, or
// reduced_train_loss as NeMo's references since 2025 log it, value.lr, value.grad_norm,
// value.train_step_time: the step's own seconds, as NeMo-RL's GRPO reference logs it in a
// second tracked_stats event of the step), at metadata.step; a tracked_stats event with none
// of these (validation_time alone) is not a training step; the llama2_70b_lora reference names no
// step but metadata.samples_count (step x global_batch_size: the step is that over the
// global_batch_size event's value), and without either they are numbered in
// order. Their time_ms stamps time the steps: a record's ms is the time since
// the previous record (the first: since run_start) over the steps between
// them, unless the step logged its own time (train_step_time). A log with no training records but
// eval_accuracy events (the llama3.1 reference) is timed by its blocks instead: a record at each
// block_stop, its ms the block's time (block_start to block_stop, evaluation left out) over its
// steps (samples_count over global_batch_size); it has no loss. eval_accuracy events are the log's
// evals. Facts: global_batch_size (gbs), max_sequence_length (mpe), gradient_accumulation_steps
// (gas); run_start to run_stop is wall_s. A line with ":::MLLOG" and no JSON object after it is a
// print that mentions the tag (the llama3.1 reference's `print(f":::MLLOG Weight initialization:
// {...}")` on every rank): skipped, with a note. An object that does not
// parse is an error unless it is the last line (cut off).
// tracked_stats' throughput is not used: its unit differs between benchmarks
// (samples/s, tokens/s, sequences/s). The log has no memory figures.
#include "base/mllog.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "rules/logparse/line_kinds.h"
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

// tracked_stats' training loss, by the names the references give it.
std::optional<double> TrackedLoss(const nlohmann::json& value) {
  for (const char* key : {"loss", "reduced_train_loss", "train_loss"})
    if (std::optional<double> v = Num(value, key)) return v;
  return std::nullopt;
}

}  // namespace

bool IsMllogEventLine(std::string_view line) {
  size_t at = line.find(":::MLLOG");
  if (at == std::string_view::npos) return false;
  std::string_view rest = Trim(line.substr(at + 8));
  return !rest.empty() && rest.front() == '{';
}

Result<ParsedLog> ParseMllog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "mllog";
  struct Raw {
    Iteration it;
    std::optional<double> samples_count;
    std::optional<double> own_ms;  // tracked_stats' train_step_time, in ms
  };
  struct Block {
    double time_ms = 0;
    double samples = 0;
  };
  std::vector<Raw> raws;
  std::vector<std::pair<Block, Block>> blocks;  // start, stop
  std::optional<Block> open_block;
  std::vector<std::pair<double, int64_t>> eval_samples;  // samples_count, line (for evals)
  std::optional<double> run_start, run_stop;
  int64_t events = 0, stray = 0, stray_line = 0;
  Status error = Status::Ok();
  const int64_t total_lines = CountLines(text);
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    size_t at = line.find(":::MLLOG");
    if (at == std::string_view::npos) return;
    std::string_view rest = Trim(line.substr(at + 8));
    if (rest.empty() || rest.front() != '{') {
      if (stray++ == 0) stray_line = no;
      return;
    }
    nlohmann::json e = nlohmann::json::parse(rest, nullptr, false);
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
    std::optional<double> samples = Num(meta, "samples_count");
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
    } else if (key == mllog::kBlockStart && time_ms && samples) {
      open_block = Block{*time_ms, *samples};
    } else if (key == mllog::kBlockStop && time_ms && samples && open_block) {
      blocks.push_back({*open_block, Block{*time_ms, *samples}});
      open_block.reset();
    } else if (key == mllog::kEvalAccuracy && value.is_number()) {
      log.evals.push_back({0, value.get<double>(), no});
      eval_samples.push_back({samples.value_or(-1), no});
      log.eval_what = "MLPerf eval_accuracy";
    } else if (key == mllog::kTrainLoss || key == kTrackedStats) {
      std::optional<double> step = Num(meta, "step");
      const bool loss_event = key == mllog::kTrainLoss;
      if (!step && !samples && !loss_event) return;
      Raw r;
      r.it.step = step ? static_cast<int64_t>(*step) : 0;
      r.it.line = no;
      r.it.time_ms = time_ms;
      r.it.loss = loss_event && value.is_number() ? std::optional<double>(value.get<double>())
                                                  : TrackedLoss(value);
      r.it.lr = Num(value, "lr");
      if (!r.it.lr) r.it.lr = Num(meta, "lr");
      r.it.grad_norm = Num(value, "grad_norm");
      if (std::optional<double> s = Num(value, "train_step_time")) r.own_ms = *s * 1000.0;
      if (!loss_event && !r.it.loss && !r.it.lr && !r.it.grad_norm && !r.own_ms &&
          !Num(value, "throughput"))
        return;  // not a training step's statistics (validation_time)
      r.samples_count = step ? std::nullopt : samples;
      raws.push_back(r);
    }
  });
  BM_TRY(error);
  auto gbs_it = log.facts.find("gbs");
  const std::optional<double> gbs =
      gbs_it == log.facts.end() ? std::nullopt : std::optional<double>(gbs_it->second.value);
  auto step_of = [&](double samples) { return static_cast<int64_t>(std::llround(samples / *gbs)); };
  std::map<int64_t, Iteration> steps;
  std::map<int64_t, double> own_ms;  // steps that logged their own time
  int64_t unnumbered = 0;
  bool by_samples_without_gbs = false;
  for (Raw& r : raws) {
    if (r.samples_count && gbs && *gbs > 0) {
      r.it.step = step_of(*r.samples_count);
    } else if (r.it.step == 0) {
      by_samples_without_gbs = by_samples_without_gbs || r.samples_count.has_value();
      r.it.step = ++unnumbered;
    }
    Iteration& it = steps[r.it.step];
    if (it.line == 0) it = r.it;
    if (!it.loss) it.loss = r.it.loss;
    if (!it.lr) it.lr = r.it.lr;
    if (!it.grad_norm) it.grad_norm = r.it.grad_norm;
    if (r.own_ms) own_ms.emplace(r.it.step, *r.own_ms);  // the first a step logged
  }
  if (by_samples_without_gbs) {
    log.notes.push_back(fmt::format(
        "{}: train_loss names samples_count but the log has no global_batch_size event: its "
        "records are numbered in order, not by step",
        name));
  }
  for (size_t i = 0; i < log.evals.size(); ++i) {
    if (gbs && *gbs > 0 && eval_samples[i].first >= 0)
      log.evals[i].step = step_of(eval_samples[i].first);
  }
  const bool timed_by_blocks = steps.empty() && !blocks.empty() && gbs && *gbs > 0;
  if (timed_by_blocks) {
    for (const auto& [start, stop] : blocks) {
      const int64_t from = step_of(start.samples), to = step_of(stop.samples);
      if (to <= from || stop.time_ms < start.time_ms) continue;
      Iteration it;
      it.step = to;
      it.span = to - from;
      it.ms = (stop.time_ms - start.time_ms) / static_cast<double>(it.span);
      it.time_ms = stop.time_ms;
      steps[to] = it;
    }
    log.notes.push_back(fmt::format(
        "{}: no train_loss events: steps timed by the block_start/block_stop events (training "
        "time between evaluations), and no training loss",
        name));
  }
  if (stray > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} line(s) with ':::MLLOG' but no JSON event after it (a print that mentions "
        "the tag) were skipped",
        name, stray_line, stray));
  }
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  if (log.iterations.empty()) {
    std::string why = events > 0 ? "" : OtherFormatHint(text, "mllog");
    if (!log.evals.empty() && !gbs) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: {} eval_accuracy events but no train_loss events and no "
                    "global_batch_size event to count the steps of their blocks by "
                    "(':::MLLOG {{... \"key\": \"global_batch_size\" ...}}') in {} lines",
                    name, log.evals.size(), log.lines);
    }
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no MLPerf train_loss, tracked_stats or block_stop events (':::MLLOG {{... "
                  "\"key\": \"train_loss\" ...}}') in {} lines ({} :::MLLOG events){}",
                  name, log.lines, events, why);
  }
  if (!timed_by_blocks) {
    FillSpansFromGaps(log.iterations);
    std::optional<double> previous = run_start;
    for (size_t i = 0; i < log.iterations.size(); ++i) {
      Iteration& it = log.iterations[i];
      if (i == 0 && run_start) it.span = std::max<int64_t>(1, it.step);  // timed from run_start
      if (previous && it.time_ms && *it.time_ms >= *previous)
        it.ms = (*it.time_ms - *previous) / static_cast<double>(it.span);
      previous = it.time_ms;
      if (auto own = own_ms.find(it.step); own != own_ms.end() && it.span == 1) it.ms = own->second;
    }
    if (!own_ms.empty()) {
      log.notes.push_back(fmt::format(
          "{}: the steps' time from tracked_stats' train_step_time (the trainer's own), not "
          "from the time_ms gaps between events",
          name));
    }
  }
  if (run_start && run_stop) log.wall_s = (*run_stop - *run_start) / 1000.0;
  return log;
}

}  // namespace bm::logparse
