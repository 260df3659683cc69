// The Hugging Face Trainer's log dicts, shared by the `trainer` parser
// (transformers, accelerate) and the `deepspeed` one (the Trainer on
// DeepSpeed). transformers' ProgressCallback writes one per logging step with
// tqdm.write (PrinterCallback prints it without tqdm):
//
//   {'loss': 10.5949, 'grad_norm': 188.28981018066406, 'learning_rate': 4.58e-05, 'epoch': 0.25}
//   {'loss': '10.46', 'grad_norm': '0.6301', 'learning_rate': '4.5e-05', 'epoch': '0.000416'}
//   {'eval_loss': 2.4, 'eval_runtime': 1.2, ..., 'epoch': 1.0}
//   {'train_runtime': '61.2', 'train_samples_per_second': '4.18', 'train_steps_per_second':
//    '0.523', 'train_loss': '9.87', 'epoch': '0.0133'}
//
// The second form is transformers from 2025 on: floats as f"{v:.4g}" strings.
// A dict that names its step (`'step'`, PaddleNLP's Trainer's `'global_step'`, ms-swift's
// `'global_step/max_steps': '205/270'` and, from ms-swift 4, its Megatron trainer's
// `'iteration': '5/10635'` (swift/megatron/callbacks/print.py), LLaMA-Factory's trainer_log.jsonl
// `"current_steps"`; its
// `"loss": null` lines are no records, and its `"throughput"`, the input tokens of all devices
// since the start over the time since then, is at its last line the whole run's) is at that step.
// transformers' dicts name none: the Trainer logs at every global step that is a multiple of
// logging_steps, and at step 1 too with logging_first_step, so the n-th loss dict is the n-th such
// step (TrainingArguments' print or the command line says logging_steps / logging_first_step; 1 and
// False otherwise). Another trainer's line that names the step (DeepSpeed's `step=N`, printed
// before the Trainer logs step N) re-anchors the count, and so does a resume from a checkpoint.
// A dict whose epoch goes back (naming no step) starts another training run in the same log (a
// notebook training configurations in turn): the records, evaluations and closing figures before
// it are the earlier run's, dropped (a restart).
// A dict naming a step at or below the last one, and not a copy of that step's dict, is a
// resumed or another run's: the records from that step on, and the closing figures, are dropped.
//
// The training bar says the step too. ProgressCallback.on_step_end updates it
// to global_step before the Trainer logs (on_log, in the same step), so a bar
// drawn just before the dict shows the dict's step:
//
//    89%|████████▉ | 1500/1689 [04:31<00:33,  5.66it/s]{'loss': 1.4469, ...}
//   \r  1%|          | 6/520 [00:01<02:05,  4.10it/s]\r      \r{'loss': '10.19', ...}
//     5% 10/200 [04:49<1:24:08, 26.57s/it]    (no bar where tqdm cannot size one: ncols 0, Colab)
//
// but tqdm redraws a bar at most every mininterval (0.1 s), and tqdm.write
// redraws it after the dict: with fast steps the bar before a dict is the
// previous dict's redraw (the same n), or an earlier step's. So a bar numbers
// a dict only when it is on the dict's line (its carriage-return segments
// included) or ends the line before it unfinished (n < total, nothing printed after it: a
// message glued to a bar ended the line, and the drawings after it are lost; a line of spaces
// between them, tqdm.write's clear of the bar pasted as a line, does not count), it has moved past
// the last dict's step, its total is the one of the bars that numbered dicts
// before it (not an evaluation or data bar), and, when the log states
// logging_steps, it is a step the Trainer logs at. A bar further before the dict (other output
// between them: a callback's prints) still bounds its step from below, as the redraw tqdm.write
// makes after the dict bounds it from above (a paste from a terminal keeps only the last drawing
// before the next line, at the same n or later): when the first training bar after the dict shows
// the same n as the last one before it, that n is the dict's step. Otherwise the count
// numbers the dict; Finish may renumber counted dicts from their epochs.
// A raw capture (the file a process wrote, carriage returns kept; stdout unbuffered) says more:
// tqdm.write clears the bar (`\r` + spaces + `\r`), writes the dict and its line end, and then
// redraws the bar at once, so the first drawing after the dict's line end is the dict's own step
// (transformers 5.17, run in bench/trainer_log_matrix.py: with 0.1 s steps the bar before the dict
// at step 5 showed 1/23, the redraw after it 5/23). That redraw numbers the dict; it is told from
// a paste (where the next line keeps only the last drawing) by the clear written on the dict's own
// line. In a raw capture no bar before a dict numbers it: it may be stale (above), or the dict
// reached the file apart from the bars (a plain `python` under an exec target: stdout to a file is
// block-buffered, stderr is not, so the dicts come in bulk, glued to whatever bar was drawn then,
// or after a clear when a flush fell inside tqdm.write; the same matrix: a dict of step 1 glued to
// 8/20, of step 6 to 10/12). Such dicts are counted, the bars after them bounding their steps from
// above.
// A bar that numbers a dict also times it: its {elapsed} (format_interval, "00:14" or "1:33:46",
// whole seconds cut down) is the time since the bar began, on_train_begin, at the end of the dict's
// step, so it is the dict's elapsed time as ms-swift's 'elapsed_time' is (trainer_elapsed.h).
// Where two such bars in turn show the same second, the steps are faster than whole seconds can
// time (a record timed by the 1 s that some intervals show, and none by the 0 s of the others,
// would read them slower): no bar times any record then, with a note.
//
// TRL's GRPOTrainer and RLOOTrainer (from 0.26, 5de62b07e) add 'step_time': the seconds
// training_step took over one optimizer step's micro-batches (generation included when it ran),
// not the optimizer step, the dataloader or the logging: not a wall time per step (ms-swift#9261:
// 1.58 s against 3.19 s between two lines), so not read.
//
// The closing dict is speed_metrics("train", ...) plus train_loss (transformers'
// Trainer._inner_training_loop): train_runtime and no loss. Its train_steps_per_second x
// train_runtime is the steps run, within their rounding (speed_metrics: 3 and 4 decimals; from
// 2025 printed with four significant digits): where that allows several counts, the last bar
// before it settles which, else its epoch at the steps per epoch the dicts pin (Finish), else the
// average runs through the last dict's step (with a note). With
// include_num_input_tokens_seen, Trainer.log adds speed_metrics("train", start_time,
// num_tokens=num_input_tokens_seen) to every step dict too, which keeps its loss: its
// train_tokens_per_second (the input tokens of all devices since train() began over the seconds
// since) at the last dict is the trainer average through that dict's step, as LLaMA-Factory's
// throughput is (not after a resume: the tokens then count from the first run's start). Several
// ranks may print the whole series: a loss dict equal to an earlier one (its epoch or step
// included) is a copy, as is an eval dict with an earlier one's step and eval_loss, and closing
// dicts after the first are left out. The closing dict's steps run bound the steps per epoch
// whether or not its rate is the average (a loss dict's train_tokens_per_second comes first). Its
// own train_tokens_per_second (include_tokens_per_second) counts one device's tokens: not read.
// TRL's trainers add num_tokens to their dicts, a running count of the tokens of all devices: the
// records' tokens and, with train_runtime, the run's rate (TokensFromCounts,
// trainer_num_tokens.cc).
//
// Thread safety: TrainerDictReader is a value type, one per log.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "base/result.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/trainer_dict_literal.h"
#include "rules/logparse/trainer_elapsed.h"
#include "rules/logparse/trainer_memory.h"

