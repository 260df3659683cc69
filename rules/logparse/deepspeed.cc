// DeepSpeed's log lines (deepspeed/runtime/engine.py `_report_progress`,
// deepspeed/utils/timer.py `ThroughputTimer.stop`, every `steps_per_print`
// steps), the loss lines training scripts print beside them, and DeepSpeed's
// configuration print at start-up:
//
//   [2024-03-05 10:12:33,456] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0,
//     lr=[9.99e-05], mom=[(0.9, 0.95)]
//   [2024-03-05 10:12:33,457] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10,
//     RunningAvgSamplesPerSec=7.95, CurrSamplesPerSec=8.01, MemAllocated=15.2GB,
//     MaxMemAllocated=28.4GB
//   Step 10/1000, Loss: tensor(7.1234, device='cuda:0', grad_fn=<DivBackward0>)
//   [INFO] [config.py:988:print]   train_batch_size ............. 8
//
// A loss line is any other line with a step ("step 10", "Step 10/1000",
// "step=10", "global_step: 10") and a loss ("loss: 2.3", "Loss=2.3",
// "'loss': 2.3", "loss: tensor(2.3"), case-insensitive: the first of each.
// The Hugging Face Trainer's log dicts carry no step:
//   {'loss': 1.1656, 'learning_rate': 1.274e-07, 'epoch': 0.0}
// The Trainer prints one every `logging_steps` optimizer steps (1 unless the
// log states `logging_steps` = N, as TrainingArguments or a command line
// print it), right after DeepSpeed's lines for that step: so the first dict
// after DeepSpeed's `step=N` line is step N rounded up to a multiple of
// logging_steps, and each further dict logging_steps later (from the log's
// start: logging_steps). Other dicts ('eval_loss', the closing 'train_loss')
// are not loss records; a dict that names its step is a loss line as above.
// `skipped` is DeepSpeed's running count; a record gets the increase since
// the previous progress line. Every rank may print the timer line: per step,
// the first value of each field wins. RunningAvgSamplesPerSec at the last
// report is DeepSpeed's own average over every step after its first two
// (ThroughputTimer start_step = 2): the trainer average.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>

#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

// The number after `key` + one of `seps` (case-insensitive), or nullopt.
std::optional<double> NumberAfter(std::string_view line, std::string_view key,
                                  std::string_view seps) {
  size_t at = FindKeyValue(line, key, seps);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at);
  rest = Trim(rest);
  if (rest.rfind("tensor(", 0) == 0) rest.remove_prefix(7);         // print(loss) of a torch tensor
  if (!rest.empty() && rest.front() == '[') rest.remove_prefix(1);  // lr=[0.0001]
  return LeadingNumber(rest);
}

// The step of a line: "step" as a word or "global_step" (not "micro_step",
// not "steps_per_print"), then spaces or quotes, '=' or ':', spaces or quotes,
// an integer.
std::optional<double> StepNumber(std::string_view line) {
  for (size_t at = FindNoCase(line, "step"); at != std::string_view::npos;
       at = FindNoCase(line, "step", at + 1)) {
    const bool word_start =
        at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
    const bool global = at >= 7 && line.substr(at - 7, 7) == "global_";
    if (!word_start && !global) continue;
    auto skip = [&](size_t p) {
      while (p < line.size() && (line[p] == ' ' || line[p] == '\'' || line[p] == '"')) ++p;
      return p;
    };
    size_t p = skip(at + 4);
    if (p < line.size() && (line[p] == '=' || line[p] == ':')) p = skip(p + 1);
    size_t end = 0;
    std::string_view rest = line.substr(p);
    std::optional<double> n = LeadingNumber(rest, &end);
    if (n && end > 0 && std::isdigit(static_cast<unsigned char>(rest[end - 1]))) return n;
  }
  return std::nullopt;
}

const char* const kFacts[][2] = {
    {"train_batch_size", "gbs"},
    {"train_micro_batch_size_per_gpu", "lbs"},
    {"gradient_accumulation_steps", "gas"},
    {"world_size", "dp"},
};

const char* const kPrecisions[][2] = {
    {"bfloat16_enabled", "bf16"},
    {"bf16_enabled", "bf16"},
    {"fp16_enabled", "fp16"},
};

// The Trainer's loss dict: "{'loss': X, ...}" (the 'loss' key itself, not
// 'train_loss' or 'eval_loss'), its loss or nullopt.
std::optional<double> TrainerDictLoss(std::string_view line) {
  line = Trim(line);
  if (line.size() < 2 || line.front() != '{' || line.back() != '}') return std::nullopt;
  size_t at = line.find("'loss':");
  if (at == std::string_view::npos || (at != 1 && line.substr(at - 2, 2) != ", "))
    return std::nullopt;
  return LeadingNumber(line.substr(at + 7));
}

