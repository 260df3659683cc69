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
// second tracked_stats event of the step), at metadata.step. Not training steps: a tracked_stats
// event with none of these (validation_time alone); one with throughput alone (the MLPerf v5.1
// submissions' log_throughput -- AMD callbacks.py, Cisco custom_callbacks.py, Dell NeMo
// _log_throughputs -- set its metadata.step to global_step x gbs: samples); one with
// train_step_time alone, a samples_count and no step (mlperf_common's _log_train_step_time: the
// mean over the block since the previous one, its samples_count the block's, not the run's).
// The llama2_70b_lora reference names no step but metadata.samples_count (step x
// global_batch_size: the step is that over the global_batch_size event's value); where an event
// names both, samples_count decides (NeMo's step counts from 0: Dell's _log_throughputs logs
// samples = (step + 1) x gbs); without either they are numbered in order. Their time_ms stamps
// time the steps: a record's ms is the time since the previous record (the first: since
// run_start), less the evaluations inside it (eval_start to eval_stop, block_stop to the next
// block_start), over the steps between them, unless the step logged its own time
// (train_step_time) and is a span of one. A log with no training records but eval_accuracy
// events (the llama3.1 reference) is timed by its blocks instead: a record at each block_stop,
// its ms the block's time (block_start to block_stop, evaluation left out) over its steps (the
// blocks' metadata.step, as mlperf_common logs it, else samples_count over global_batch_size);
// it has no loss. eval_accuracy events are the log's evals, at their eval_start's step or
// samples_count when inside one (AMD's eval_accuracy names the logger's 0-based step x gbs).
// Facts: global_batch_size (gbs), max_sequence_length (mpe), gradient_accumulation_steps (gas);
// run_start to run_stop is wall_s. A line with ":::MLLOG" and no JSON object after it is a
// print that mentions the tag (the llama3.1 reference's `print(f":::MLLOG Weight
// initialization: {...}")` on every rank): skipped, with a note. An object that does not parse
// is an error unless it is the last line (cut off). tracked_stats' throughput is not used: its
// unit differs between benchmarks (samples/s, tokens/s, sequences/s). The log has no memory
// figures.
#include "base/mllog.h"

#include <fmt/format.h>

