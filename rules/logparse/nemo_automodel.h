// NeMo Automodel's recipe lines (NVIDIA-NeMo/Automodel, nemo_automodel/recipes/llm/train_ft.py
// and vlm/finetune.py `log_train_metrics`, every optimizer step, the main rank only), read by the
// `nemo` format (rules/logparse/nemo.cc):
//
//   2026-08-10 15:55:20 | INFO | root | step 9 | epoch 0 | loss 0.6974 | grad_norm 1.5436 |
//   lr 1.00e-05 | mem 24.90 GiB | tps 11278.56(1409.82/gpu) | num_label_tokens 21541  (one line)
//
// and `log_val_metrics`' `[val] name "default" | step 9 | epoch 0 | loss 0.7012 | lr 1.00e-05 |
// num_label_tokens 12345` (`[val] step 9 | ...` before f6ff70d, November 2025, and in the VLM
// recipes; `[val] NAME | step` in the KD ones). The first versions (June to August 2025) print
// `INFO:root:step 4 | epoch 0 | loss 1.5514 | grad_norm 102.0000 | mem: 11.66 GiB | tps 6924.50`:
// `mem:` with a colon, and a step that counts micro-batches from 1 (a line at every optimizer
// step, so the lines are the accumulation steps apart: step / that spacing is the optimizer
// step). Their sources (36044ad, August 2026): `step` is StepScheduler.step,
// which counts from 0 since ebd03b0 (2025-10-13; it yields the batches before counting), so the
// line is optimizer step + 1 (from 1 between e557448, 2025-08-18, and ebd03b0: those logs read
// one step high, as the note says unless a `step 0` line shows the count); `loss` is the step's
// (the micro-batches' losses over the step's label tokens, summed over the DP ranks); `mem` is
// torch.cuda.max_memory_allocated() / 2^30 since the previous line (the peak is reset after each
// line); `tps` is the tokens of the step on all DP ranks (tail padding left out) / the seconds
// since the previous step ended (so including the previous step's validation or checkpoint
// save), `(x/gpu)` that over DP x CP (before db4c622, 2025-08-28, `tps` alone): per device only
// without tensor or pipeline parallelism, so it is not read as one. The tokens of a step are not
// printed (num_label_tokens counts the labelled ones only): no time per step.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

struct AutomodelLine {
  bool val = false;          // a `[val] ...` line: it.loss is the validation loss
  std::string val_name;      // its name ("" for `[val] step`), as NoteText
  int64_t printed_step = 0;  // StepScheduler.step as printed
  Iteration it;              // step (printed + 1), loss, grad_norm, lr, tokens_per_s; span 1
  std::optional<double> mem_gib;
  bool mem_colon = false;  // `mem: X GiB`: Automodel before e557448 (August 2025)
};

// NeMo Automodel's step numbering: the printed step + 1, unless the log shows it counting from 1
// (its first step line after the `Step scheduler:` block that recipes print at start-up is
// `step 1`, no `step 0` anywhere), when it is the printed step, or counting micro-batches (`mem:`
// lines, two or more), when it is the printed step / the lines' common spacing.
//
// Collects a log's Automodel lines into a ParsedLog: nemo.cc calls Read for each line that is no
// NeMo 2 line, and Finish once.
class AutomodelReader {
 public:
  // Whether the line was one of Automodel's (a record, a `[val]` line or the `Step scheduler:`
  // block's); kCorrupt as ReadAutomodelLine.
  Result<bool> Read(std::string_view line, int64_t no, std::string_view name, bool cut,
                    ParsedLog& log);
  // The step numbering, the memory (when the log has no other figure) and a note.
  void Finish(ParsedLog& log, std::string_view name) const;
  // The line of the first record read, 0 when none.
  int64_t first_record_line() const { return lines_.empty() ? 0 : lines_.front(); }

 private:
  std::vector<int64_t> lines_;    // the lines of the records read
  std::vector<int64_t> printed_;  // their printed steps
  int64_t micro_line_ = 0;        // the first `mem:` line (micro-batch steps), 0 if none
  int64_t first_line_ = 0;
  int64_t block_line_ = 0;                    // the `Step scheduler:` line
  std::optional<int64_t> first_after_block_;  // the printed step of the first record after it
  bool step0_ = false;
  double peak_gib_ = -1;
  std::string val_name_;  // the first validation set's
};

// nullopt when `line` is not one of these lines (a `step N | epoch E | loss X` run of fields);
// kCorrupt ("NAME:LINE: ...") when a field it reads is not a number. On a cut-off last line
// (`cut`), the last field is left out.
Result<std::optional<AutomodelLine>> ReadAutomodelLine(std::string_view line, int64_t no,
                                                       std::string_view name, bool cut);

}  // namespace bm::logparse
