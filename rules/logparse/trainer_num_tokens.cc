// TRL's num_tokens in the Trainer's dicts (TrainerDictReader::TokensFromCounts).
//
// TRL's trainers keep a running count of the tokens they trained on and put it in every dict they
// log (trl/trainer/*.py, from v0.16.0, 5858ceab7, March 2025):
//
//   {'loss': 3.7669, 'grad_norm': 3.22, 'learning_rate': 8e-05, 'entropy': 1.49,
//    'num_tokens': 11072.0, 'mean_token_accuracy': 0.512, 'epoch': 2.0}
//   {'loss': '1.084', ..., 'num_tokens': '3.646e+04', ..., 'epoch': '0.4571'}   (transformers 5)
//
// SFTTrainer (and the DPO, KTO and reward trainers) add, in compute_loss of every training
// micro-batch, the batch's attention_mask.sum() (its tokens without the padding) or, padding-free,
// the packed length, gathered over all processes and summed (accelerator.gather_for_metrics): the
// count is the tokens of all devices since the trainer was built, not kept in a checkpoint (a
// resumed run counts again from 0). GRPOTrainer and RLOOTrainer add each generation's prompt and
// completion tokens of all processes to state.num_input_tokens_seen, which a checkpoint keeps.
// log() puts the last count in the dict (`num_tokens`, a list of one value averaged) and clears
// its metrics; the closing dict (Trainer.log of speed_metrics) gets the count too when steps ran
// after the last logging step (their metrics were not cleared), else the last loss dict's count
// is the run's. An eval dict's `eval_num_tokens` repeats the training count: not read.
//
// So a record's tokens are the growth of the count since the record before it (the whole count
// for a first record that reaches back to step 1), which a record timed by its bar or elapsed time
// turns into its token rate; and the count at the end over the closing dict's train_runtime is
// the run's token rate, counted as the trainer counted it (no padding), where the closing dict's
// train_samples_per_second would need a sequence length and count the padding. Printed with four
// significant digits (transformers from 2025), a record's growth is uncertain by a unit of the
// count's fourth digit; the sums over many records are not (the growths add up to the last count
// less the first).
#include <fmt/format.h>

#include "rules/logparse/trainer_dicts.h"

namespace bm::logparse {

void TrainerDictReader::TokensFromCounts(std::string_view name, ParsedLog& log) const {
  std::vector<Iteration>& its = log.iterations;
  int64_t counted = 0, first_line = 0, went_back = 0;
  for (size_t i = 0; i < its.size(); ++i) {
    Iteration& it = its[i];
    if (!it.tokens_seen || *it.tokens_seen < 0) continue;
    if (first_line == 0) first_line = it.line;
    const Iteration* before = i > 0 ? &its[i - 1] : nullptr;
    std::optional<double> tokens;
    if (before && before->tokens_seen && before->step == it.step - it.span) {
      // A count that goes back is a resumed run's that counts again from 0 (SFTTrainer's).
      if (*it.tokens_seen >= *before->tokens_seen) {
        tokens = *it.tokens_seen - *before->tokens_seen;
      } else if (went_back == 0) {
        went_back = it.line;
      }
    } else if (!before && it.step == it.span && log.restarts == 0) {
      tokens = it.tokens_seen;  // the count from the run's start
    }
    if (!tokens) continue;
    it.tokens = tokens;
    ++counted;
  }
  if (counted > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: TRL's num_tokens (the running count of the tokens of all devices, padding left "
        "out) gives {} record(s) their tokens: the growth of the count since the record before",
        name, first_line, counted));
  }
  if (went_back != 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: num_tokens goes back (a resumed run counts again from 0): this record has no "
        "tokens of its own",
        name, went_back));
  }
  // The run's rate: the count at the end over train_runtime, in place of the closing dict's
  // train_samples_per_second (same window: the whole run, its first steps included).
  if (!log.trainer_average || !closing_line_ || !log.wall_s || *log.wall_s <= 0) return;
  TrainerAverage& avg = *log.trainer_average;
  if (avg.line != *closing_line_ || !avg.samples_per_s || avg.excluded_steps != 0 || resumed_)
    return;
  std::optional<double> total = closing_tokens_;
  int64_t total_line = *closing_line_;
  if (!total && !its.empty() && its.back().tokens_seen && its.back().step == avg.through_step &&
      log.restarts == 0) {
    total = its.back().tokens_seen;  // the last loss dict is at the last step run
    total_line = its.back().line;
  }
  if (!total || *total <= 0) return;
  avg.samples_per_s.reset();
  avg.tokens_per_s = *total / *log.wall_s;
  avg.what = fmt::format(
      "TRL's num_tokens {} (line {}: the tokens of all devices, padding left out) over the "
      "Trainer's train_runtime {} s (the whole run, its first steps included)",
      *total, total_line, *log.wall_s);
}

}  // namespace bm::logparse
