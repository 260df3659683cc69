#include "rules/logparse/mllog_events.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "base/mllog.h"
#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kTrackedStats = "tracked_stats";
constexpr std::string_view kInitCheckpointStep = "init_checkpoint_step";

// tracked_stats' training loss, by the names the references give it.
std::optional<double> TrackedLoss(const nlohmann::json& value) {
  for (const char* key : {"loss", "reduced_train_loss", "train_loss"})
    if (std::optional<double> v = JsonNumber(value, key)) return v;
  return std::nullopt;
}

// The step an event names: metadata.step, else step_num, as NVIDIA's v4.0 Stable Diffusion
// names a tracked_stats' step (mlperf_logging_utils.py) and tinygrad an eval_start's.
std::optional<double> NamedStep(const nlohmann::json& meta) {
  if (std::optional<double> step = JsonNumber(meta, "step")) return step;
  return JsonNumber(meta, "step_num");
}

// The keys the events below are read from: a line garbled mid-log is an error only when it names
// one of them (or none).
bool IsReadKey(std::string_view key) {
  for (std::string_view k : {mllog::kRunStart,
                             mllog::kRunStop,
                             mllog::kEpochStart,
                             mllog::kEpochStop,
                             mllog::kSubmissionBenchmark,
                             mllog::kSubmissionOrg,
                             mllog::kSubmissionDivision,
                             mllog::kSubmissionPlatform,
                             mllog::kTrainSamples,
                             mllog::kEvalSamples,
                             mllog::kTargetAccuracy,
                             mllog::kGlobalBatchSize,
                             mllog::kMaxSequenceLength,
                             kInitCheckpointStep,
                             mllog::kGradientAccumulationSteps,
                             mllog::kBlockStart,
                             mllog::kBlockStop,
                             mllog::kEvalStart,
                             mllog::kEvalStop,
                             mllog::kEvalAccuracy,
                             mllog::kTrainLoss,
                             kTrackedStats})
    if (key == k) return true;
  return false;
}

// The key a line that is no JSON object still names in its text (`"key": "init_start"`), if any.
std::optional<std::string_view> KeyInText(std::string_view rest) {
  constexpr std::string_view kKey = "\"key\": \"";
  const size_t at = rest.find(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t from = at + kKey.size(), to = rest.find('"', from);
  if (to == std::string_view::npos) return std::nullopt;
  return rest.substr(from, to - from);
}

// Where a submission_* event's text goes, nullptr for another key.
std::string* SubmissionField(std::string_view key, MllogEvents& ev) {
  if (key == mllog::kSubmissionBenchmark) return &ev.named.benchmark;
  if (key == mllog::kSubmissionOrg) return &ev.named.submitter;
  if (key == mllog::kSubmissionDivision) return &ev.named.division;
  if (key == mllog::kSubmissionPlatform) return &ev.named.platform;
  return nullptr;
}

// An eval_accuracy event's value for the series: a number, or the box mAP of Mask R-CNN's
// {"BBOX": b, "SEGM": s}; nullopt for anything else. Also notes the metric the
// value is of in ev.eval_metrics (Stable Diffusion's metadata.metric, FID or CLIP: mllog.cc keeps
// one metric's; "BBOX") and every named value in ev.metric_values.
std::optional<double> EvalValue(const nlohmann::json& value, const nlohmann::json& meta,
                                std::optional<double> samples, int64_t line, MllogEvents& ev) {
  std::string metric = meta.is_object() && meta.contains("metric") && meta["metric"].is_string()
                           ? meta["metric"].get<std::string>()
                           : std::string();
  const double position = samples ? *samples : NamedStep(meta).value_or(static_cast<double>(line));
  std::optional<double> number, segm;
  if (value.is_number()) {
    number = value.get<double>();
  } else if (value.is_object()) {
    number = JsonNumber(value, "BBOX");
    segm = JsonNumber(value, "SEGM");
    if (number && metric.empty()) metric = "BBOX";
  }
  if (!number) return number;
  ev.eval_metrics.push_back(metric);
  if (!metric.empty()) ev.metric_values.push_back({metric, *number, position});
  if (segm) ev.metric_values.push_back({"SEGM", *segm, position});
  return number;
}

}  // namespace

