// FlagPerf's own event log: the classic training cases (training/benchmarks/<case>/pytorch or
// paddle: bert, cpm, glm, gpt2, ...) log through driver/perf_logger.py, one JSON event a line
// after a `[PerfLog] ` header, into each rank's rankN.out.log:
//
//   [PerfLog] {"event": "STEP_END", "value": {"loss": 2.6795, "epoch": 1, "end_training": true,
//     "global_steps": 3397, "num_trained_samples": 869632, "learning_rate": 0.000175375,
//     "seq/s": 822.455}, "metadata": {"file": ".../run_pretraining.py", "lineno": 127,
//     "time_ms": 1669034171032, "rank": 0}}                                     (one line)
//   [PerfLog] {"event": "FINISHED", "value": {"e2e_time": 1661.61,
//     "training_sequences_per_second": 579.09, "converged": true, "final_loss": 3.0667,
//     "raw_train_time": 1501.713, "init_time": 148.937}, "metadata": {...}}   (one line)
//
// A STEP_END is a record at value.global_steps (the trainer's state.to_dict(): cpm's
// train_one_epoch counts it per batch), with its loss, learning_rate, the samples per step
// (num_trained_samples = global_steps x the global batch, so their ratio) and the step's rate
// as printed: "seq/s" or "img/s" (samples/s over the last optimizer step) or "tokens/s".
// EVALUATE events with a value give evals (eval_loss at value.global_steps). The real logs'
// EVALUATE carries no value: glm's trainer logs it right after the STEP_END of the step it
// evaluated at, whose state holds the result (eval_accuracy; every STEP_END repeats the last
// evaluation's), so an EVALUATE logged within 5 ms of the STEP_END just before it is an eval of
// that STEP_END's eval_accuracy at its step (a STEP_END logged steps earlier, log_freq > 1,
// holds an older evaluation's). FINISHED's training_sequences_per_second (global batch x
// global_steps / raw_train_time, evaluation included) is the trainer's average over the run,
// and e2e_time its wall time.
#include "rules/logparse/flagperf_perflog.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"

namespace bm::logparse {

constexpr std::string_view kHeader = "[PerfLog] ";
// Two events one trainer call logs back to back (STEP_END, then EVALUATE), far less than a step.
constexpr double kBackToBackMs = 5;

bool IsFlagPerfEventLine(std::string_view line) {
  size_t at = line.find(kHeader);
  if (at == std::string_view::npos) return false;
  std::string_view rest = Trim(line.substr(at + kHeader.size()));
  return rest.starts_with("{\"event\"");
}

Status ReadFlagPerfEvents(std::string_view text, std::string_view name, ParsedLog& log) {
  Status error = Status::Ok();
  const int64_t total_lines = CountLines(text);
  std::map<int64_t, Iteration> steps;
  int64_t last_step = 0;
  // The event line before, when it was a STEP_END whose state holds an eval_accuracy, and its
  // time_ms.
  struct Accuracy {
    EvalPoint eval;
    std::optional<double> ms;
  };
  std::optional<Accuracy> step_end_accuracy;
  ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok() || !IsFlagPerfEventLine(line)) return;
    std::string_view rest = Trim(line.substr(line.find(kHeader) + kHeader.size()));
    nlohmann::json e = nlohmann::json::parse(rest, nullptr, false);
    if (e.is_discarded() || !e.is_object() || !e.contains("event") || !e["event"].is_string()) {
      if (no == total_lines) return;  // a last line cut off mid-way
      error =
          Errorf(ErrorCode::kCorrupt, "{}:{}: a [PerfLog] line that is not a JSON event", name, no);
      return;
    }
    const std::string event = e["event"];
    const nlohmann::json& value = e.contains("value") ? e["value"] : nlohmann::json();
    const std::optional<double> time_ms =
        e.contains("metadata") ? JsonNumber(e["metadata"], "time_ms") : std::nullopt;
    std::optional<Accuracy> accuracy_before = std::exchange(step_end_accuracy, std::nullopt);
    if (event == "STEP_END") {
      std::optional<int64_t> step = WholeCount(JsonNumber(value, "global_steps"));
      if (!step || *step < 1) return;  // a case whose state names no step
      Iteration it;
      it.step = *step;
      it.line = no;
      it.loss = JsonNumber(value, "loss");
      it.lr = JsonNumber(value, "learning_rate");
      if (std::optional<double> n = JsonNumber(value, "num_trained_samples"); n && *n > 0)
        it.samples = *n / static_cast<double>(*step);
      it.samples_per_s = JsonNumber(value, "seq/s");
      if (!it.samples_per_s) it.samples_per_s = JsonNumber(value, "img/s");
      it.tokens_per_s = JsonNumber(value, "tokens/s");
      it.time_ms = time_ms;
      if (std::optional<double> acc = JsonNumber(value, "eval_accuracy"))
        step_end_accuracy = Accuracy{{*step, *acc, no}, time_ms};
      steps.emplace(it.step, it);  // the first a step logged (several ranks' logs concatenated)
      last_step = std::max(last_step, it.step);
    } else if (event == "EVALUATE") {
      if (std::optional<double> loss = JsonNumber(value, "eval_loss")) {
        log.evals.push_back({WholeCount(JsonNumber(value, "global_steps")).value_or(0), *loss, no});
        log.eval_what = "FlagPerf EVALUATE eval_loss";
      } else if (value.is_null() && accuracy_before && accuracy_before->ms && time_ms &&
                 std::abs(*time_ms - *accuracy_before->ms) <= kBackToBackMs) {
        log.evals.push_back(accuracy_before->eval);
        log.eval_what = "FlagPerf eval_accuracy (the STEP_END before an EVALUATE)";
      }
    } else if (event == "FINISHED") {
      if (std::optional<double> sps = JsonNumber(value, "training_sequences_per_second")) {
        TrainerAverage avg;
        avg.samples_per_s = *sps;
        avg.through_step = last_step;
        avg.line = no;
        avg.what =
            "FlagPerf's training_sequences_per_second (global batch x global_steps / "
            "raw_train_time, evaluation included)";
        log.trainer_average = avg;
      }
      if (std::optional<double> e2e = JsonNumber(value, "e2e_time")) log.wall_s = *e2e;
    }
  });
  BM_TRY(error);
  for (auto& [step, it] : steps) log.iterations.push_back(it);
  FillSpansFromGaps(log.iterations);
  return Status::Ok();
}

}  // namespace bm::logparse