namespace bm::logparse {

// Half the last printed digit's unit of a value the Trainer rounded to `at_least` (half of its
// last decimal) and may have printed f"{v:.4g}" (four significant digits).
double HalfUnit(double v, double at_least);
// Half the unit of an epoch's last printed digit: to four significant digits when it was quoted
// (transformers from 2025), else to its printed decimals, 2 at least (round(epoch, 2) before).
double EpochHalf(double epoch, bool quoted);

class TrainerDictReader {
 public:
  // A TrainingArguments or command-line statement of logging_steps or
  // logging_first_step ("logging_steps=5", "--logging_steps 5",
  // "logging_first_step=True"): true when the line was one.
  bool ReadSetting(std::string_view line);

  // Another trainer's line says step `step` is being done now.
  void SawStep(int64_t step);

  // A tqdm bar's counter in `text` (the part of a line, or of one of its
  // carriage-return segments, before any dict): its last "| n/total [", kept
  // for the next dict.
  void ReadBar(std::string_view text, int64_t line);

  // The Trainer resuming from a checkpoint ("  Continuing training from global
  // step 20"): the records after that step are the failed run's, dropped (a
  // restart, counted in log.restarts), and the count goes on from there. True
  // when the line was that one.
  bool ReadResume(std::string_view line, int64_t line_no, std::map<int64_t, Iteration>& steps,
                  ParsedLog& log);

