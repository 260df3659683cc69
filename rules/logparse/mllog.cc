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
// second tracked_stats event of the step, or "train_step_timing in s" as NVIDIA's GPT-3 does), at
// metadata.step when the event has one (0 included), else at its step_num (NVIDIA's v4.0 Stable
// Diffusion mlperf_logging_utils.py, whose tracked_stats loss and lr name no other position). Not
// training steps: a tracked_stats event with none of these (validation_time alone); one with
// throughput alone (the MLPerf v5.1 submissions' log_throughput -- AMD callbacks.py, Cisco
// custom_callbacks.py, Dell NeMo _log_throughputs -- set its metadata.step to global_step x gbs:
// samples); one with train_step_time alone, a samples_count and no step (mlperf_common's
// _log_train_step_time: the mean over the block since the previous one, its samples_count the
// block's, not the run's); one with throughput and train_step_time and no loss, wherever it sits
// (mlperf_common's _log_training_throughput before 2025-07: the block's mean at "step" = the
// block's first sample, from 0; its max_memory_usage, round(torch.cuda.max_memory_allocated() /
// 2**30, 3) on the logging rank, is the log's peak memory); one with train_step_time alone at a
// fractional "step" (NVIDIA's HugeCTR DLRM v6.0 on_training_end: the run's mean step time at "step"
// = current_iter / iter_per_epoch, an epoch fraction). Units other than steps: NVIDIA's GPT-3 (v4.x
// custom_callbacks.py compute_consumed_mllog_tokens) counts tokens since the resume in the blocks'
// first_epoch_num/epoch_count, epoch_num and "train_step_timing in s"'s step: read as steps over
// global_batch_size x max_sequence_length when the log states both and every such position is a
// multiple (else, with no other record, an error naming the block). Google's MaxText GPT-3
// (mllog_utils.py early_stop_check: block_stop names its block's first_epoch_num only) and
// Habana's (one block for the whole run) give no block that spans steps: their eval_accuracy
// events' epoch_num, in the same tokens, place the steps, each timed from the previous
// evaluation's start (eval_start, else the eval_accuracy; the first from run_start), less
// the evaluations the log brackets; tinygrad's BERT (no blocks either) is placed alike by the
// step_num its eval_start names. NVIDIA's v5.0 NeMo
// MetricsLogger logs tracked_stats at "step" = (step + 1) x gbs, samples: read as steps over gbs
// when every such step is a positive multiple of gbs and the last one before each eval_accuracy
// placed by samples_count equals that samples_count (steps would be gbs times smaller).
// The llama2_70b_lora reference names no step but metadata.samples_count (step x
// global_batch_size: the step is that over the global_batch_size event's value; Primus's reference
// names the samples before the step, as NVIDIA's v6.0 Megatron-Bridge gpt_oss_20b does, told by
// a record at 0 or at a block_stop's count after it (in the log and in time_ms; not where
// block_stop names the block's length), and read one step later); where an event
// names both, samples_count decides (NeMo's step counts from 0: Dell's _log_throughputs logs
// samples = (step + 1) x gbs); without either they are numbered in order. Their time_ms stamps
// time the steps: a record's ms is the time since the previous record (the first: since
// run_start), less the evaluations inside it (eval_start to eval_stop, block_stop to the next
// block_start), over the steps between them, unless the step logged its own time
// (train_step_time) and is a span of one. A log with no training records but eval_accuracy
// events (the llama3.1 reference) is timed by its blocks instead: a record at each block_stop,
// its ms the block's time (block_start to block_stop, evaluation left out) over its steps (the
// blocks' metadata.step, as mlperf_common logs it, else samples_count over global_batch_size);
// it has no loss, unless the block_stop names one (MaxDiffusion's metadata loss and lr, its
// last step's). GigaComputing's v5.0 Stable Diffusion names the block's first samples_count in
// its block_stop too: such a block ends where the next starts (the last, as long as the others).
// eval_accuracy events are the log's evals, at their eval_start's step or samples_count when inside
// one (AMD's eval_accuracy names the logger's 0-based step x gbs); Stable Diffusion logs two an
// evaluation (metadata.metric FID, then CLIP): the series holds FID's where the log names it (else
// the first metric's), named in eval_what, and a note counts the others. An evaluation at a step
// already evaluated (MaxDiffusion's closing summary) is a repeat, left out, and so is one whose own
// step is past the step run_stop names (MaxDiffusion's checkpoints evaluated after the run). What
// the series measures is the benchmark's quality metric and target (mlperf_quality.h; a logged
// target_accuracy wins). Facts:
// global_batch_size (gbs), max_sequence_length (mpe), gradient_accumulation_steps (gas); run_start
// to run_stop is wall_s, MLPerf's time to train (result_summarizer) only when run_stop's status is
// "success": a note says so when it is not ("aborted": the quality target not reached), or when
// the log has run_start and no run_stop (a killed or crashed run). A line with ":::MLLOG" and no
// JSON object after it is a print that mentions the tag (the llama3.1 reference's `print(f":::MLLOG
// Weight initialization: {...}")` on every rank): skipped, with a note. An object that does not
// parse is an error unless it is the last line (cut off) or names a key read nowhere here
// (Lambda's v4.1 results: one line garbled by a text substitution; skipped, with a note).
// tracked_stats' throughput is not used: its unit differs between benchmarks (samples/s, tokens/s,
// sequences/s; global images/s in NVIDIA's ResNet, per GPU in its SSD). The only memory figure is
// mlperf_common's max_memory_usage. Every log also gets MLPerf's own result (MlperfRun): the
// submission_* events, the status, run_start to run_stop, the epochs the log times (epoch_start
// and epoch_stop of one epoch_num) and train_samples/eval_samples as logged. The epoch-timed
// benchmarks (ResNet, SSD/RetinaNet, U-Net3D, BERT, DLRM, R-GAT), which place no step, are read by
// that result and their evaluations when the log has run_start and a run_stop, an epoch or an
// evaluation; otherwise the reason no step was placed is the error.
//
// One pass reads the events (mllog_events.h); this file numbers and times them.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/mllog_events.h"
#include "rules/logparse/mlperf_quality.h"

