// The Hugging Face Trainer's log (transformers, and accelerate launching a
// Trainer script): its log dicts (rules/logparse/trainer_dicts.h: numbered by
// logging_steps and logging_first_step, values as numbers or, from 2025, as
// strings), the closing dict's train_runtime and train_samples_per_second
// (the throughput: over the whole run, its first steps included, so
// excluded_warmup_steps has nothing to leave out), its eval dicts, and the
// start-of-training summary when the script logs at info level:
//
//   ***** Running training *****
//     Instantaneous batch size per device = 8
//     Total train batch size (w. parallel, distributed & accumulation) = 32
//     Gradient Accumulation steps = 4
//
// or unsloth's banner, which it prints instead (its patched _inner_training_loop; before 2025
// `Gradient Accumulation steps = 8` and `Total batch size = 40 | Total steps = 220`):
//
//   O^O/ \_/ \    Batch size per device = 2 | Gradient accumulation steps = 4
//   \        /    Data Parallel GPUs = 1 | Total batch size (2 x 4 x 1) = 8
//
// and TrainingArguments' `bf16=True,` / `fp16=True,` lines. Under DeepSpeed with fp16, its loss
// scaler's overflow lines are the steps it skipped (rules/logparse/deepspeed_overflow.h). The dicts
// carry no sequence length (`mpe` comes from the BENCHFILE), and memory only where ms-swift or
// axolotl add it (rules/logparse/trainer_memory.h). tqdm's bar before a dict gives its step
// (trainer_dicts.h). A run of fewer steps than logging_steps (transformers' default 500), or with
// logging_strategy "no", prints no loss dict, only its evaluations and the closing dict: read
// without a series, timed by the closing dict.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "rules/logparse/deepspeed_flops_profile.h"
#include "rules/logparse/deepspeed_overflow.h"
#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/trainer_dicts.h"
#include "rules/logparse/trainer_metrics_block.h"
#include "rules/logparse/wrapped_lines.h"