  // LLaMA-Factory's LogCallback in its Web UI mode (LLAMABOARD_ENABLED) echoes each training log
  // through its logger just before the Trainer prints the dict, on the line of the bar drawn at
  // that step (src/llamafactory/train/callbacks.py, on_log; `llmtuner.extras.callbacks` before
  // 2024-05):
  //
  //    2%|█▋   | 5/300 [00:26<25:00,  5.09s/it][INFO|2025-04-30 22:55:57]
  //      llamafactory.train.callbacks:143 >> {'loss': 1.4229, 'learning_rate': 4.9978e-05,
  //      'epoch': 0.17, 'throughput': 1828.21}
  //   {'loss': 1.4229, 'grad_norm': 0.77048..., 'learning_rate': 4.99780...e-05, 'epoch': 0.17,
  //   ...}
  //
  // The echo is no record: its bar numbers the dict on the next line, and its 'throughput' (input
  // tokens of all devices since the start over the time since then, as in the trainer_log.jsonl)
  // becomes the trainer average through that dict's step. True when `line` was such an echo.
  bool ReadEcho(std::string_view line, const TrainerDict& dict, int64_t line_no);

  // The line, if it is a Trainer dict, read whole: LLaMA-Factory's echo (ReadEcho), else the
  // dict (Read) and its memory entries (trainer_memory.h). False when the line is no dict;
  // kCorrupt ("NAME:LINE: ...") for a memory entry that is not a number.
  Result<bool> ReadLine(std::string_view line, int64_t line_no, std::string_view name,
                        std::map<int64_t, Iteration>& steps, ParsedLog& log);
  // After the log: the dicts' memory peak, unless the log has one already (DictMemory::Report).
  void ReportMemory(std::string_view name, ParsedLog& log) const { memory_.Report(name, log); }
  // After the records' spans are filled: a resume the log does not state (transformers at its
  // default log_level, warning, prints no "Resuming training" line) told from the closing dict's
  // train_loss (trainer_dict_resume.cc). When found, the first record spans the steps from the
  // resume and the closing rate is scaled to the steps run, as for a stated resume.
  void InferUnstatedResume(std::string_view name, ParsedLog& log) const;
  // After the records' spans are final (InferUnstatedResume done): TRL's num_tokens, the running
  // count of the tokens of all devices its trainers keep, as each record's tokens and, with the
  // closing dict's train_runtime, as the run's token rate (trainer_num_tokens.cc).
  void TokensFromCounts(std::string_view name, ParsedLog& log) const;
  // After the records' spans are final: the dicts' elapsed time (ms-swift's, LLaMA-Factory's, or
  // the bar's that numbered the dict) as the time of the steps between two consecutive records
  // with no evaluation (log.evals) or checkpoint save (SawSave) between them (trainer_elapsed.h).
  void TimeFromElapsed(std::string_view name, ParsedLog& log);
  // The Trainer's "Saving model checkpoint to ..." at `line`: a pause in the steps' clock.
  void SawSave(int64_t line) { saves_.push_back(line); }

  // A dict at `line`: a loss dict becomes (or fills) the record of its step
  // in `steps`; an eval dict an EvalPoint; the closing dict gives wall_s and
  // the whole run's train_samples_per_second (a TrainerAverage, unless the
  // log has one already). False for a dict of none of these kinds.
  // `quoted_epoch`: the dict's epoch was printed as a string, to four significant digits.
  bool Read(const TrainerDict& dict, int64_t line, std::map<int64_t, Iteration>& steps,
            ParsedLog& log, bool quoted_epoch = false);

