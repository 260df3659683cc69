#include "rules/logparse/trainer_dicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

std::optional<double> Get(const TrainerDict& d, std::string_view key) {
  auto it = d.find(key);
  return it == d.end() ? std::nullopt : it->second;
}

bool Has(const TrainerDict& d, std::string_view key) { return d.find(key) != d.end(); }

// After `key` in line: spaces, quotes, '=' or ':' and the value's text.
std::optional<std::string_view> SettingValue(std::string_view line, std::string_view key) {
  size_t at = FindNoCase(line, key);
  if (at == std::string_view::npos) return std::nullopt;
  if (at > 0 && (std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_'))
    return std::nullopt;
  size_t p = at + key.size();
  if (p < line.size() && (std::isalnum(static_cast<unsigned char>(line[p])) || line[p] == '_'))
    return std::nullopt;
  while (p < line.size() &&
         (line[p] == ' ' || line[p] == '\'' || line[p] == '"' || line[p] == '=' || line[p] == ':'))
    ++p;
  size_t end = line.find_first_of(" ,)'\"", p);
  return line.substr(p, end == std::string_view::npos ? std::string_view::npos : end - p);
}

// SettingValue for a TrainingArguments field, under its name or HfArgumentParser's
// dashed alias ("--logging-steps 10": _parse_dataclass_field adds it for every name with a '_').
std::optional<std::string_view> FieldValue(std::string_view line, std::string_view field) {
  if (std::optional<std::string_view> v = SettingValue(line, field)) return v;
  std::string dashed(field);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  return SettingValue(line, dashed);
}

}  // namespace

bool TrainerDictReader::ReadSetting(std::string_view line) {
  if (std::optional<std::string_view> v = FieldValue(line, "logging_steps")) {
    std::optional<int64_t> n = WholeCount(LeadingNumber(*v));
    if (n && *n >= 1) {
      logging_steps_ = *n;
      stated_ = true;
      if (std::optional<std::string_view> f = FieldValue(line, "logging_first_step"))
        first_step_ = *f == "True" || *f == "true" || f->empty() || *f == "--";
      return true;
    }
  }
  if (std::optional<std::string_view> f = FieldValue(line, "logging_first_step")) {
    // "--logging_first_step" alone (HfArgumentParser's bool flag) means True.
    first_step_ = *f == "True" || *f == "true" || f->empty() || f->rfind("--", 0) == 0;
    return true;
  }
  return false;
}

void TrainerDictReader::SawStep(int64_t step) { anchored_ = step; }

Result<bool> TrainerDictReader::ReadLine(std::string_view line, int64_t line_no,
                                         std::string_view name, std::map<int64_t, Iteration>& steps,
                                         ParsedLog& log) {
  bool quoted_epoch = false;
  std::optional<TrainerDict> dict = ParseTrainerDict(line, &quoted_epoch);
  if (!dict) return false;
  if (ReadEcho(line, *dict, line_no)) return true;  // LLaMA-Factory's copy of the next dict
  Read(*dict, line_no, steps, log, quoted_epoch);
  BM_TRY(memory_.Read(*dict, name, line_no));
  return true;
}

bool TrainerDictReader::ReadEcho(std::string_view line, const TrainerDict& dict, int64_t line_no) {
  const std::string_view before = line.substr(0, line.find('{'));
  if (before.find("llamafactory.train.callbacks") == std::string_view::npos &&
      before.find("llmtuner.extras.callbacks") == std::string_view::npos)
    return false;
  if (!Has(dict, "loss")) return false;
  if (bar_ && bar_->line == line_no) bar_->ends_line = true;  // the echo is this step's
  if (std::optional<double> t = Get(dict, "throughput"); t && *t > 0)
    echo_throughput_ = std::pair{*t, line_no};
  if (echo_line_ == 0) echo_line_ = line_no;
  return true;
}

std::optional<std::pair<int64_t, int64_t>> TrainerDictReader::ResumedAtTheEnd() const {
  if (!resumed_ || bar_total_after_resume_ == 0 || resumed_step_ < bar_total_after_resume_)
    return std::nullopt;
  return std::pair{resumed_step_, resumed_line_};
}

bool TrainerDictReader::ReadResume(std::string_view line, int64_t line_no,
                                   std::map<int64_t, Iteration>& steps, ParsedLog& log) {
  // transformers 4.x: "Continuing training from global step N"; 5.x: "Resuming training from
  // checkpoint with epoch E and global step N" (5.17, tests/data/logs/trainer_live/resumed_info).
  std::string_view key = "Continuing training from global step ";
  size_t at = line.find(key);
  if (at == std::string_view::npos && line.find("Resuming training from checkpoint") != line.npos) {
    key = "and global step ";
    at = line.find(key);
  }
  if (at == std::string_view::npos) return false;
  std::optional<int64_t> n = WholeCount(LeadingNumber(line.substr(at + key.size())));
  if (!n) return false;
  const int64_t step = *n;
  steps.erase(steps.upper_bound(step), steps.end());
  ++log.restarts;
  resumed_ = true;
  resumed_step_ = step;
  resumed_line_ = line_no;
  bar_total_after_resume_ = 0;
  seen_.clear();  // the resumed run may print the same dicts again
  last_ = step;
  anchored_.reset();
  bar_.reset();
  pending_.reset();
  confirmed_.reset();
  return true;
}

void TrainerDictReader::DropClosing(ParsedLog& log) {
  if (average_after_ && *average_after_ > dicts_.size()) {  // read at a loss dict dropped
    log.trainer_average.reset();
    average_after_.reset();
  }
  if (!closing_line_) return;
  log.wall_s.reset();
  log.trainer_average.reset();
  closing_line_.reset();
  closing_tokens_.reset();
  extra_closing_.clear();
  steps_run_.reset();
  closing_at_.reset();
  average_after_.reset();
}

void TrainerDictReader::NewRun(int64_t line, double from, double to,
                               std::map<int64_t, Iteration>& steps, ParsedLog& log) {
  new_runs_.push_back({line, from, to, steps.empty() ? 0 : steps.rbegin()->first});
  steps.clear();
  log.evals.clear();
  eval_after_.clear();
  dicts_.clear();
  DropClosing(log);  // the run before it closed: its figures are not this run's
  ++log.restarts;
  seen_.clear();
  counted_ = 0;
  last_ = 0;
  anchored_.reset();
  bar_total_ = 0;
  pending_.reset();
  confirmed_.reset();
}

void TrainerDictReader::RestartAt(int64_t step, int64_t line, std::map<int64_t, Iteration>& steps,
                                  ParsedLog& log) {
  restarts_at_.push_back({line, step, last_});
  steps.erase(steps.lower_bound(step), steps.end());
  std::erase_if(dicts_, [&](const Numbered& d) { return d.step >= step; });
  // An evaluation after a dict erased keeps the step it was read at (PlaceEvals reads the dict
  // before it).
  std::erase_if(eval_after_, [&](const EvalAfter& e) { return e.after > dicts_.size(); });
  DropClosing(log);  // the earlier run closed: its figures are not the later run's
  ++log.restarts;
}

int64_t TrainerDictReader::NextAfter(int64_t step) const {
  if (first_step_ && step < 1) return 1;
  return (step / logging_steps_ + 1) * logging_steps_;
}

bool TrainerDictReader::Read(const TrainerDict& dict, int64_t line,
                             std::map<int64_t, Iteration>& steps, ParsedLog& log,
                             bool quoted_epoch) {
  Confirm(steps, log);
  pending_.reset();
  const std::optional<Bar> bar = std::exchange(bar_, std::nullopt);  // a bar is for one dict
  std::optional<double> named;
  for (std::string_view key : {"step", "global_step",  // PaddleNLP's Trainer
                               "global_step/max_steps", "steps[global_step/max_steps]",  // ms-swift
                               "iteration",       // ms-swift 4's Megatron trainer
                               "current_steps"})  // LLaMA-Factory's jsonl
    if (!named) named = Get(dict, key);
  // A step that is no whole number (a mangled `'step': 1e+20`) names none.
  if (named && !WholeCount(*named)) named.reset();
  // LLaMA-Factory's trainer_log.jsonl: with num_input_tokens_seen, every line carries
  // "throughput" = the input tokens of all devices since on_train_begin over the time since then
  // (LogCallback.on_log), its last line the whole run's.
  if (std::optional<double> tokens = Get(dict, "throughput");
      tokens && *tokens > 0 && named && Has(dict, "current_steps") &&
      (!log.trainer_average || log.trainer_average->tokens_per_s)) {
    TrainerAverage avg;
    avg.tokens_per_s = tokens;
    avg.through_step = static_cast<int64_t>(*named);
    avg.line = line;
    avg.what =
        "LLaMA-Factory's throughput (input tokens of all devices since the start, over the "
        "time since then)";
    log.trainer_average = avg;
  }
  // transformers' Trainer.log adds speed_metrics("train", ...) (train_runtime, ...) to every
  // dict with include_num_input_tokens_seen; the closing dict is the one without a loss.
  if (Has(dict, "train_runtime") && !Has(dict, "loss")) {
    if (closing_line_) {  // another rank's, or a second train() in the same log
      extra_closing_.emplace_back(line, Get(dict, "train_runtime"));
      return true;
    }
    closing_line_ = line;
    closing_train_loss_ = Get(dict, "train_loss");
    closing_tokens_ = Get(dict, "num_tokens");  // TRL's count at the end (trainer_num_tokens.cc)
    log.wall_s = Get(dict, "train_runtime");
    std::optional<double> rate = Get(dict, "train_samples_per_second");
    // The average is the closing dict's unless the dicts gave one (train_tokens_per_second); its
    // steps run bound the steps per epoch either way.
    const bool adopt = rate && *rate > 0 && !log.trainer_average;
    TrainerAverage avg;
    avg.samples_per_s = rate;
    avg.through_step = last_;
    if (adopt) average_after_ = dicts_.size();
    std::optional<double> sps = Get(dict, "train_steps_per_second");
    std::optional<int64_t> run;
    if (sps && log.wall_s && *sps > 0 && *log.wall_s > 0) {
      // speed_metrics rounds steps/s to 3 decimals and the runtime to 4 (from 2025 printed
      // f"{v:.4g}" too): the steps run lie in a range, which the last bar may settle.
      const double lo =
          (*sps - HalfUnit(*sps, 0.0005)) * (*log.wall_s - HalfUnit(*log.wall_s, 5e-5));
      const double hi =
          (*sps + HalfUnit(*sps, 0.0005)) * (*log.wall_s + HalfUnit(*log.wall_s, 5e-5));
      const int64_t first = std::max<int64_t>(static_cast<int64_t>(std::ceil(lo)), last_);
      // No more steps than the training bar's total (max_steps) either.
      int64_t last = static_cast<int64_t>(std::floor(hi));
      if (bar_total_ > 0) last = std::min(last, bar_total_);
      if (first == last) {
        run = first;
      } else if (bar && bar->n >= first && bar->n <= last &&
                 (bar_total_ == 0 || bar->total == bar_total_)) {
        run = bar->n;
      } else if (first < last && adopt) {
        steps_run_ = Bar{first, last, line, false, std::nullopt};
      }
      if (run && adopt) {
        avg.through_step = *run;
        average_after_.reset();
      }
      if (std::optional<double> epoch = Get(dict, "epoch"); epoch && *epoch > 0 && first <= last)
        closing_at_ = ClosingAt{run.value_or(first), run.value_or(last), *epoch,
                                EpochHalf(*epoch, quoted_epoch)};
    }
    if (adopt) {
      avg.line = line;
      avg.what = "the Trainer's train_samples_per_second (the whole run, its first steps included)";
      if (resumed_ && run && resumed_step_ > 0 && resumed_step_ < *run) {
        // speed_metrics counts the samples of every step to max_steps (num_train_samples) over
        // the resumed run's seconds: the rate of the steps run is that x (run - resumed) / run
        // (5.17: 12 x 8 / 0.6229 s = 154.1 printed, 7 steps run after step 5).
        avg.samples_per_s =
            *rate * static_cast<double>(*run - resumed_step_) / static_cast<double>(*run);
        avg.excluded_steps = resumed_step_;
        avg.what =
            "the Trainer's train_samples_per_second x the steps run after the resume / all steps "
            "(it counts the steps before the resume too)";
      }
      log.trainer_average = avg;
    }
    return true;
  }
  if (std::optional<double> eval = Get(dict, "eval_loss")) {
    const int64_t step = named ? static_cast<int64_t>(*named) : last_;  // ms-swift names it
    // Another rank's copy: the same step, loss and epoch (two evaluations between the same loss
    // dicts, eval_steps below logging_steps, have other epochs).
    const std::tuple<int64_t, double, std::optional<double>> seen{step, *eval, Get(dict, "epoch")};
    if (std::find(seen_evals_.begin(), seen_evals_.end(), seen) != seen_evals_.end()) return true;
    seen_evals_.push_back(seen);
    if (!named) {
      const std::optional<double> epoch = Get(dict, "epoch");
      eval_after_.push_back(
          {log.evals.size(), dicts_.size(), epoch, epoch ? EpochHalf(*epoch, quoted_epoch) : 0});
    }
    log.evals.push_back({step, *eval, line});
    if (log.eval_what.empty()) log.eval_what = "the Trainer's eval_loss";
    return true;
  }
  if (!Has(dict, "loss")) return false;
  // LLaMA-Factory's trainer_log.jsonl writes every on_log, its evaluation and closing logs
  // included, with "loss": null (json.dumps of None): no training record.
  if (!Get(dict, "loss") && Has(dict, "current_steps")) return true;
  // The same dict again (its epoch or step included) is another rank's print of it.
  if (named || Has(dict, "epoch")) {
    const std::optional<double> at = named ? named : Get(dict, "epoch");
    if (!at || !std::isnan(*at)) {  // a NaN epoch equals nothing (nor is it ordered)
      std::vector<TrainerDict>& same = seen_[at];
      if (std::find(same.begin(), same.end(), dict) != same.end()) return true;
      same.push_back(dict);
    }
  }
  // A named step at or below the last one with another dict than its record's: a resumed (or
  // another) run prints it; the records from that step on are the later run's.
  if (named && *named >= 1 && *named <= static_cast<double>(last_) &&
      steps.count(static_cast<int64_t>(*named)))
    RestartAt(static_cast<int64_t>(*named), line, steps, log);
  // An epoch going back (a dict that names no step) starts another training run in the same
  // log (a notebook training several configurations one after the other).
  const std::optional<double> epoch = Get(dict, "epoch");
  if (!named && epoch && !dicts_.empty() && dicts_.back().epoch &&
      *epoch + EpochHalf(*epoch, quoted_epoch) < *dicts_.back().epoch - dicts_.back().epoch_half)
    NewRun(line, *dicts_.back().epoch, *epoch, steps, log);
  // In a raw capture only the redraw after a loss dict numbers it (see the top).
  const std::optional<Bar> before = raw_ ? std::nullopt : bar;
  int64_t step = 0;
  bool known = true;
  std::optional<double> bar_elapsed;  // the numbering bar's time: its step's end
  if (named) {
    step = static_cast<int64_t>(*named);
  } else if (anchored_) {
    const int64_t n = *anchored_;
    step = first_step_ && n <= 1 ? 1 : (n + logging_steps_ - 1) / logging_steps_ * logging_steps_;
  } else if (std::optional<int64_t> n = BarStep(before, line)) {
    step = *n;
    bar_elapsed = before->elapsed;
  } else {
    // A bar before it, not next to it: the bar after it may confirm its n (see the top).
    if (before && before->n > last_ && (bar_total_ == 0 || before->total == bar_total_) &&
        (!stated_ || before->n % logging_steps_ == 0))
      pending_ = before;
    step = NextAfter(last_);
    ++counted_;
    known = false;
  }
  anchored_.reset();
  last_ = step;
  Iteration& it = steps[step];
  const bool fresh = it.line == 0;
  if (fresh) {
    it.step = step;
    it.line = line;
  }
  dicts_.push_back({step, line, epoch, epoch ? EpochHalf(*epoch, quoted_epoch) : 0, known, fresh});
  if (written_line_ == line && !named) redraw_after_ = line;  // written by tqdm.write, raw
  // The run's token rate so far: LLaMA-Factory's echo of this dict (ReadEcho), or, with
  // include_num_input_tokens_seen, transformers' train_tokens_per_second in the dict itself
  // (Trainer.log's speed_metrics("train", start_time, num_tokens=num_input_tokens_seen): the
  // input tokens of all devices since train() began over the seconds since; after a resume the
  // tokens count from the first run's start and the seconds from the resume's, so not then).
  std::optional<std::pair<double, int64_t>> tokens = echo_throughput_;
  const char* tokens_what =
      "LLaMA-Factory's throughput (input tokens of all devices since the start, over the time "
      "since then)";
  if (std::optional<double> rate = Get(dict, "train_tokens_per_second");
      !tokens && rate && *rate > 0 && Has(dict, "num_input_tokens_seen") && !resumed_) {
    tokens = std::pair{*rate, line};
    tokens_what =
        "the Trainer's train_tokens_per_second (include_num_input_tokens_seen: input tokens of "
        "all devices since the start, over the time since then)";
  }
  if (tokens && (!log.trainer_average || log.trainer_average->tokens_per_s)) {
    TrainerAverage avg;
    avg.tokens_per_s = tokens->first;
    avg.through_step = step;
    avg.line = tokens->second;
    avg.what = tokens_what;
    log.trainer_average = avg;
    average_after_ = known ? std::nullopt : std::optional<size_t>(dicts_.size());
  }
  echo_throughput_.reset();
  if (!known && before && (bar_total_ == 0 || before->total == bar_total_)) {
    dicts_.back().lo = before->n;  // the last bar before it bounds its step from below
    dicts_.back().total = before->total;
  }
  if (fresh && named)
    if (std::optional<DictElapsed> e = ReadDictElapsed(dict, step)) elapsed_[line] = *e;
  if (fresh && bar_elapsed && !elapsed_.count(line)) {
    elapsed_[line].text = bar_elapsed;
    bar_elapsed_.push_back(line);
  }
  if (!it.loss) it.loss = Get(dict, "loss");
  if (!it.lr) it.lr = Get(dict, "learning_rate");
  if (!it.lr) it.lr = Get(dict, "lr");  // LLaMA-Factory's jsonl since 2024
  if (!it.grad_norm) it.grad_norm = Get(dict, "grad_norm");
  if (!it.tokens_seen) it.tokens_seen = Get(dict, "num_tokens");  // TRL's running count
  return true;
}

void TrainerDictReader::TimeFromElapsed(std::string_view name, ParsedLog& log) {
  for (size_t i = 1; i < bar_elapsed_.size(); ++i) {
    if (elapsed_.at(bar_elapsed_[i]).text != elapsed_.at(bar_elapsed_[i - 1]).text) continue;
    log.notes.push_back(fmt::format(
        "{}:{}: the progress bars before the dicts of lines {} and {} show the same second: the "
        "steps are faster than the bars' whole seconds can time, and no bar times them",
        name, bar_elapsed_[i], bar_elapsed_[i - 1], bar_elapsed_[i]));
    for (int64_t line : bar_elapsed_) elapsed_.erase(line);
    break;
  }
  if (elapsed_.empty()) return;
  // A new clock (another run, a restart, a resume) or a pause in the steps (an evaluation, a
  // checkpoint save).
  std::vector<int64_t> breaks = saves_;
  for (const NewRunAt& r : new_runs_) breaks.push_back(r.line);
  for (const RestartAtStep& r : restarts_at_) breaks.push_back(r.line);
  if (resumed_line_ != 0) breaks.push_back(resumed_line_);
  for (const EvalPoint& e : log.evals) breaks.push_back(e.line);
  const std::vector<std::pair<int64_t, int64_t>> paused =
      TimeByElapsed(elapsed_, breaks, log.iterations);
  if (!paused.empty()) {
    log.notes.push_back(fmt::format(
        "{}:{}: the elapsed time of the dicts (or of the progress bars before them) does not time "
        "the steps of {} record(s) (the first this "
        "one): an evaluation, checkpoint save, resume or another run (line {}) came between them "
        "and the record before",
        name, paused.front().first, paused.size(), paused.front().second));
  }
}

void TrainerDictReader::Finish(std::string_view name, std::map<int64_t, Iteration>& steps,
                               ParsedLog& log) {
  Confirm(steps, log);
  for (const NewRunAt& run : new_runs_) {
    log.notes.push_back(fmt::format(
        "{}:{}: another training run starts here (epoch {} after {}): the records, evaluations "
        "and closing figures are the last run's (the run before ended at step {})",
        name, run.line, run.to, run.from, run.ended));
  }
  std::optional<size_t> steps_run_note;  // its index, dropped if the epochs settle the steps run
  if (steps_run_ && log.trainer_average) {
    steps_run_note = log.notes.size();
    log.notes.push_back(fmt::format(
        "{}:{}: train_steps_per_second x train_runtime, as rounded, allows {} to {} steps run "
        "and no bar says which: {}",
        name, steps_run_->line, steps_run_->n, steps_run_->total,
        dicts_.empty() ? "the steps the average covers are not known"
                       : "the average is taken as through the last loss dict's step"));
  }
  for (const RestartAtStep& r : restarts_at_) {
    log.notes.push_back(fmt::format(
        "{}:{}: step {} again after step {} (a resumed or another run): the records from there "
        "on are the later run's",
        name, r.line, r.step, r.after));
  }
  if (echo_line_ != 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: LLaMA-Factory's LogCallback echoes each training log through its logger (Web UI "
        "mode) before the Trainer prints it: the echoes are not read as records",
        name, echo_line_));
  }
  for (auto [line, runtime] : extra_closing_)
    log.notes.push_back(fmt::format(
        "{}:{}: a second closing dict (train_runtime {}) is left out: the first, line {}, gives "
        "wall_s and the average",
        name, line, runtime ? fmt::format("{}", *runtime) : "?", closing_line_.value_or(0)));
  if (dicts_.empty() && closing_at_ && closing_at_->first == closing_at_->last) {
    // No loss dict (a run shorter than logging_steps, or logging_strategy "no"): the closing
    // dict's steps run over its epoch place the evaluations.
    const double e = closing_at_->epoch, h = closing_at_->epoch_half;
    if (e > h)
      PlaceEvals({},
                 {static_cast<double>(closing_at_->first) / (e + h),
                  static_cast<double>(closing_at_->last) / (e - h)},
                 log);
    return;
  }
  if (!counted_ && !eval_after_.empty()) {
    // Every loss dict numbered: the evaluations that named no step where their epochs put them at
    // the steps per epoch the dicts pin (eval_steps off the logging steps).
    std::vector<int64_t> at;
    for (const Numbered& d : dicts_) at.push_back(d.step);
    if (std::optional<std::pair<double, double>> spe = NumberedStepsPerEpoch())
      PlaceEvals(at, *spe, log);
  }
  if (!counted_ || stated_) return;
  int64_t every = 0;
  std::pair<double, double> spe{0, 0};
  std::optional<std::vector<int64_t>> at;
  bool by_bars = false, by_spacing = false, by_micro_batches = false;
  if (auto gas = log.facts.find("gas"); gas != log.facts.end())
    accumulates_ = gas->second.value > 1;
  // Not across a resume inside the log: the dicts before it belong to steps it dropped. A log
  // that starts with the resume (its run's epochs count from the checkpoint's) is one run.
  const bool across_resume = resumed_ && !dicts_.empty() && dicts_.front().line < resumed_line_;
  if (!across_resume) at = InferSteps(&every, &spe);
  if (!at && !across_resume) {
    at = SpacingSteps(&every, &spe);
    by_spacing = at.has_value();
  }
  if (!at && !across_resume) {
    at = BarBoundSteps(&every);
    by_bars = at.has_value();
  }
  if (!at && !across_resume) {
    at = MicroBatchSteps(&every, &spe);
    by_micro_batches = at.has_value();
  }
  if (at) {
    for (size_t i = 0; i < dicts_.size(); ++i)
      if (!dicts_[i].known && !dicts_[i].fresh) at.reset();  // it filled another line's record
  }
  if (!at) {
    log.notes.push_back(fmt::format(
        "{}: the log does not state logging_steps (TrainingArguments or the command line): its "
        "dicts without a progress bar that gives their step are numbered as if it were 1 "
        "(1, 2, 3, ... after the last known step; transformers' default is 500)",
        name));
    return;
  }
  std::vector<Iteration> moved;
  for (size_t i = 0; i < dicts_.size(); ++i) {
    if (dicts_[i].known || (*at)[i] == dicts_[i].step) continue;
    auto node = steps.extract(dicts_[i].step);
    node.mapped().step = (*at)[i];
    moved.push_back(std::move(node.mapped()));
  }
  for (Iteration& it : moved) {
    auto [slot, added] = steps.try_emplace(it.step, it);
    if (added) continue;
    Iteration& there = slot->second;  // another line's record of that step (a DeepSpeed line)
    if (!there.loss) there.loss = it.loss;
    if (!there.lr) there.lr = it.lr;
    if (!there.grad_norm) there.grad_norm = it.grad_norm;
    if (!there.tokens_seen) there.tokens_seen = it.tokens_seen;
    there.line = std::min(there.line, it.line);
  }
  PlaceEvals(*at, spe, log);
  if (average_after_ && *average_after_ > 0 && log.trainer_average)
    log.trainer_average->through_step = (*at)[*average_after_ - 1];
  // The closing dict's epoch at the steps per epoch the dicts pinned may leave one step count in
  // its unsettled range: the steps run.
  if (closing_at_ && closing_at_->first < closing_at_->last && log.trainer_average &&
      average_after_ && spe.second > 0) {
    const double e = closing_at_->epoch, h = closing_at_->epoch_half;
    const int64_t first =
        std::max(closing_at_->first, static_cast<int64_t>(std::ceil((e - h) * spe.first)));
    const int64_t last =
        std::min(closing_at_->last, static_cast<int64_t>(std::floor((e + h) * spe.second)));
    if (first == last && first >= log.trainer_average->through_step) {
      log.trainer_average->through_step = first;
      if (steps_run_note) {
        log.notes[*steps_run_note] = fmt::format(
            "{}:{}: train_steps_per_second x train_runtime, as rounded, allows {} to {} steps run; "
            "its epoch {} at the dicts' {:.6g} steps an epoch settles {}",
            name, steps_run_->line, steps_run_->n, steps_run_->total, e,
            (spe.first + spe.second) / 2, first);
      }
    }
  }
  std::string how =
      by_spacing
          ? fmt::format(
                "logging_steps {}, the one value the spacing of their epochs allows at the steps "
                "per epoch the numbered or closing dicts bound, each at the multiple of it its "
                "epoch allows",
                every)
      : by_micro_batches
          ? fmt::format(
                "logging_steps {}, the one value at whose multiples every dict's epoch, and the "
                "closing dict's, fits the Trainer's count of micro-batches ({} to {} steps an "
                "epoch, an epoch's last step on the remainder of gradient accumulation)",
                every, spe.first + 1, spe.second)
      : by_bars ? fmt::format(
                      "logging_steps {}, the one value that puts each dict between the training "
                      "bars drawn before and after it",
                      every)
      : every > 0
          ? fmt::format(
                "logging_steps {}, inferred from the numbered dicts around them (every "
                "dict's epoch agrees)",
                every)
          : fmt::format("their epoch (steps per epoch bounded by the epochs of {})",
                        closing_at_ ? fmt::format("the numbered dicts and of the closing "
                                                  "dict, {} steps run",
                                                  closing_at_->first == closing_at_->last
                                                      ? fmt::format("{}", closing_at_->first)
                                                      : fmt::format("{} to {}", closing_at_->first,
                                                                    closing_at_->last))
                                    : std::string("the numbered dicts"));
  log.notes.push_back(fmt::format(
      "{}: the log does not state logging_steps; the dicts that no progress bar or step line "
      "numbers are numbered by {}",
      name, how));
}

}  // namespace bm::logparse