Status ReadMllogEvents(std::string_view text, std::string_view name, ParsedLog& log,
                       MllogEvents& ev) {
  using Raw = MllogEvents::Raw;
  using Block = MllogEvents::Block;
  using EvalAt = MllogEvents::EvalAt;
  Status error = Status::Ok();
  const int64_t total_lines = CountLines(text);
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    size_t at = line.find(":::MLLOG");
    if (at == std::string_view::npos) return;
    std::string_view rest = Trim(line.substr(at + 8));
    if (rest.empty() || rest.front() != '{') {
      if (ev.stray++ == 0) ev.stray_line = no;
      return;
    }
    nlohmann::json e = nlohmann::json::parse(rest, nullptr, false);
    if (e.is_discarded() || !e.is_object() || !e.contains("key") || !e["key"].is_string()) {
      if (no == total_lines) return;  // a last line cut off mid-way
      // Lambda's v4.1 results have one line garbled by a text substitution (`"value":
      // nullLambdaorkspace/...` in an init_start): skipped, with a note, when the key it still
      // names is one nothing here reads.
      if (std::optional<std::string_view> k = KeyInText(rest); k && !IsReadKey(*k)) {
        if (ev.garbled++ == 0) {
          ev.garbled_line = no;
          ev.garbled_key = NoteText(*k);
        }
        return;
      }
      error =
          Errorf(ErrorCode::kCorrupt, "{}:{}: an :::MLLOG line that is not a JSON event", name, no);
      return;
    }
    ++ev.events;
    const std::string key = e["key"];
    const nlohmann::json& value = e.contains("value") ? e["value"] : nlohmann::json();
    const nlohmann::json& meta = e.contains("metadata") ? e["metadata"] : nlohmann::json();
    std::optional<double> time_ms = JsonNumber(e, "time_ms");
    // The event's place in the run, which steps are computed from: a number from 0 to 2^53 (an
    // epoch fraction allowed), as WholeCount's bounds.
    for (const char* place :
         {"step", "step_num", "samples_count", "epoch_num", "first_epoch_num", "epoch_count"}) {
      std::optional<double> v = JsonNumber(meta, place);
      if (v && !WholeCount(std::floor(*v))) {
        error = Errorf(ErrorCode::kCorrupt, "{}:{}: metadata '{}' is {}, not a place in the run",
                       name, no, place, meta[place].dump());
        return;
      }
    }
    std::optional<double> samples = JsonNumber(meta, "samples_count");
    if (key == mllog::kRunStart) {
      if (!ev.run_start) ev.run_start = time_ms, ev.run_start_line = no;
    } else if (key == mllog::kRunStop) {
      ev.run_stop = time_ms;
      ev.run_stop_line = no;
      ev.run_stop_step = NamedStep(meta);
      ev.run_status = meta.is_object() && meta.contains("status") && meta["status"].is_string()
                          ? meta["status"].get<std::string>()
                          : std::string();
    } else if (key == mllog::kEpochStart) {
      if (std::optional<double> epoch = JsonNumber(meta, "epoch_num"); epoch && time_ms)
        ev.epoch_began.try_emplace(*epoch, *time_ms);
    } else if (key == mllog::kEpochStop) {
      if (ev.epoch_stops++ == 0) ev.epoch_stop_line = no;
      if (std::optional<double> epoch = JsonNumber(meta, "epoch_num"); epoch && time_ms)
        ev.epoch_ended[*epoch] = *time_ms;
    } else if (std::string* field = SubmissionField(key, ev); field && value.is_string()) {
      if (field->empty()) *field = NoteText(value.get<std::string>());  // the first of each
    } else if ((key == mllog::kTrainSamples || key == mllog::kEvalSamples) && value.is_number()) {
      std::optional<double>& into =
          key == mllog::kTrainSamples ? ev.named.train_samples : ev.named.eval_samples;
      if (!into) into = value.get<double>();
    } else if (key == mllog::kTargetAccuracy && value.is_number()) {
      if (!ev.target_accuracy) {
        ev.target_accuracy = value.get<double>();
        ev.target_line = no;
      }
    } else if (key == mllog::kGlobalBatchSize && value.is_number()) {
      if (std::optional<int64_t> gbs = WholeCount(value.get<double>()); !gbs || *gbs < 1) {
        error = Errorf(ErrorCode::kCorrupt, "{}:{}: global_batch_size is {}, not a batch size",
                       name, no, value.dump());
        return;
      }
      SetFact(log, "gbs", value.get<double>(), no);
    } else if (key == mllog::kMaxSequenceLength && value.is_number()) {
      SetFact(log, "mpe", value.get<double>(), no);
    } else if (key == kInitCheckpointStep && value.is_number()) {
      ev.init_checkpoint = value.get<double>();
    } else if (key == mllog::kGradientAccumulationSteps && value.is_number()) {
      SetFact(log, "gas", value.get<double>(), no);
    } else if (key == mllog::kBlockStart || key == mllog::kBlockStop) {
      const bool start = key == mllog::kBlockStart;
      std::optional<double> tokens = JsonNumber(meta, "first_epoch_num");
      if (tokens && !samples) {
        if (!start) *tokens += JsonNumber(meta, "epoch_count").value_or(0);
        ev.token_positions.push_back(*tokens);
        if (ev.epoch_blocks_line == 0) ev.epoch_blocks_line = no;
      } else {
        tokens.reset();
      }
      // MaxDiffusion's block_stop carries the block's last loss and lr.
      const Block b{time_ms.value_or(0),
                    samples,
                    tokens,
                    JsonNumber(meta, "step"),
                    no,
                    start ? std::nullopt : JsonNumber(meta, "loss"),
                    start ? std::nullopt : JsonNumber(meta, "lr")};
      if (start) {
        if (time_ms && ev.between_blocks) ev.paused.push_back({*ev.between_blocks, *time_ms});
        ev.between_blocks.reset();
        if (time_ms && (samples || tokens)) ev.open_block = b;
      } else {
        ++ev.block_stops;
        if (samples) ev.block_stop_at.push_back({no, *samples, JsonNumber(meta, "step"), time_ms});
        ev.between_blocks = time_ms;
        if (time_ms && (samples || tokens) && ev.open_block)
          ev.blocks.push_back({*ev.open_block, b});
        ev.open_block.reset();
      }
    } else if (key == mllog::kEvalStart) {
      ev.eval_open = time_ms;
      std::optional<double> tokens = samples ? std::nullopt : JsonNumber(meta, "epoch_num");
      if (tokens) ev.token_positions.push_back(*tokens);
      // tinygrad's BERT names the step (step_num) beside epoch_num; where the eval_start names
      // samples_count, they place it, not its step_num.
      ev.open_eval_at = {samples ? JsonNumber(meta, "step") : NamedStep(meta), samples, tokens,
                         std::nullopt};
    } else if (key == mllog::kEvalStop) {
      if (time_ms && ev.eval_open) ev.paused.push_back({*ev.eval_open, *time_ms});
      ev.eval_open.reset();
      ev.closed_eval_at = ev.open_eval_at;
      ev.open_eval_at = {};
    } else if (key == mllog::kEvalAccuracy) {
      const std::optional<double> v = EvalValue(value, meta, samples, no, ev);
      if (!v) {
        if (ev.eval_not_number++ == 0) ev.eval_not_number_line = no;
        return;
      }
      log.evals.push_back({0, *v, no});
      std::optional<double> tokens = samples ? std::nullopt : JsonNumber(meta, "epoch_num");
      if (tokens) ev.token_positions.push_back(*tokens);
      // tinygrad's BERT prints eval_accuracy after its eval_stop, naming the eval_start's
      // epoch_num but not its step_num: it is at that eval_start's place.
      const EvalAt& closed = ev.closed_eval_at;
      const bool after_its_stop = !samples && closed.step && tokens && closed.tokens == tokens;
      EvalAt at = ev.open_eval_at.step || ev.open_eval_at.samples || ev.open_eval_at.tokens
                      ? ev.open_eval_at
                  : after_its_stop ? closed
                                   : EvalAt{std::nullopt, samples, tokens, std::nullopt};
      at.named_step = NamedStep(meta);
      ev.eval_at.push_back(at);
      ev.eval_began.push_back(ev.eval_open ? ev.eval_open : time_ms);
      if (at.samples && ev.last_plain_step)
        ev.step_at_eval.push_back({*ev.last_plain_step, *at.samples});
      log.eval_what = "MLPerf eval_accuracy";
    } else if (key == mllog::kTrainLoss || key == kTrackedStats) {
      std::optional<double> step = NamedStep(meta);
      const bool loss_event = key == mllog::kTrainLoss;
      if (!loss_event) ++ev.tracked;
      if (std::optional<double> gib = JsonNumber(value, "max_memory_usage")) {
        // mlperf_common's round(torch.cuda.max_memory_allocated() / 2**30, 3): GiB.
        if (!ev.peak_gib || *gib > *ev.peak_gib) ev.peak_gib = gib, ev.peak_line = no;
      }
      if (!step && !samples && !loss_event) return;
      Raw r;
      r.step = step;
      r.tracked = !loss_event;
      r.it.line = no;
      r.it.time_ms = time_ms;
      r.it.loss = loss_event && value.is_number() ? std::optional<double>(value.get<double>())
                                                  : TrackedLoss(value);
      r.it.lr = JsonNumber(value, "lr");
      if (!r.it.lr) r.it.lr = JsonNumber(meta, "lr");
      r.it.grad_norm = JsonNumber(value, "grad_norm");
      if (std::optional<double> s = JsonNumber(value, "train_step_time")) r.own_ms = *s * 1000.0;
      if (std::optional<double> s = JsonNumber(value, "train_step_timing in s")) {
        r.own_ms = *s * 1000.0;
        r.timing_in_s = true;
      }
      const bool statistics = loss_event || r.it.loss || r.it.lr || r.it.grad_norm;
      if (!statistics && !r.own_ms)
        return;  // not a training step's statistics (validation_time; throughput alone)
      if (!statistics && step && *step != std::floor(*step)) {
        // NVIDIA's HugeCTR DLRM (v6.0 mlperf_logger/callbacks.py on_training_end) logs the run's
        // mean step time at "step" = current_iter / iter_per_epoch: an epoch fraction.
        if (!ev.epoch_mean_step_s) {
          ev.epoch_mean_step_s = *r.own_ms / 1000.0;
          ev.epoch_mean_line = no;
        }
        return;
      }
      if (!statistics && ((!step && samples) || JsonNumber(value, "throughput"))) {
        // mlperf_common's block means: _log_train_step_time (train_step_time at the block's
        // samples_count, no step), and before 2025-07 _log_training_throughput (throughput and
        // train_step_time at "step" = the block's first step x gbs, from 0).
        if (ev.block_means++ == 0) ev.block_means_line = no;
        return;
      }
      r.samples_count = samples;
      if (r.timing_in_s && step) ev.token_positions.push_back(*step);
      if (!loss_event && step && !samples && !r.timing_in_s) ev.last_plain_step = step;
      ev.raws.push_back(r);
    }
  });
  return error;
}

}  // namespace bm::logparse