  int64_t logging_steps() const { return logging_steps_; }
  bool logging_steps_stated() const { return stated_; }
  // The line of the first tqdm bar read (0: none), for the error of a log without dicts.
  int64_t first_bar_line() const { return first_bar_line_; }
  // The closing dict's line (0: none read, or it was an earlier run's).
  int64_t closing_line() const { return closing_line_.value_or(0); }
  // The step of the last resume ("Continuing training from global step N") when the bars after
  // it count N steps or fewer (a resume at or past max_steps trains nothing: LlamaFactory#1813's
  // "global step 200000" then `0/139495`), and its line; nullopt otherwise. For the error of a log
  // without dicts.
  std::optional<std::pair<int64_t, int64_t>> ResumedAtTheEnd() const;
  // After the log, before `steps` becomes log.iterations. When some loss dict was numbered by
  // counting (it named no step, no other line anchored it, no bar numbered it) while the log
  // never stated logging_steps, its step is inferred where the log allows only one answer:
  //  - logging_steps from two numbered dicts with counted ones between them (steps 10 and 20
  //    with one dict between: 5), which then numbers every counted dict;
  //  - else from `epoch`, which grows by 1/steps-per-epoch a step: the numbered dicts (and the
  //    closing dict, at the steps run its rates allow, settled by the last bar where it can)
  //    bound steps-per-epoch, each epoch within its printing (round(epoch, 2) as a number:
  //    ±0.005; from 2025 a quoted f"{v:.4g}": half its fourth significant digit), and a counted
  //    dict takes the one step its epoch allows between its neighbours, which bounds
  //    steps-per-epoch in turn for the rest; an eval dict with an epoch likewise.
  // Every loss dict must carry an epoch, and all of them, at the inferred steps, must fit one
  // steps-per-epoch. Failing that, when the steps per epoch are bounded (a numbered dict, the
  // closing dict) and the epochs' spacing allows one logging_steps L, each dict is at the multiple
  // of L its epoch allows. Failing that, logging_steps is the one value L that puts the n-th dict's
  // step n x L between the training bars drawn before and after it (a callback's prints between
  // a bar and the dict keep the bars from numbering it). Failing that, the epochs as the Trainer
  // counts them, in micro-batches (with gradient accumulation an epoch's last step takes the
  // remainder, so the epochs do not grow by one share a step): the one logging_steps whose last
  // multiples up to the closing dict's steps run (or step 1 and then every multiple) put every
  // epoch where some S steps an epoch and micro-batches an epoch over GAS in (S - 1, S] do
  // (MicroBatchSteps). A run resumed from a checkpoint is left as counted. The records (and the
  // evals and the closing dict's through_step that followed them) move to their steps, with a note.
  // Otherwise a note says the steps assume logging_steps 1 (transformers' default is 500). In a log
  // without any loss dict (a run of fewer steps than logging_steps, or logging_strategy "no": only
  // the evaluations and the closing dict), the evaluations are where their epochs put them at the
  // closing dict's steps per epoch.
  void Finish(std::string_view name, std::map<int64_t, Iteration>& steps, ParsedLog& log);