#include <algorithm>
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
    std::optional<double> step;  // mlperf_common names it; its samples_count is per block
    int64_t line = 0;
  };
  std::vector<Raw> raws;
  std::vector<std::pair<Block, Block>> blocks;  // start, stop
  std::optional<Block> open_block;
  // Where each eval_accuracy is: the enclosing eval_start's step or samples_count (the run's
  // step count; AMD's eval_accuracy names the Lightning logger's 0-based step x gbs), else its own.
  struct EvalAt {
    std::optional<double> step, samples;
  };
  std::vector<EvalAt> eval_at;
  EvalAt open_eval_at;
  std::optional<double> run_start, run_stop;
  // Time the log brackets as not training: eval_start..eval_stop, and block_stop..the next
  // block_start (the blocks are the training between evaluations).
  std::vector<std::pair<double, double>> paused;
  std::optional<double> eval_open, between_blocks;
  int64_t events = 0, stray = 0, stray_line = 0, block_means = 0, block_means_line = 0;
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
    } else if (key == mllog::kBlockStart) {
      if (time_ms && between_blocks) paused.push_back({*between_blocks, *time_ms});
      between_blocks.reset();
      if (time_ms && samples) open_block = Block{*time_ms, *samples, Num(meta, "step"), no};
    } else if (key == mllog::kBlockStop) {
      between_blocks = time_ms;
      if (time_ms && samples && open_block)
        blocks.push_back({*open_block, Block{*time_ms, *samples, Num(meta, "step"), no}});
      open_block.reset();
    } else if (key == mllog::kEvalStart) {
      eval_open = time_ms;
      open_eval_at = {Num(meta, "step"), samples};
    } else if (key == mllog::kEvalStop) {
      if (time_ms && eval_open) paused.push_back({*eval_open, *time_ms});
      eval_open.reset();
      open_eval_at = {};
    } else if (key == mllog::kEvalAccuracy && value.is_number()) {
      log.evals.push_back({0, value.get<double>(), no});
      eval_at.push_back(open_eval_at.step || open_eval_at.samples ? open_eval_at
                                                                  : EvalAt{std::nullopt, samples});
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
      if (!loss_event && !r.it.loss && !r.it.lr && !r.it.grad_norm && !r.own_ms)
        return;  // not a training step's statistics (validation_time; throughput alone)
      if (!loss_event && !r.it.loss && !r.it.lr && !r.it.grad_norm && !step && samples) {
        // mlperf_common's train_step_time: the mean over the block since the previous one,
        // its samples_count that block's samples, not the run's.
        if (block_means++ == 0) block_means_line = no;
        return;
      }
      r.samples_count = samples;
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
      r.it.step = step_of(*r.samples_count);  // over metadata.step, which NeMo counts from 0
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
    if (eval_at[i].step)
      log.evals[i].step = static_cast<int64_t>(std::llround(*eval_at[i].step));
    else if (gbs && *gbs > 0 && eval_at[i].samples)
      log.evals[i].step = step_of(*eval_at[i].samples);
  }
  const bool timed_by_blocks = steps.empty() && !blocks.empty() && gbs && *gbs > 0;
  if (timed_by_blocks) {
    auto block_step = [&](const Block& b) {
      return b.step ? static_cast<int64_t>(std::llround(*b.step)) : step_of(b.samples);
    };
    for (const auto& [start, stop] : blocks) {
      const int64_t from = block_step(start), to = block_step(stop);
      if (to <= from || stop.time_ms < start.time_ms) continue;
      Iteration it;
      it.step = to;
      it.span = to - from;
      it.ms = (stop.time_ms - start.time_ms) / static_cast<double>(it.span);
      it.time_ms = stop.time_ms;
      it.line = stop.line;
      steps[to] = it;
    }
    log.notes.push_back(fmt::format(
        "{}: no train_loss events: steps timed by the block_start/block_stop events (training "
        "time between evaluations), and no training loss",
        name));
  }
  if (block_means > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} tracked_stats train_step_time event(s) with a samples_count and no step "
        "(mlperf_common's mean over a block) are no training step",
        name, block_means_line, block_means));
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
    std::sort(paused.begin(), paused.end());
    // The training time between two stamps: the gap less the paused time inside it.
    double left_out = 0;
    bool timed_by_own = false;  // train_step_time is one step's: it times a span of one
    auto training_ms = [&](double from, double to) {
      double ms = to - from;
      double covered = from;  // paused intervals may overlap (an evaluation inside a gap)
      for (const auto& [a, b] : paused) {
        const double lo = std::max(a, covered), hi = std::min(b, to);
        if (hi > lo) {
          ms -= hi - lo;
          left_out += hi - lo;
          covered = hi;
        }
      }
      return ms;
    };
    std::optional<double> previous = run_start;
    for (size_t i = 0; i < log.iterations.size(); ++i) {
      Iteration& it = log.iterations[i];
      if (i == 0 && run_start) it.span = std::max<int64_t>(1, it.step);  // timed from run_start
      if (previous && it.time_ms && *it.time_ms >= *previous)
        it.ms = training_ms(*previous, *it.time_ms) / static_cast<double>(it.span);
      previous = it.time_ms;
      if (auto own = own_ms.find(it.step); own != own_ms.end() && it.span == 1) {
        it.ms = own->second;
        timed_by_own = true;
      }
    }
    if (left_out > 0) {
      log.notes.push_back(fmt::format(
          "{}: {:.1f} s of evaluation (eval_start to eval_stop, block_stop to block_start) left "
          "out of the time between the records",
          name, left_out / 1000.0));
    }
    if (timed_by_own) {
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
