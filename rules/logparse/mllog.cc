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
// metadata.step when the event has one (0 included). Not training steps: a tracked_stats
// event with none of these (validation_time alone); one with throughput alone (the MLPerf v5.1
// submissions' log_throughput -- AMD callbacks.py, Cisco custom_callbacks.py, Dell NeMo
// _log_throughputs -- set its metadata.step to global_step x gbs: samples); one with
// train_step_time alone, a samples_count and no step (mlperf_common's _log_train_step_time: the
// mean over the block since the previous one, its samples_count the block's, not the run's); one
// with throughput and train_step_time and no loss, wherever it sits (mlperf_common's
// _log_training_throughput before 2025-07: the block's mean at "step" = the block's first sample,
// from 0; its max_memory_usage, round(torch.cuda.max_memory_allocated() / 2**30, 3) on the
// logging rank, is the log's peak memory). Units other than steps: NVIDIA's GPT-3 (v4.x
// custom_callbacks.py compute_consumed_mllog_tokens) counts tokens since the resume in the blocks'
// first_epoch_num/epoch_count, epoch_num and "train_step_timing in s"'s step: read as steps over
// global_batch_size x max_sequence_length when the log states both and every such position is a
// multiple (else, with no other record, an error naming the block); NVIDIA's v5.0 NeMo
// MetricsLogger logs tracked_stats at "step" = (step + 1) x gbs, samples: read as steps over gbs
// when every such step is a positive multiple of gbs and the last one before each eval_accuracy
// placed by samples_count equals that samples_count (steps would be gbs times smaller).
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
// unit differs between benchmarks (samples/s, tokens/s, sequences/s). The only memory figure is
// mlperf_common's max_memory_usage.
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
    std::optional<double> step;  // metadata.step as logged (0 included)
    std::optional<double> samples_count;
    std::optional<double> own_ms;  // tracked_stats' train_step_time, in ms
    bool timing_in_s = false;      // NeMo 1's "train_step_timing in s" (GPT-3: step in tokens)
    bool tracked = false;          // a tracked_stats event, not train_loss
  };
  // A block's position: samples_count, or (NVIDIA's GPT-3) first_epoch_num[+epoch_count] in
  // tokens; mlperf_common also names the step.
  struct Block {
    double time_ms = 0;
    std::optional<double> samples, tokens;
    std::optional<double> step;  // mlperf_common names it; its samples_count is per block
    int64_t line = 0;
  };
  std::vector<Raw> raws;
  std::vector<std::pair<Block, Block>> blocks;  // start, stop
  std::optional<Block> open_block;
  // Where each eval_accuracy is: the enclosing eval_start's step or samples_count (the run's
  // step count; AMD's eval_accuracy names the Lightning logger's 0-based step x gbs), else its own.
  struct EvalAt {
    std::optional<double> step, samples, tokens;
  };
  std::vector<EvalAt> eval_at;
  EvalAt open_eval_at;
  std::optional<double> run_start, run_stop;
  // Time the log brackets as not training: eval_start..eval_stop, and block_stop..the next
  // block_start (the blocks are the training between evaluations).
  std::vector<std::pair<double, double>> paused;
  std::optional<double> eval_open, between_blocks;
  int64_t events = 0, stray = 0, stray_line = 0, block_means = 0, block_means_line = 0;
  int64_t tracked = 0, block_stops = 0, epoch_blocks_line = 0;
  // Positions that NVIDIA's GPT-3 logs count in tokens: the blocks' first_epoch_num and
  // first_epoch_num + epoch_count, epoch_num, and "train_step_timing in s"'s step.
  std::vector<double> token_positions;
  // metadata.step of the last training tracked_stats event with no samples_count, and at each
  // eval_accuracy that the log places by samples_count, that step and those samples: where they
  // are equal, the steps count samples (NVIDIA's v5.0 NeMo MetricsLogger).
  std::optional<double> last_plain_step;
  std::vector<std::pair<double, double>> step_at_eval;  // (last_plain_step, samples_count)
  std::optional<double> peak_gib, init_checkpoint;
  int64_t peak_line = 0;
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
    } else if (key == "init_checkpoint_step" && value.is_number()) {
      init_checkpoint = value.get<double>();
    } else if (key == mllog::kGradientAccumulationSteps && value.is_number()) {
      SetFact(log, "gas", value.get<double>(), no);
    } else if (key == mllog::kBlockStart || key == mllog::kBlockStop) {
      const bool start = key == mllog::kBlockStart;
      std::optional<double> tokens = Num(meta, "first_epoch_num");
      if (tokens && !samples) {
        if (!start) *tokens += Num(meta, "epoch_count").value_or(0);
        token_positions.push_back(*tokens);
        if (epoch_blocks_line == 0) epoch_blocks_line = no;
      } else {
        tokens.reset();
      }
      const Block b{time_ms.value_or(0), samples, tokens, Num(meta, "step"), no};
      if (start) {
        if (time_ms && between_blocks) paused.push_back({*between_blocks, *time_ms});
        between_blocks.reset();
        if (time_ms && (samples || tokens)) open_block = b;
      } else {
        ++block_stops;
        between_blocks = time_ms;
        if (time_ms && (samples || tokens) && open_block) blocks.push_back({*open_block, b});
        open_block.reset();
      }
    } else if (key == mllog::kEvalStart) {
      eval_open = time_ms;
      std::optional<double> tokens = samples ? std::nullopt : Num(meta, "epoch_num");
      if (tokens) token_positions.push_back(*tokens);
      open_eval_at = {Num(meta, "step"), samples, tokens};
    } else if (key == mllog::kEvalStop) {
      if (time_ms && eval_open) paused.push_back({*eval_open, *time_ms});
      eval_open.reset();
      open_eval_at = {};
    } else if (key == mllog::kEvalAccuracy && value.is_number()) {
      log.evals.push_back({0, value.get<double>(), no});
      std::optional<double> tokens = samples ? std::nullopt : Num(meta, "epoch_num");
      if (tokens) token_positions.push_back(*tokens);
      const EvalAt at = open_eval_at.step || open_eval_at.samples || open_eval_at.tokens
                            ? open_eval_at
                            : EvalAt{std::nullopt, samples, tokens};
      eval_at.push_back(at);
      if (at.samples && last_plain_step) step_at_eval.push_back({*last_plain_step, *at.samples});
      log.eval_what = "MLPerf eval_accuracy";
    } else if (key == mllog::kTrainLoss || key == kTrackedStats) {
      std::optional<double> step = Num(meta, "step");
      const bool loss_event = key == mllog::kTrainLoss;
      if (!loss_event) ++tracked;
      if (std::optional<double> gib = Num(value, "max_memory_usage")) {
        // mlperf_common's round(torch.cuda.max_memory_allocated() / 2**30, 3): GiB.
        if (!peak_gib || *gib > *peak_gib) peak_gib = gib, peak_line = no;
      }
      if (!step && !samples && !loss_event) return;
      Raw r;
      r.step = step;
      r.tracked = !loss_event;
      r.it.line = no;
      r.it.time_ms = time_ms;
      r.it.loss = loss_event && value.is_number() ? std::optional<double>(value.get<double>())
                                                  : TrackedLoss(value);
      r.it.lr = Num(value, "lr");
      if (!r.it.lr) r.it.lr = Num(meta, "lr");
      r.it.grad_norm = Num(value, "grad_norm");
      if (std::optional<double> s = Num(value, "train_step_time")) r.own_ms = *s * 1000.0;
      if (std::optional<double> s = Num(value, "train_step_timing in s")) {
        r.own_ms = *s * 1000.0;
        r.timing_in_s = true;
      }
      const bool statistics = loss_event || r.it.loss || r.it.lr || r.it.grad_norm;
      if (!statistics && !r.own_ms)
        return;  // not a training step's statistics (validation_time; throughput alone)
      if (!statistics && ((!step && samples) || Num(value, "throughput"))) {
        // mlperf_common's block means: _log_train_step_time (train_step_time at the block's
        // samples_count, no step), and before 2025-07 _log_training_throughput (throughput and
        // train_step_time at "step" = the block's first step x gbs, from 0).
        if (block_means++ == 0) block_means_line = no;
        return;
      }
      r.samples_count = samples;
      if (r.timing_in_s && step) token_positions.push_back(*step);
      if (!loss_event && step && !samples && !r.timing_in_s) last_plain_step = step;
      raws.push_back(r);
    }
  });
  BM_TRY(error);
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
  if (!token_positions.empty() && gbs && fact("mpe") && *gbs * *fact("mpe") > 0) {
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
  for (Raw& r : raws) {
    if (r.samples_count && gbs && *gbs > 0) {
      r.it.step = step_of(*r.samples_count);  // over metadata.step, which NeMo counts from 0
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
  // Blocks placed by tokens count only when the tokens could be turned into steps.
  std::erase_if(blocks, [&](const auto& b) {
    return !token_unit && !b.first.samples && !b.first.step && !b.second.step;
  });
  const bool timed_by_blocks = steps.empty() && !blocks.empty() && gbs && *gbs > 0;
  in_tokens = in_tokens || (timed_by_blocks && token_unit && !blocks.front().first.samples);
  if (in_tokens) {
    const std::optional<double>& resumed = init_checkpoint;
    log.notes.push_back(fmt::format(
        "{}: positions count tokens since the resume (first_epoch_num, epoch_count, epoch_num, "
        "tracked_stats' step; NVIDIA's GPT-3 compute_consumed_mllog_tokens): the step is tokens "
        "over global_batch_size x max_sequence_length = {}, counted from the checkpoint{}",
        name, *token_unit,
        resumed ? fmt::format(" (init_checkpoint_step {})", *resumed) : std::string()));
  }
  if (timed_by_blocks) {
    auto block_step = [&](const Block& b) {
      if (b.step) return static_cast<int64_t>(std::llround(*b.step));
      return b.samples ? step_of(*b.samples) : token_step(*b.tokens);
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
        "{}:{}: {} tracked_stats train_step_time event(s) that are mlperf_common's mean over a "
        "block (at the block's samples_count, or with throughput at its first sample as \"step\") "
        "are no training step",
        name, block_means_line, block_means));
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
  if (log.iterations.empty()) {
    std::string why = events > 0 ? "" : OtherFormatHint(text, "mllog");
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
                    "a training loss, lr, grad_norm or step time, and its {} block_stop events "
                    "give no step (no global_batch_size, or no samples_count or step)",
                    name, log.lines, tracked, block_stops);
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