 private:
  struct Bar {
    int64_t n = 0, total = 0, line = 0;
    bool ends_line = false;         // nothing was printed after it on its line (or before its dict)
    std::optional<double> elapsed;  // tqdm's {elapsed}: seconds since the bar began, cut down
  };
  // A loss dict as numbered while reading, for Finish.
  struct Numbered {
    int64_t step = 0, line = 0;
    std::optional<double> epoch;
    double epoch_half = 0;  // half the unit of its last printed digit
    bool known = false;     // named, anchored or numbered by a bar (not counted)
    bool fresh = false;     // it made its record (no other line's record at that step)
    // A counted dict's bars: n of the last one before it and of the first one after it (0: none),
    // both of `total`; its step lies between them (see the top).
    int64_t lo = 0, hi = 0, total = 0;
  };
  int64_t NextAfter(int64_t step) const;
  // A dict naming `step`, at or below the last one, is not a copy of that step's record: a
  // resumed or another run prints it (ms-swift examples run two configurations into one log).
  // The records from `step` on and the closing figures are dropped (a restart).
  void RestartAt(int64_t step, int64_t line, std::map<int64_t, Iteration>& steps, ParsedLog& log);
  // The dict at `line`, whose epoch `to` is below the last dict's `from`, starts another run:
  // the records, evaluations and closing figures so far are the earlier run's, dropped.
  void NewRun(int64_t line, double from, double to, std::map<int64_t, Iteration>& steps,
              ParsedLog& log);
  // The closing dict read so far and what came from it (wall time, the average), left out: a
  // later run starts (NewRun, RestartAt). So is an average a loss dict gave (the Trainer's
  // train_tokens_per_second) when that dict is no longer in dicts_ (called after erasing them).
  void DropClosing(ParsedLog& log);
  // The steps Finish infers for dicts_ (see Finish), or nullopt when the log allows several.
  // `spe` gets the steps-per-epoch range every dict's epoch allows at those steps.
  std::optional<std::vector<int64_t>> InferSteps(int64_t* logging_steps,
                                                 std::pair<double, double>* spe) const;
  // Else from the epochs' spacing: the gaps between consecutive dicts' epochs times the steps per
  // epoch the numbered and closing dicts allow leave one logging_steps L, and each dict's epoch one
  // multiple of L (the Trainer logs at multiples of it), each L after the one before; nullopt
  // otherwise. `spe` as for InferSteps.
  std::optional<std::vector<int64_t>> SpacingSteps(int64_t* logging_steps,
                                                   std::pair<double, double>* spe) const;
  // Else from the epochs as the Trainer counts them, in micro-batches (an epoch's last step may
  // take fewer under gradient accumulation: trainer_dict_epochs.cc): the one set of steps, the
  // dicts at the last multiples of one logging_steps L up to the closing dict's steps run (or at
  // step 1 and then every L), for which some S steps an epoch and micro-batches an epoch over
  // GAS put every dict and the closing dict at their printed epochs; nullopt when none or
  // several. `spe` gets S - 1 to S (a step's steps over its epoch).
  std::optional<std::vector<int64_t>> MicroBatchSteps(int64_t* logging_steps,
                                                      std::pair<double, double>* spe) const;
  // The evaluations that named no step, at `at` (the loss dicts' steps) and `spe` (the steps per
  // epoch, a range: 0 when not known) as Finish says; with no loss dict, where the closing dict's
  // steps per epoch put them.
  void PlaceEvals(const std::vector<int64_t>& at, std::pair<double, double> spe,
                  ParsedLog& log) const;
  // The steps per epoch every loss dict's step and epoch (and the closing dict) allow, when all
  // are numbered and agree on one rate; nullopt otherwise (gradient accumulation's uneven epochs).
  std::optional<std::pair<double, double>> NumberedStepsPerEpoch() const;
  // The steps per epoch the closing dict allows (closing_at_ set): its steps run over its epoch,
  // one step wider each way after a whole epoch of a run that accumulates gradients (an epoch's
  // last step may take fewer micro-batches: trainer_dict_epochs.cc).
  std::pair<double, double> ClosingStepsPerEpoch() const;
  // Else the steps of the one logging_steps that puts every dict between its bars (Finish), or
  // nullopt when none or several do.
  std::optional<std::vector<int64_t>> BarBoundSteps(int64_t* logging_steps) const;
  // The step `bar` gives the loss dict at `line`, when it may (see the top).
  std::optional<int64_t> BarStep(const std::optional<Bar>& bar, int64_t line);
  // Moves the last counted dict to the step the bars around it agree on, once the bar after it
  // has been read (see the top).
  void Confirm(std::map<int64_t, Iteration>& steps, ParsedLog& log);