namespace bm::logparse {

namespace {

// Stable Diffusion's references log an evaluation as two eval_accuracy events told apart by
// metadata.metric, FID and CLIP (NVIDIA's FID first, MaxDiffusion's CLIP first): the series
// keeps FID (lower is better, as a loss) where the log names it, else the first metric named.
// MaxDiffusion also repeats the last evaluation's values in its closing summary: an evaluation
// of that metric at a step that already has one is left out.
// Keeps the evaluations i (in the log's order) for which keep(i) holds, in the series and in the
// events' vectors beside it alike. keep(i) may read evaluation i: it is not yet overwritten.
template <class Keep>
void KeepEvals(MllogEvents& ev, ParsedLog& log, Keep keep) {
  size_t out = 0;
  for (size_t i = 0; i < log.evals.size(); ++i) {
    if (!keep(i)) continue;
    log.evals[out] = log.evals[i];
    ev.eval_at[out] = ev.eval_at[i];
    ev.eval_began[out] = ev.eval_began[i];
    ++out;
  }
  log.evals.resize(out);
  ev.eval_at.resize(out);
  ev.eval_began.resize(out);
}

// Leaves out the evaluations i for which drop(i) holds (as KeepEvals); returns how many and the
// first one's line.
template <class Drop>
std::pair<int64_t, int64_t> DropEvals(MllogEvents& ev, ParsedLog& log, Drop drop) {
  int64_t n = 0, first = 0;
  KeepEvals(ev, log, [&](size_t i) {
    if (!drop(i)) return true;
    if (n++ == 0) first = log.evals[i].line;
    return false;
  });
  return {n, first};
}

// Returns the metric kept ("" where no evaluation names one).
std::string KeepOneEvalMetric(MllogEvents& ev, std::string_view name, ParsedLog& log) {
  const std::vector<std::string>& metrics = ev.eval_metrics;
  if (std::all_of(metrics.begin(), metrics.end(), [](const auto& m) { return m.empty(); }))
    return "";
  const std::string keep =
      std::find(metrics.begin(), metrics.end(), "FID") != metrics.end()
          ? std::string("FID")
          : *std::find_if(metrics.begin(), metrics.end(), [](const auto& m) { return !m.empty(); });
  std::map<std::string, int64_t> left_out;
  KeepEvals(ev, log, [&](size_t i) {
    if (metrics[i] == keep) return true;
    ++left_out[metrics[i].empty() ? "(none named)" : metrics[i]];
    return false;
  });
  log.eval_what = "MLPerf eval_accuracy " + keep;
  for (const auto& [metric, n] : left_out) {
    log.notes.push_back(fmt::format(
        "{}: the evaluations are the eval_accuracy events of metric {}; {} of metric {} left out "
        "of the series",
        name, keep, n, metric));
  }
  return keep;
}

// What the series measures: the benchmark's quality metric and target (mlperf_quality.h). A target
// the run's code logs (target_accuracy) is the run's own: it wins over the rules' table, with a
// note where the two differ, and gives a benchmark the table does not know a target without a
// name or direction. Not for Stable Diffusion's series of one metric: its log names one target.
std::optional<EvalMetric> SeriesMetric(const MllogEvents& ev, std::string_view series_metric,
                                       std::string_view name, std::vector<std::string>& notes) {
  std::optional<EvalMetric> metric = MlperfQuality(ev.named.benchmark, series_metric);
  if (!ev.target_accuracy || !series_metric.empty()) return metric;
  if (!metric) {
    metric.emplace();
  } else if (metric->target && *metric->target != *ev.target_accuracy) {
    notes.push_back(fmt::format(
        "{}:{}: target_accuracy {} is the run's quality target, not MLPerf's rules' {} for {}",
        name, ev.target_line, *ev.target_accuracy, *metric->target, ev.named.benchmark));
  }
  metric->target = ev.target_accuracy;
  return metric;
}

// Whether one evaluation met every target of a benchmark whose target asks two metrics of one
// evaluation (MLPerf's compliance checker: Stable Diffusion's aggregated_eval_accuracy, FID and
// CLIP at one samples_count; Mask R-CNN's BBOX and SEGM of one event); nullopt for the others.
std::optional<bool> JointlyReached(const MllogEvents& ev, std::string_view name,
                                   std::vector<std::string>& notes) {
  const auto metrics = MlperfJointQualities(ev.named.benchmark);
  if (metrics.size() < 2) return std::nullopt;
  std::map<double, std::map<std::string, double>> at;  // position: metric: value
  for (const MllogEvents::MetricValue& v : ev.metric_values) at[v.position][v.metric] = v.value;
  bool reached = false;
  for (const auto& [position, values] : at) {
    bool all = true;
    for (const auto& [metric, m] : metrics) {
      auto it = values.find(metric);
      all = all && it != values.end() && MeetsTarget(m, it->second).value_or(false);
    }
    reached = reached || all;
  }
  std::string asked;
  for (const auto& [metric, m] : metrics) {
    asked += fmt::format("{}{} {} {}", asked.empty() ? "" : " and ", metric,
                         *m.higher_is_better ? ">=" : "<=", *m.target);
  }
  notes.push_back(fmt::format(
      "{}: MLPerf's target for {} asks {} of one evaluation: eval.quality.reached checks them "
      "together ({})",
      name, ev.named.benchmark, asked, reached ? "met" : "not met at any evaluation"));
  return reached;
}

// MLPerf's result as its result summarizer reads it (mlperf_logging: run_start to run_stop of a run
// whose run_stop says "success"), the submission the log names, and the epochs it timed.
MlperfRun RunResult(const MllogEvents& ev, bool by_time_to_train) {
  MlperfRun run = ev.named;
  run.status = ev.run_status;
  if (ev.run_start && ev.run_stop) run.run_s = (*ev.run_stop - *ev.run_start) / 1000.0;
  if (run.run_s && run.status == "success") run.time_to_train_s = run.run_s;
  std::vector<double> seconds;
  for (const auto& [epoch, stop] : ev.epoch_ended) {
    auto start = ev.epoch_began.find(epoch);
    if (start != ev.epoch_began.end() && stop >= start->second)
      seconds.push_back((stop - start->second) / 1000.0);
  }
  if (!seconds.empty()) {
    run.epochs = static_cast<int64_t>(seconds.size());
    std::sort(seconds.begin(), seconds.end());
    const size_t n = seconds.size();
    run.epoch_s_median = n % 2 ? seconds[n / 2] : (seconds[n / 2 - 1] + seconds[n / 2]) / 2;
  }
  if (!ev.eval_at.empty()) run.eval_epoch_num = ev.eval_at.back().tokens;
  run.by_time_to_train = by_time_to_train;
  return run;
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
  using Raw = MllogEvents::Raw;
  using Block = MllogEvents::Block;
  MllogEvents ev;
  BM_TRY(ReadMllogEvents(text, name, log, ev));
  const std::string series_metric = KeepOneEvalMetric(ev, name, log);
  auto& raws = ev.raws;
  auto& blocks = ev.blocks;
  auto& eval_at = ev.eval_at;
  auto& run_start = ev.run_start;
  auto& run_stop = ev.run_stop;
  auto& paused = ev.paused;
  auto& events = ev.events;
  auto& stray = ev.stray;
  auto& stray_line = ev.stray_line;
  auto& block_means = ev.block_means;
  auto& block_means_line = ev.block_means_line;
  auto& tracked = ev.tracked;
  auto& block_stops = ev.block_stops;
  auto& epoch_blocks_line = ev.epoch_blocks_line;
  auto& token_positions = ev.token_positions;
  auto& step_at_eval = ev.step_at_eval;
  auto& peak_gib = ev.peak_gib;
  auto& init_checkpoint = ev.init_checkpoint;
  auto& peak_line = ev.peak_line;
  auto gbs_it = log.facts.find("gbs");
  const std::optional<double> gbs =
      gbs_it == log.facts.end() ? std::nullopt : std::optional<double>(gbs_it->second.value);
  auto step_of = [&](double samples) { return static_cast<int64_t>(std::llround(samples / *gbs)); };
  auto fact = [&](const char* k) -> std::optional<double> {
    auto it = log.facts.find(k);
    return it == log.facts.end() ? std::nullopt : std::optional<double>(it->second.value);
  };
  // NVIDIA's GPT-3 (v4.x custom_callbacks.py compute_consumed_mllog_tokens): the blocks, evals and
  // "train_step_timing in s" count tokens since the resume, (global_step - init_global_step) x
  // gbs x seq_length. Read so when the log states both and every such position is a multiple.
  std::optional<double> token_unit;
  if (!token_positions.empty() && gbs && fact("mpe") && *gbs * *fact("mpe") >= 1) {
    const double unit = *gbs * *fact("mpe");
    bool all = true;
    for (double t : token_positions) all = all && t >= 0 && std::fmod(t, unit) == 0;
    if (all) token_unit = unit;
  }
  auto token_step = [&](double tokens) {
    return static_cast<int64_t>(std::llround(tokens / *token_unit));
  };
  // NVIDIA's v5.0 NeMo MetricsLogger._log_throughputs logs tracked_stats at "step": (step + 1) x
  // gbs, samples. Read so when each is a positive multiple of gbs and the last one before an
  // evaluation equals the samples_count the evaluation names (a step count would be gbs times
  // smaller).
  bool steps_are_samples = false;
  if (gbs && *gbs > 1 && !step_at_eval.empty()) {
    steps_are_samples = true;
    for (const auto& [step, samples] : step_at_eval) steps_are_samples &= step == samples;
    for (const Raw& r : raws) {
      if (r.tracked && r.step && !r.samples_count && !r.timing_in_s)
        steps_are_samples &= *r.step > 0 && std::fmod(*r.step, *gbs) == 0;
    }
  }
  std::map<int64_t, Iteration> steps;
  std::map<int64_t, double> own_ms;  // steps that logged their own time
  int64_t unnumbered = 0;
  bool by_samples_without_gbs = false, in_tokens = false, in_samples = false;
  // Training records whose samples_count counts the samples before their step: Primus's
  // primus_mllog (mlperf_pre_training.py _on_train_step_end) logs train_loss from inside
  // train_step, before Megatron's loop adds the batch to args.consumed_train_samples; NVIDIA's
  // v6.0 Megatron-Bridge references (callback_logging.py DeltaTimingCallback.on_train_step_end,
  // gpt_oss_20b, llama31_8b, llama31_405b) log tracked_stats at gbs x train_state.step, which the
  // loop increments after the callbacks (its llama2_70b_lora copy logs gbs x (step + 1)). Told by a
  // record at samples_count 0 (no step ends there), or by one after a block_stop at S that names
  // S itself (a step that ended at S would come before that block_stop): every record's step is
  // then its samples_count over gbs, plus one.
  // The second sign needs block_stop's samples_count to be a position: NVIDIA's Megatron-Bridge
  // callbacks name the block's length there (eval_interval x gbs) and the position in its step,
  // and the records of its last pipeline stage may print after the rank-0 block_stop that follows
  // them (DeepSeek-V3, one step a block: step 1's record at 15360 after the block_stop at 15360),
  // so a record counts as after a block_stop only when it is also stamped later.
  const bool stop_counts_are_lengths =
      gbs && std::any_of(ev.block_stop_at.begin(), ev.block_stop_at.end(),
                         [&](const auto& b) { return b.step && b.samples != *gbs * *b.step; });
  const Raw* before_sign = nullptr;
  for (const Raw& r : raws) {
    if (before_sign || !r.samples_count) continue;
    if (*r.samples_count == 0) before_sign = &r;
    for (const auto& b : ev.block_stop_at) {
      const bool later =
          b.line < r.it.line && (!b.time_ms || !r.it.time_ms || *r.it.time_ms > *b.time_ms);
      if (!stop_counts_are_lengths && later && b.samples == *r.samples_count) before_sign = &r;
    }
  }
  const bool samples_before = before_sign && gbs && *gbs > 0;
  if (samples_before) {
    log.notes.push_back(fmt::format(
        "{}:{}: a training record at samples_count {:.0f}{}: the records' samples_count counts "
        "the samples before their step (Primus's primus_mllog logs train_loss inside train_step, "
        "NVIDIA's Megatron-Bridge DeltaTimingCallback tracked_stats at global_batch_size x "
        "train_state.step before the step is counted), so each is read at samples_count / "
        "global_batch_size {} + 1",
        name, before_sign->it.line, *before_sign->samples_count,
        *before_sign->samples_count == 0 ? "" : ", where a block_stop before it ended", *gbs));
  }
  for (Raw& r : raws) {
    if (r.samples_count && gbs && *gbs > 0) {
      r.it.step = step_of(*r.samples_count);  // over metadata.step, which NeMo counts from 0
      if (samples_before) ++r.it.step;
    } else if (r.step && r.timing_in_s && token_unit) {
      r.it.step = token_step(*r.step);
      in_tokens = true;
    } else if (r.step && steps_are_samples && r.tracked && !r.timing_in_s) {
      r.it.step = step_of(*r.step);
      in_samples = true;
    } else if (r.step) {
      r.it.step = static_cast<int64_t>(*r.step);
    } else {
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
  if (in_samples) {
    log.notes.push_back(fmt::format(
        "{}: tracked_stats' metadata.step counts samples (NeMo MetricsLogger: (step + 1) x "
        "global_batch_size; the last before an evaluation equals its samples_count): the step is "
        "it over global_batch_size {}",
        name, *gbs));
  }
  for (size_t i = 0; i < log.evals.size(); ++i) {
    if (eval_at[i].step)
      log.evals[i].step = static_cast<int64_t>(std::llround(*eval_at[i].step));
    else if (gbs && *gbs > 0 && eval_at[i].samples)
      log.evals[i].step = step_of(*eval_at[i].samples);
    else if (token_unit && eval_at[i].tokens)
      log.evals[i].step = token_step(*eval_at[i].tokens);
  }
  // MaxDiffusion evaluates its checkpoints offline after training, and its run_stop names the step
  // whose evaluation reached the target (and that step's time): a later checkpoint's evaluation
  // is past the run (v4.1's FID 92.19 at step 10000 of a run stopped at 8000 by FID 79.66).
  if (ev.run_stop_step) {
    const auto [past, first_past] = DropEvals(ev, log, [&](size_t i) {
      const std::optional<double>& at = eval_at[i].named_step;
      return at && *at > *ev.run_stop_step;
    });
    if (past > 0) {
      log.notes.push_back(fmt::format(
          "{}:{}: {} eval_accuracy event(s) at a step past the step {:.0f} that run_stop names "
          "(line {}: the run stopped there; checkpoints evaluated after training) left out",
          name, first_past, past, *ev.run_stop_step, ev.run_stop_line));
    }
  }
  // An evaluation at a step that already has one repeats it (MaxDiffusion's closing summary).
  std::set<int64_t> evaluated;
  const auto [repeats, first_repeat] = DropEvals(ev, log, [&](size_t i) {
    return log.evals[i].step > 0 && !evaluated.insert(log.evals[i].step).second;
  });
  if (repeats > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} eval_accuracy event(s) at a step already evaluated (a closing summary's "
        "repeat) left out",
        name, first_repeat, repeats));
  }
  // A block counts when both its ends are placed: by a step, samples, or tokens that could be
  // turned into steps (a block_stop of another log's kind, placed by none, was read as step -2^63).
  auto placed = [&](const Block& b) { return b.step || b.samples || (b.tokens && token_unit); };
  std::erase_if(blocks, [&](const auto& b) { return !placed(b.first) || !placed(b.second); });
  bool timed_by_blocks = steps.empty() && !blocks.empty() && gbs && *gbs > 0;
  in_tokens = in_tokens || (timed_by_blocks && token_unit && !blocks.front().first.samples);
  if (timed_by_blocks) {
    auto block_step = [&](const Block& b) {
      if (b.step) return static_cast<int64_t>(std::llround(*b.step));
      return b.samples ? step_of(*b.samples) : token_step(*b.tokens);
    };
    // GigaComputing's v5.0 Stable Diffusion (callbacks.py on_train_batch_end) logs block_stop
    // with compute_consumed_samples(train_batch_start_step): the block's first position, as its
    // block_start. Such a block ends where the next one starts, the last after as many steps as
    // the others when they are all alike (a fixed train_log_interval).
    std::vector<std::pair<int64_t, int64_t>> span(blocks.size());
    std::optional<int64_t> interval;
    int64_t repeated = 0, repeated_line = 0;
    bool alike = true;
    for (size_t i = 0; i < blocks.size(); ++i) {
      span[i] = {block_step(blocks[i].first), block_step(blocks[i].second)};
      if (span[i].second != span[i].first || i + 1 == blocks.size() || !blocks[i].second.samples)
        continue;  // (MaxText's GPT-3 blocks, in tokens, are placed by the evaluations below)
      if (repeated++ == 0) repeated_line = blocks[i].second.line;
      const int64_t next = block_step(blocks[i + 1].first);
      if (next <= span[i].first) continue;
      alike = alike && (!interval || *interval == next - span[i].first);
      interval = next - span[i].first;
      span[i].second = next;
    }
    if (repeated > 0 && span.back().first == span.back().second) {
      ++repeated;
      if (interval && alike) span.back().second += *interval;
    }
    if (repeated > 0) {
      log.notes.push_back(fmt::format(
          "{}:{}: {} block_stop events name their block's first position, as its block_start "
          "does (GigaComputing's Stable Diffusion callbacks): each block read as ending where the "
          "next one starts{}",
          name, repeated_line, repeated,
          interval && alike ? fmt::format(", the last after {} steps as the others", *interval)
                            : ", the last left out (the others differ in length)"));
    }
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto& [start, stop] = blocks[i];
      const auto [from, to] = span[i];
      if (to <= from || stop.time_ms < start.time_ms) continue;
      Iteration it;
      it.step = to;
      it.span = to - from;
      it.ms = (stop.time_ms - start.time_ms) / static_cast<double>(it.span);
      it.time_ms = stop.time_ms;
      it.line = stop.line;
      it.loss = stop.loss;  // MaxDiffusion's block_stop: the block's last step's
      it.lr = stop.lr;
      steps[to] = it;
    }
    timed_by_blocks = !steps.empty();
    const bool block_loss =
        std::any_of(steps.begin(), steps.end(), [](const auto& s) { return s.second.loss; });
    if (timed_by_blocks) {
      log.notes.push_back(fmt::format(
          "{}: no train_loss events: steps timed by the block_start/block_stop events (training "
          "time between evaluations){}",
          name,
          block_loss ? "; the loss is the one block_stop's metadata names (its last step's)"
                     : ", and no training loss"));
    }
  }
  // MaxText's (Google) and Habana's GPT-3: no training events, and blocks that span nothing
  // (MaxText's early_stop_check logs block_stop with the block's first_epoch_num and no
  // epoch_count) or the whole run (Habana's one block): the evaluations' epoch_num, in tokens,
  // place the steps, each timed from the previous evaluation's start (the first: run_start).
  // tinygrad's BERT (model_train.py) has no training events and no blocks either, and its
  // eval_start names the step (step_num): placed by that step alike.
  if (steps.empty()) {
    bool by_tokens = false;
    for (size_t i = 0; i < log.evals.size(); ++i) {
      if (!ev.eval_began[i]) continue;
      const bool tokens = token_unit && eval_at[i].tokens;
      if (!tokens && !eval_at[i].step) continue;
      const int64_t step = tokens ? token_step(*eval_at[i].tokens)
                                  : static_cast<int64_t>(std::llround(*eval_at[i].step));
      if (step <= 0 || steps.contains(step)) continue;
      by_tokens = by_tokens || tokens;
      Iteration it;
      it.step = step;
      it.time_ms = *ev.eval_began[i];
      it.line = log.evals[i].line;
      steps[step] = it;
    }
    if (!steps.empty()) {
      in_tokens = in_tokens || by_tokens;
      log.notes.push_back(fmt::format(
          "{}: no train_loss events, and no block that spans steps: steps placed by {} and timed "
          "between the evaluations (less what the log brackets as evaluation), with no training "
          "loss",
          name,
          by_tokens ? "the eval_accuracy events' epoch_num"
                    : "the step each evaluation's eval_start names"));
    }
  }
  if (in_tokens) {
    const std::optional<double>& resumed = init_checkpoint;
    log.notes.push_back(fmt::format(
        "{}: positions count tokens since the resume (first_epoch_num, epoch_count, epoch_num, "
        "tracked_stats' step; NVIDIA's GPT-3 compute_consumed_mllog_tokens): the step is tokens "
        "over global_batch_size x max_sequence_length = {}, counted from the checkpoint{}",
        name, *token_unit,
        resumed ? fmt::format(" (init_checkpoint_step {})", *resumed) : std::string()));
  }
  if (block_means > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} tracked_stats train_step_time event(s) that are mlperf_common's mean over a "
        "block (at the block's samples_count, or with throughput at its first sample as \"step\") "
        "are no training step",
        name, block_means_line, block_means));
  }
  if (ev.epoch_mean_step_s) {
    log.notes.push_back(fmt::format(
        "{}:{}: a tracked_stats train_step_time ({:.6g} s) at a fractional \"step\" is the run's "
        "mean step time at an epoch fraction (NVIDIA's HugeCTR DLRM on_training_end: step = "
        "current_iter / iter_per_epoch), no training step",
        name, ev.epoch_mean_line, *ev.epoch_mean_step_s));
  }
  if (ev.garbled > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} :::MLLOG line(s) garbled mid-log (no JSON object; the first names key \"{}\", "
        "which nothing here reads) skipped",
        name, ev.garbled_line, ev.garbled, ev.garbled_key));
  }
  if (stray > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} line(s) with ':::MLLOG' but no JSON event after it (a print that mentions "
        "the tag) were skipped",
        name, stray_line, stray));
  }
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  if (peak_gib) {
    log.peak_memory_bytes = *peak_gib * 1024.0 * 1024.0 * 1024.0;
    log.memory_source = fmt::format(
        "max_memory_usage (mlperf_common: torch.cuda.max_memory_allocated of the logging rank, "
        "GiB; line {})",
        peak_line);
  }
  bool by_time_to_train = false;
  // Why the log places no training step (the error when it gives no time to train either).
  auto no_step = [&]() -> Status {
    std::string why = events > 0 ? "" : OtherFormatHint(text, "mllog");
    // Retinanet's and rgat's implementations (and tinygrad's) time whole epochs: epoch_start and
    // epoch_stop at epoch_num, with no step or samples_count inside them.
    std::string epochs_say =
        ev.epoch_stops > 0
            ? fmt::format(
                  "; its {} epoch_stop event(s) (the first at line {}) time whole epochs "
                  "by epoch_num and place no step",
                  ev.epoch_stops, ev.epoch_stop_line)
            : std::string();
    // rgat's and HugeCTR DLRM's (v4.0 to v5.1) evaluate at epoch fractions (epoch_num 0.05, ...).
    for (size_t i = 0; i < log.evals.size(); ++i) {
      const std::optional<double>& epoch = eval_at[i].tokens;
      if (!epoch || *epoch == std::floor(*epoch)) continue;
      epochs_say += fmt::format(
          "; its evaluations are at epoch fractions (epoch_num {:g} at line {}), no step either",
          *epoch, log.evals[i].line);
      break;
    }
    if (epoch_blocks_line > 0 && !token_unit && !(gbs && fact("mpe"))) {
      // BERT's reference (packed samples): one block for the epoch, throughput-only
      // tracked_stats, evaluations at epoch_num = samples that no batch size divides.
      std::string evals_say;
      for (size_t i = 0; i < log.evals.size() && evals_say.empty(); ++i) {
        if (!eval_at[i].tokens) continue;
        evals_say = gbs && *gbs > 0 && std::fmod(*eval_at[i].tokens, *gbs) != 0
                        ? fmt::format(
                              "; the eval_accuracy events' epoch_num ({:.0f} at line {}) is not "
                              "a multiple of global_batch_size {:.0f} (an epoch, or "
                              "packed or variable-size samples), so it places no step either",
                              *eval_at[i].tokens, log.evals[i].line, *gbs)
                        : fmt::format(
                              "; the eval_accuracy events' epoch_num ({:.0f} at line {}) is not "
                              "read as a step{}",
                              *eval_at[i].tokens, log.evals[i].line,
                              gbs ? "" : " (no global_batch_size event)");
      }
      return Errorf(ErrorCode::kCorrupt,
                    "{}:{}: no training step: no train_loss events, none of the {} tracked_stats "
                    "events holds a training loss, lr, grad_norm or step time, and the blocks "
                    "name first_epoch_num/epoch_count (epochs) but no samples_count or step{}",
                    name, epoch_blocks_line, tracked, evals_say);
    }
    if (epoch_blocks_line > 0 && !token_unit) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}:{}: the blocks count by first_epoch_num/epoch_count, not samples_count, "
                    "and no training record was read; they are tokens in NVIDIA's GPT-3 logs, "
                    "but global_batch_size x max_sequence_length {} (the log states {}): not "
                    "read as steps",
                    name, epoch_blocks_line,
                    gbs && fact("mpe") ? "does not divide every position" : "is not known",
                    gbs && fact("mpe") ? fmt::format("{} x {}", *gbs, *fact("mpe"))
                    : gbs              ? "no max_sequence_length"
                                       : "no global_batch_size");
    }
    if (!log.evals.empty() && !gbs) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: {} eval_accuracy events but no train_loss events and no "
                    "global_batch_size event to count the steps of their blocks by "
                    "(':::MLLOG {{... \"key\": \"global_batch_size\" ...}}') in {} lines",
                    name, log.evals.size(), log.lines);
    }
    if (tracked > 0 || block_stops > 0) {
      return Errorf(ErrorCode::kCorrupt,
                    "{}: no training step in {} lines: none of its {} tracked_stats events holds "
                    "a training loss, lr, grad_norm or step time, and {}{}",
                    name, log.lines, tracked,
                    block_stops > 0 ? fmt::format("its {} block_stop events give no step (no "
                                                  "global_batch_size, or no samples_count or step)",
                                                  block_stops)
                                    : std::string("it has no block_stop events"),
                    epochs_say);
    }
    // A log cut off before the run began (v2.1 ASUSTeK DLRM result_2: the submission and
    // hyperparameter events, then nothing) says so rather than only what it lacks.
    const std::string unstarted =
        events > 0 && ev.run_start_line == 0 && log.evals.empty()
            ? "; nor run_start or any evaluation: the run never started (the log is cut off, or "
              "the job failed while setting up)"
            : "";
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no MLPerf train_loss, tracked_stats or block_stop events (':::MLLOG {{... "
                  "\"key\": \"train_loss\" ...}}') in {} lines ({} :::MLLOG events){}{}{}",
                  name, log.lines, events, epochs_say, unstarted, why);
  };
  if (log.iterations.empty()) {
    Status why = no_step();
    // MLPerf's epoch-timed benchmarks (ResNet, SSD/RetinaNet, U-Net3D; R-GAT and DLRM evaluating
    // at epoch fractions; NVIDIA's packed BERT) place no step, but their result is the time to
    // train: read by it, the epochs and the evaluations, where the log has them.
    if (!run_start || (!run_stop && ev.epoch_stops == 0 && log.evals.empty())) return why;
    log.notes.push_back(fmt::format(
        "{}; the run is read by MLPerf's own measures instead: the time to train (run_start to "
        "run_stop), the epochs and the evaluations (no token/p/s, loss or MFU)",
        why.message()));
    by_time_to_train = true;
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
          "{}: {} of evaluation (eval_start to eval_stop, block_stop to block_start) left out of "
          "the time between the records",
          name,
          left_out >= 100 ? fmt::format("{:.1f} s", left_out / 1000.0)
                          : fmt::format("{:.0f} ms", left_out)));
    }
    if (timed_by_own) {
      log.notes.push_back(fmt::format(
          "{}: the steps' time from tracked_stats' train_step_time (the trainer's own), not "
          "from the time_ms gaps between events",
          name));
    }
  }
  if (run_start && run_stop) log.wall_s = (*run_stop - *run_start) / 1000.0;
  // MLPerf's time to train is run_start to run_stop of a run whose run_stop says "success"
  // (mlperf_logging result_summarizer; its RCP checker counts any other status as not converged).
  if (log.wall_s && !ev.run_status.empty() && ev.run_status != "success") {
    log.notes.push_back(fmt::format(
        "{}:{}: run_stop's status is \"{}\": the run stopped without reaching its quality "
        "target, so run_start to run_stop ({:.1f} s) is no time to train",
        name, ev.run_stop_line, ev.run_status, *log.wall_s));
  } else if (log.wall_s && ev.run_status.empty()) {
    log.notes.push_back(fmt::format(
        "{}:{}: run_stop names no status (metadata.status \"success\" or \"aborted\"), so "
        "run_start to run_stop ({:.1f} s) is not counted as a time to train",
        name, ev.run_stop_line, *log.wall_s));
  } else if (run_start && !run_stop) {
    log.notes.push_back(fmt::format(
        "{}:{}: run_start but no run_stop: the run did not finish (killed, crashed, or the log "
        "is cut off), so the log gives no time to train",
        name, ev.run_start_line));
  }
  log.mlperf = RunResult(ev, by_time_to_train);
  if (!log.evals.empty()) {
    log.eval_metric = SeriesMetric(ev, series_metric, name, log.notes);
    if (EvalMetric* m = log.eval_metric ? &*log.eval_metric : nullptr) {
      m->reached = JointlyReached(ev, name, log.notes);
      if (!m->reached) m->reached = AnyMeetsTarget(*m, log.evals);
    }
  }
  if (ev.eval_not_number > 0) {
    log.notes.push_back(
        fmt::format("{}:{}: {} eval_accuracy event(s) whose value is no number (nor Mask R-CNN's "
                    "{{\"BBOX\", \"SEGM\"}}) left out",
                    name, ev.eval_not_number_line, ev.eval_not_number));
  }
  return log;
}

}  // namespace bm::logparse
