// NeMo 1's training bar (NeMo 1.x, NeMo-Megatron-Launcher, the DGX Cloud benchmarking
// recipes' `grep train_step_timing *.out`):
//
//   Epoch 0: : 100%|██████████| 50/50 [23:22<00:00, v_num=gjbq, reduced_train_loss=11.70,
//   global_step=49.00, consumed_samples=12600.0, train_step_timing in s=12.80]
//   Epoch 0:   0%|   | 189/301501 [59:12<1573:03:24, 18.79s/it, loss=7.75, v_num=3-16,
//   reduced_train_loss=7.560, global_step=188.0, consumed_samples=24064.0]
//
// Lightning redraws the bar at every training batch's end (on_train_batch_end) with the values
// the step logged with prog_bar=True, so a drawing is one step's, not a mean: its span is 1.
// MegatronGPTModel.training_step logs `reduced_train_loss` (the step's loss, averaged over its
// micro-batches), `global_step` (trainer.global_step before the optimizer step: 0-based, the
// bar's n in epoch 0 is global_step + 1) and `consumed_samples` (global_step x gbs before 2024,
// (global_step + 1) x gbs after: the difference between two drawings over their steps is the
// global batch either way), and `lr` in some models, `grad_norm` (`gradient_norm` in AWS's
// NeuronX Distributed Training) in some. `val_loss` is the last validation's value, carried
// (nemo.cc reads it as evaluations). exp_manager's TimingCallback, inserted
// before the bar among the callbacks, logs `train_step_timing in s` (`train_step_timing` before
// NeMo PR 7374, September 2023): the step's seconds. `loss=` is Lightning's running mean over 20
// batches (Lightning < 2.0), not read.
//
// Numbers are tqdm's format_num as Lightning pads it: three significant digits in e-notation
// when that is shorter ("2e+3", "1.63e+6"), else the full value ("6023.0", "49.00"). A
// global_step in e-notation may be rounded (1999 prints as "2e+3"): in epoch 0 the bar's own
// count n (exact, global_step + 1) gives the step; elsewhere the rounded step is kept and
// flagged. consumed_samples in e-notation is not used.
//
// In epoch 0 the bar's n can exceed global_step + 1 for two reasons. Lightning's
// on_train_batch_end (TQDMProgressBar, NeMo's MegatronProgressBar) draws twice: _update_n sets
// the new count and refreshes, then set_postfix redraws with the step's values, so a log that
// keeps every drawing (`\r`-separated) shows each count first with the previous step's postfix,
// one ahead. And Lightning counts an optimizer step only when it ran: a step the fp16 loss scaler
// skipped (inf gradients) leaves global_step where it was while n goes on. The step read is
// global_step + 1 (what NeMo counts its steps, consumed_samples and checkpoints by); when no
// drawing has n = global_step + 1, the difference is reported. NeMo 1's Stable Diffusion
// (MegatronLatentDiffusion.training_step) logs trainer.global_step + 1 instead, 1-based: a
// drawing with n = global_step shows it, and nemo.cc then reads the steps as global_step.
#include "rules/logparse/nemo_bar.h"

#include <cmath>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// tqdm's e-notation ("1.63e+6", "2e+3" for 1999): three significant digits at most, rounded.
bool Rounded(std::string_view value) { return value.find_first_of("eE") != std::string_view::npos; }

}  // namespace

Result<std::optional<NemoBar>> ReadNemoBar(std::string_view line, std::string_view name,
                                           int64_t no) {
  const size_t loss_at = line.find("reduced_train_loss=");
  if (loss_at == std::string_view::npos || line.find("global_step=") == std::string_view::npos)
    return std::optional<NemoBar>();
  const size_t open = line.rfind('[', loss_at);
  const size_t epoch_at = line.rfind("Epoch ", loss_at);
  if (open == std::string_view::npos || epoch_at == std::string_view::npos || epoch_at > open)
    return std::optional<NemoBar>();
  size_t close = line.find(']', loss_at);
  // No closing bracket: the bar was cut (a paste's end, or the log's); its last field is partial.
  const bool partial = close == std::string_view::npos;
  if (partial) close = line.size();
  std::string_view postfix = line.substr(open + 1, close - open - 1);

  NemoBar bar;
  bar.it.line = no;
  std::optional<double> global_step, timing;
  bool step_rounded = false;
  size_t pos = 0;
  while (pos <= postfix.size()) {
    size_t comma = postfix.find(',', pos);
    if (comma == std::string_view::npos && partial) break;  // the partial last field
    if (comma == std::string_view::npos) comma = postfix.size();
    std::string_view field = postfix.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = Trim(field.substr(0, eq));
    std::string_view value = Trim(field.substr(eq + 1));
    std::optional<double>* target = nullptr;
    if (key == "reduced_train_loss") target = &bar.it.loss;
    if (key == "global_step") target = &global_step;
    if (key == "consumed_samples") target = &bar.consumed_samples;
    if (key == "train_step_timing in s" || key == "train_step_timing") target = &timing;
    if (key == "lr") target = &bar.it.lr;
    if (key == "val_loss") target = &bar.val_loss;
    if (key == "grad_norm" || key == "gradient_norm") target = &bar.it.grad_norm;
    if (target == nullptr) continue;
    std::optional<double> v = ParseNumber(value);
    if (!v && partial) break;  // a cut drawing: what follows the cut is another line's text
    if (!v) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: the NeMo bar's '{}' is '{}', not a number", name,
                    no, key, value);
    }
    *target = v;
    if (key == "global_step") step_rounded = Rounded(value);
    if (key == "consumed_samples" && Rounded(value)) bar.consumed_samples.reset();
  }
  if (!global_step || !bar.it.loss) return std::optional<NemoBar>();  // the cut took them
  const std::optional<int64_t> whole_step = WholeCount(std::round(*global_step));
  if (!whole_step) {
    return Errorf(ErrorCode::kCorrupt, "{}:{}: the NeMo bar's 'global_step' is {}, not a step",
                  name, no, *global_step);
  }
  int64_t step = *whole_step + 1;
  // "Epoch 0: ... | 123456/301501 [": the count before the bracket, the batches of epoch 0.
  std::string_view head = Trim(line.substr(epoch_at, open - epoch_at));
  const size_t space = head.rfind(' ');
  double n = -1;
  if (space != std::string_view::npos) n = LeadingNumber(head.substr(space + 1)).value_or(-1);
  if (head.starts_with("Epoch 0:") && n > 0 && WholeCount(std::round(n)))
    bar.epoch0_batches = *WholeCount(std::round(n));
  if (step_rounded && bar.epoch0_batches && std::fabs(n - (*global_step + 1)) <= 0.005 * n) {
    step = *bar.epoch0_batches;
    step_rounded = false;
  }
  bar.it.step = step;
  bar.step_rounded = step_rounded;
  if (timing) bar.it.ms = *timing * 1000.0;
  return std::optional<NemoBar>(bar);
}

}  // namespace bm::logparse