  bool accumulates_ = false;  // the log says gradient_accumulation_steps > 1 (Finish)
  int64_t logging_steps_ = 1;
  bool stated_ = false;  // a line stated logging_steps
  int64_t counted_ = 0;  // loss dicts numbered by counting (and not confirmed by bars since)
  bool first_step_ = false;
  int64_t last_ = 0;                 // the step of the last loss dict (or anchor)
  std::optional<int64_t> anchored_;  // a step another trainer's line named
  std::optional<Bar> bar_;           // the last bar since the last dict
  int64_t first_bar_line_ = 0;
  int64_t bar_total_ = 0;        // the total of the bars that numbered dicts
  std::vector<Numbered> dicts_;  // the loss dicts read, in order
  // The bar before the last loss dict when it was counted, waiting for the first bar of that
  // total after it; and that bar, when it showed the same n.
  std::optional<Bar> pending_;
  std::optional<Bar> confirmed_;
  // A raw capture's tqdm.write: the line of the last segment when it was spaces (its clear of the
  // bar; 0 after any other segment), the line of the last segment that starts a dict right after
  // that clear, and the line of the last loss dict so written, whose next line starts with the bar
  // redrawn at the dict's step.
  int64_t clear_line_ = 0, written_line_ = 0;
  std::optional<int64_t> redraw_after_;
  // Carriage-return segments seen (two segments on one line): a raw capture; the line of the last
  // segment read.
  bool raw_ = false;
  int64_t segment_line_ = 0;
  // The loss dicts read, by their step or epoch (another rank's copy is skipped): a dict is
  // compared only with those at the same place, not with the whole log.
  std::map<std::optional<double>, std::vector<TrainerDict>> seen_;
  // The eval dicts read (step, eval_loss, epoch), for another rank's copy.
  std::vector<std::tuple<int64_t, double, std::optional<double>>> seen_evals_;
  // log.evals index -> how many loss dicts came before it (evals that named no step).
  struct EvalAfter {
    size_t eval = 0, after = 0;
    std::optional<double> epoch;  // the eval dict's
    double epoch_half = 0;
  };
  std::vector<EvalAfter> eval_after_;
  std::optional<size_t> average_after_;       // the same for trainer_average.through_step
  std::optional<int64_t> closing_line_;       // the closing dict's line
  std::optional<double> closing_train_loss_;  // its train_loss
  std::optional<double> closing_tokens_;      // its num_tokens (TRL, steps after the last log)
  // The closing dict's range of steps run (n to total, at line) when neither its rounded rates
  // nor a bar settle it.
  std::optional<Bar> steps_run_;
  // The closing dict's steps run, when its rates or a bar settle them, and its epoch: one more
  // point that bounds the steps per epoch.
  struct ClosingAt {
    int64_t first = 0, last = 0;  // equal when settled
    double epoch = 0, epoch_half = 0;
  };
  std::optional<ClosingAt> closing_at_;
  std::vector<std::pair<int64_t, std::optional<double>>> extra_closing_;  // line, train_runtime
  bool resumed_ = false;
  int64_t resumed_step_ = 0, resumed_line_ = 0;
  int64_t bar_total_after_resume_ = 0;  // the largest total of the bars after the last resume
  int64_t echo_line_ = 0;               // LLaMA-Factory's first echo (ReadEcho)
  DictMemory memory_;                   // the dicts' memory entries (ReadLine)
  std::optional<std::pair<double, int64_t>> echo_throughput_;  // the last echo's, its line
  struct NewRunAt {
    int64_t line = 0;
    double from = 0, to = 0;  // the epochs
    int64_t ended = 0;        // the step the run before ended at
  };
  std::vector<NewRunAt> new_runs_;  // where another run started, for Finish's notes
  struct RestartAtStep {
    int64_t line = 0, step = 0, after = 0;
  };
  std::vector<RestartAtStep> restarts_at_;  // RestartAt's, for Finish's notes
  std::map<int64_t, DictElapsed> elapsed_;  // by line: the loss dicts' time since the start
  std::vector<int64_t> bar_elapsed_;        // the lines of those elapsed_ takes from their bars
  std::vector<int64_t> saves_;              // the lines of checkpoint saves
};

}  // namespace bm::logparse