namespace bm::logparse {
namespace {

// Each a count after the name, a parenthesis (unsloth's "(2 x 4 x 1)") and '='.
const char* const kSummary[][2] = {
    {"Instantaneous batch size per device", "lbs"},
    {"Total train batch size (w. parallel, distributed & accumulation)", "gbs"},
    {"Gradient Accumulation steps", "gas"},
    {"Batch size per device", "lbs"},        // unsloth
    {"Gradient accumulation steps", "gas"},  // unsloth from 2025
    {"Data Parallel GPUs", "dp"},            // unsloth from 2025
    {"Total batch size", "gbs"},             // unsloth
};

// "= 1,024" after `name` in line, a parenthesis between them skipped: 1024.
std::optional<double> CountAfter(std::string_view line, std::string_view name) {
  size_t at = line.find(name);
  if (at == std::string_view::npos) return std::nullopt;
  size_t p = SkipSpaces(line, at + name.size());
  if (p < line.size() && line[p] == '(') {
    p = line.find(')', p);
    if (p == std::string_view::npos) return std::nullopt;
    p = SkipSpaces(line, p + 1);
  }
  if (p >= line.size() || line[p] != '=') return std::nullopt;
  p = SkipSpaces(line, p + 1);
  std::string digits;
  for (; p < line.size() && (std::isdigit(static_cast<unsigned char>(line[p])) || line[p] == ',');
       ++p)
    if (line[p] != ',') digits += line[p];
  return digits.empty() ? std::nullopt : ParseNumber(digits);
}

// "  bf16=True," (TrainingArguments' repr, one field per line): true/false.
std::optional<bool> BoolField(std::string_view line, std::string_view field) {
  std::string_view t = Trim(line);
  if (t.rfind(field, 0) != 0 || t.size() <= field.size() || t[field.size()] != '=')
    return std::nullopt;
  std::string_view v = t.substr(field.size() + 1);
  if (v.rfind("True", 0) == 0) return true;
  if (v.rfind("False", 0) == 0) return false;
  return std::nullopt;
}

// The `***** train metrics *****` block read, as the closing dict where the log has none
// (trainer_metrics_block.h).
void TakeMetricsBlock(std::string_view name, TrainerMetricsBlock& block, TrainerDictReader& dicts,
                      std::map<int64_t, Iteration>& steps, ParsedLog& log, bool at_end = false) {
  std::optional<TrainerMetricsBlock::Block> b = block.Take(at_end);
  if (b && b->eval) {
    // The evaluation after training; a dict printed for it too (PrinterCallback) has its value
    // unrounded (metrics_format: round(v, 4)).
    auto loss = b->dict.find("eval_loss");
    if (loss == b->dict.end() || !loss->second) return;
    for (const EvalPoint& e : log.evals)
      if (std::fabs(e.value - *loss->second) <= 5e-5) return;
    dicts.Read(b->dict, b->line, steps, log);
    return;
  }
  if (!b || dicts.closing_line() != 0 || !b->dict.count("train_runtime")) return;
  dicts.Read(b->dict, b->line, steps, log);
  log.notes.push_back(fmt::format(
      "{}:{}: no closing dict before the `***** train metrics *****` block: its train_runtime "
      "and rates are read as the closing dict's",
      name, b->line));
}

}  // namespace

bool IsTrainerDictLine(std::string_view line) {
  if (std::optional<TrainerDict> d = ParseTrainerDict(line))
    return d->count("loss") || d->count("train_runtime");
  // The first piece of a dict a terminal copy wrapped (trainer_dicts.h), unclosed.
  if (TrainerDictCompletion(line).empty()) return false;
  const std::string_view dict = line.substr(line.find('{'));
  return dict.starts_with("{'loss'") || dict.starts_with("{\"loss\"") ||
         dict.starts_with("{'train_runtime'");
}

Result<ParsedLog> ParseTrainerLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "trainer";
  std::map<int64_t, Iteration> steps;
  TrainerDictReader dicts;
  TrainerMetricsBlock block;     // `***** train metrics *****`
  DeepSpeedOverflows overflows;  // DeepSpeed's skipped steps (deepspeed_overflow.h)
  FlopsProfileReader profile;    // DeepSpeed's flops profiler summary (deepspeed_flops_profile.h)
  Status error = Status::Ok();
  // A dict a terminal copy hard-wrapped is read joined (trainer_dicts.h).
  bool failed = false;
  const UnwrappedRead read = ForEachUnwrappedLine(
      text, TrainerDictCompletion, StopsTrainerDictPieces,
      [&](std::string_view line, int64_t no) {
        const bool in_block = block.Read(line, no);
        TakeMetricsBlock(name, block, dicts, steps, log);
        if (in_block) return;
        dicts.ReadBar(line, no);
        if (overflows.Read(line, no)) return;
        if (Result<bool> summary = profile.Read(line, no, name); !summary.ok() || *summary) {
          if (!summary.ok()) {
            error = summary.status();
            failed = true;
          }
          return;
        }
        Result<bool> dict = dicts.ReadLine(line, no, name, steps, log);
        if (!dict.ok()) {
          error = dict.status();
          failed = true;
          return;
        }
        if (*dict) return;
        if (dicts.ReadResume(line, no, steps, log) || dicts.ReadSetting(line)) return;
        if (line.find("Saving model checkpoint to ") != std::string_view::npos) {
          dicts.SawSave(no);  // the Trainer's (and ms-swift's) save: no step's time
          return;
        }
        bool summary = false;
        for (const auto& s : kSummary) {
          if (std::optional<double> n = CountAfter(line, s[0])) {
            SetFact(log, s[1], *n, no);
            summary = true;
          }
        }
        if (summary) return;
        for (auto [field, word] : {std::pair{"bf16", "bf16"}, std::pair{"fp16", "fp16"}}) {
          if (std::optional<bool> on = BoolField(line, field); on && *on && log.precision.empty()) {
            log.precision = word;
            log.precision_line = no;
          }
        }
      },
      &failed, kTrainerDictPieces);
  log.lines = read.lines;
  BM_TRY(error);
  TakeMetricsBlock(name, block, dicts, steps, log, true);  // a block that ends the log
  DataParallelFromTotalBatch(log, name);                   // the summary states no device count
  if (read.joined > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} Trainer dict(s) hard-wrapped over several lines (a terminal copy) read joined",
        name, read.first_joined, read.joined));
  }
  dicts.Finish(name, steps, log);  // steps the dicts' epochs or anchors give (trainer_dicts.h)
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  if (log.iterations.empty() && dicts.closing_line() != 0 && (log.wall_s || log.trainer_average)) {
    // A run of fewer steps than logging_steps (transformers' default 500), or with
    // logging_strategy "no", prints no loss dict: the closing dict still times the whole run.
    log.notes.push_back(fmt::format(
        "{}:{}: no Trainer loss dict, only the closing dict (a run of fewer steps than "
        "logging_steps, transformers' default 500, or logging_strategy \"no\"): no loss "
        "series, the closing dict's figures are the run's",
        name, dicts.closing_line()));
  } else if (log.iterations.empty()) {
    // transformers writes the dicts with tqdm.write, to stdout, and its bars to stderr.
    std::string bars;
    if (std::optional<std::pair<int64_t, int64_t>> end = dicts.ResumedAtTheEnd()) {
      bars = fmt::format(
          "; the run resumed from global step {} (line {}), and its progress bars count no more "
          "steps than that: a resume at or past max_steps trains nothing",
          end->first, end->second);
    } else if (dicts.closing_line() != 0) {
      bars = fmt::format(
          "; line {} is the closing dict, but its train_runtime and train_samples_per_second are "
          "no numbers",
          dicts.closing_line());
    } else if (!log.evals.empty()) {
      bars = fmt::format(
          "; line {} is an eval dict, but no loss dict or closing dict (train_runtime) follows: "
          "the run logged no training step (fewer steps than logging_steps) and did not finish",
          log.evals.front().line);
    } else if (dicts.first_bar_line() != 0) {
      bars = fmt::format(
          "; its progress bars are there (line {}) but the dicts go to stdout: was only stderr "
          "kept?",
          dicts.first_bar_line());
    }
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no Trainer loss dicts (\"{{'loss': X, 'learning_rate': ...}}\", one per "
                  "logging_steps) in {} lines{}{}",
                  name, log.lines, OtherFormatHint(text, "trainer"), bars);
  }
  FillSpansFromGaps(log.iterations);
  overflows.Count(name, log);  // the Trainer on DeepSpeed, fp16
  // A dict covers logging_steps steps at most: a wider gap before it is dicts the log lost (an
  // excerpt's "..."), not a longer interval.
  if (dicts.logging_steps_stated()) {
    const int64_t every = dicts.logging_steps();
    for (size_t i = 0; i < log.iterations.size(); ++i) {
      Iteration& it = log.iterations[i];
      if (it.span <= every) continue;
      if (i > 0) {  // the first record of an excerpt from mid-run spans the interval as it is
        log.notes.push_back(fmt::format(
            "{}:{}: step {} comes {} steps after the record before it, logging_steps {}: the "
            "dicts between are not in the log, and it spans {}",
            name, it.line, it.step, it.span, every, every));
      }
      it.span = every;
    }
  }
  dicts.InferUnstatedResume(name, log);
  dicts.TokensFromCounts(name, log);  // TRL's num_tokens (trainer_num_tokens.cc)
  dicts.TimeFromElapsed(name, log);   // the dicts' elapsed time (trainer_elapsed.h)
  dicts.ReportMemory(name, log);
  profile.Report(name, log);  // the Trainer on DeepSpeed: its flops profiler's FLOPS per GPU
  if (log.trainer_average && log.trainer_average->through_step == 0 && !log.iterations.empty())
    log.trainer_average->through_step = log.iterations.back().step;
  return log;
}

}  // namespace bm::logparse