// "logging_steps=5", "logging_steps: 5", "--logging_steps 5": N, or nullopt.
std::optional<double> LoggingSteps(std::string_view line) {
  size_t at = FindNoCase(line, "logging_steps");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + 13);
  size_t p = 0;
  while (p < rest.size() &&
         (rest[p] == ' ' || rest[p] == '\'' || rest[p] == '"' || rest[p] == '=' || rest[p] == ':'))
    ++p;
  size_t end = 0;
  std::optional<double> n = LeadingNumber(rest.substr(p), &end);
  if (!n || *n < 1 || *n != std::floor(*n)) return std::nullopt;
  return n;
}

}  // namespace

Result<ParsedLog> ParseDeepSpeedLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  std::map<int64_t, Iteration> steps;
  int64_t last_skipped_total = 0;
  double peak_gb = -1;
  int64_t logging_steps = 1;
  std::optional<int64_t> next_dict_step;  // the step of the Trainer's next loss dict
  auto at_step = [&](int64_t step, int64_t line) -> Iteration& {
    Iteration& it = steps[step];
    if (it.line == 0) {
      it.step = step;
      it.line = line;
    }
    return it;
  };
  auto set = [](std::optional<double>& field, std::optional<double> v) {
    if (!field && v) field = v;
  };
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (line.find("RunningAvgSamplesPerSec=") != std::string_view::npos) {
      std::optional<double> step = NumberAfter(line, "global_step", "=");
      if (!step) return;
      Iteration& it = at_step(static_cast<int64_t>(*step), no);
      set(it.samples_per_s, NumberAfter(line, "CurrSamplesPerSec", "="));
      std::optional<double> avg = NumberAfter(line, "RunningAvgSamplesPerSec", "=");
      if (avg && std::isfinite(*avg) && *avg > 0 &&
          (!log.trainer_average || log.trainer_average->through_step < *step)) {
        log.trainer_average = TrainerAverage{*avg, 2, static_cast<int64_t>(*step), no};
      }
      std::optional<double> gb = NumberAfter(line, "MaxMemAllocated", "=");
      if (gb && *gb > peak_gb) peak_gb = *gb;
      return;
    }
    if (line.find(", skipped=") != std::string_view::npos) {
      std::optional<double> step = StepNumber(line);
      std::optional<double> skipped = NumberAfter(line, "skipped", "=");
      if (!step || !skipped) return;
      const int64_t n = static_cast<int64_t>(*step);
      next_dict_step = (n + logging_steps - 1) / logging_steps * logging_steps;
      Iteration& it = at_step(n, no);
      set(it.lr, NumberAfter(line, "lr", "="));
      int64_t total = static_cast<int64_t>(*skipped);
      if (total >= last_skipped_total) it.skipped = total - last_skipped_total;
      last_skipped_total = total;
      return;
    }
    for (const auto& f : kFacts) {
      if (std::optional<std::string_view> v = DottedArg(line, f[0])) {
        if (std::optional<double> n = ParseNumber(*v)) SetFact(log, f[1], *n, no);
        return;
      }
    }
    for (const auto& p : kPrecisions) {
      if (std::optional<std::string_view> v = DottedArg(line, p[0])) {
        if (*v == "True" && log.precision.empty()) {
          log.precision = p[1];
          log.precision_line = no;
        }
        return;
      }
    }
    if (std::optional<double> dict_loss = TrainerDictLoss(line); dict_loss && !StepNumber(line)) {
      const int64_t step = next_dict_step.value_or(logging_steps);
      next_dict_step = step + logging_steps;
      Iteration& it = at_step(step, no);
      set(it.loss, dict_loss);
      set(it.lr, NumberAfter(line, "'learning_rate'", ":"));
      set(it.grad_norm, NumberAfter(line, "'grad_norm'", ":"));
      return;
    }
    if (std::optional<double> n = LoggingSteps(line)) {
      logging_steps = static_cast<int64_t>(*n);
      return;
    }
    std::optional<double> loss = NumberAfter(line, "loss", "=:");
    if (!loss) return;
    std::optional<double> step = StepNumber(line);
    if (!step) return;
    Iteration& it = at_step(static_cast<int64_t>(*step), no);
    set(it.loss, loss);
  });
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no DeepSpeed step lines ('step=N, skipped=K, lr=[...]', "
                  "'global_step=N, RunningAvgSamplesPerSec=...') or loss lines ('step N ... "
                  "loss: X') in {} lines",
                  name, log.lines);
  }
  FillSpansFromGaps(log.iterations);
  if (peak_gb >= 0) {
    log.peak_memory_bytes = peak_gb * 1024.0 * 1024.0 * 1024.0;
    log.memory_source = "MaxMemAllocated (DeepSpeed ThroughputTimer)";
  }
  return log;
}

}  // namespace bm::logparse
