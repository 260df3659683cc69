// NeMo-Run's table of a task's resolved arguments, which `nemo llm pretrain --factory ...` (and any
// `run.cli` entrypoint, e.g. nemo/collections/diffusion/train.py) prints before the run: NeMo-Run's
// cli/cli_parser.py dry run, `Dry run for task nemo.collections.llm.api:pretrain`, `Resolved
// Arguments`, then a rich table of each argument's repr (rich's Pretty: nested calls one keyword a
// line, a short one on one line, long cells wrapped or cut with `…`):
//
//   ┃ Argument Name        ┃ Resolved Value                                               ┃
//   ┡━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
//   │ data                 │ MockDataModule(seq_length=128, micro_batch_size=1,           │
//   │                      │ global_batch_size=64)                                        │
//   │ model                │ LlamaModel(                                                  │
//   │                      │   config=Llama3Config8B(                                     │
//   │                      │     seq_length=128))                                         │
//   │ trainer              │ Trainer(                                                     │
//   │                      │   plugins=MegatronMixedPrecision(                            │
//   │                      │     precision='bf16-mixed',                                  │
//   │                      │   strategy=MegatronStrategy(                                 │
//   │                      │     tensor_model_parallel_size=1,                            │
//   └──────────────────────┴──────────────────────────────────────────────────────────────┘
//
// Each argument's cells are joined and its keywords read by their path ("data.seq_length",
// "trainer.strategy.tensor_model_parallel_size"). Read: the data module's own seq_length (mpe) when
// it is the length of every sample (MockDataModule, PreTrainingDataModule, a `...Fake...` one;
// a fine-tuning module's is its longest: a note), micro_batch_size (lbs) and
// global_batch_size (gbs); trainer.strategy's tensor/pipeline_model_parallel_size (tp, pp);
// trainer.plugins.precision ('bf16-mixed': bf16, '16-mixed': fp16, '32': fp32). Not read:
// model.config.seq_length (the model's maximum: a note where it differs from the data's, and
// then nemo.cc drops the TFLOPS_per_GPU figures, which count it: SeqLengthMismatch), a
// task encoder's or tokenizer's seq_length (nested deeper), devices (a string, often 'auto'),
// only what the table states: a recipe default the table leaves out is not there. Only the
// first table's values (printed once per dry run, again by `Launching`).
//
// Thread safety: a reader is one log's state; not shared.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

class NemoRunTableReader {
 public:
  // Reads `line` (1-based `no`) when it starts, continues or ends a table; true when it was one of
  // the table's lines (the caller reads nothing else from it).
  bool Read(std::string_view line, int64_t no);

  // Adds what the table stated to `log`: a fact the log states elsewhere first is kept (a note
  // where they differ); the precision where the log states none.
  void Apply(ParsedLog& log, std::string_view name) const;

  // Where the table states a model.config.seq_length other than data.seq_length: "NAME:L
  // model.config.seq_length 8192, not NAME:L data.seq_length 4096"; "" otherwise. NeMo's
  // FLOPsMeasurementCallback counts model.config.seq_length tokens a sample.
  std::string SeqLengthMismatch(std::string_view name) const;

 private:
  struct Value {
    std::string text;
    int64_t line = 0;
  };
  void FinishArgument();

  enum class State { kNone, kHeader, kRows, kDone };
  State state_ = State::kNone;
  std::string prefix_;    // before the table's border (a page's indentation)
  std::string argument_;  // the argument whose cells are being read
  std::string text_;      // its cells joined, quotes made safe
  struct Row {
    size_t at = 0;  // where in text_ it starts
    int64_t line = 0;
    size_t depth = 0;  // its items' nesting by its indentation (2 spaces a level); 0: not known
  };
  std::vector<Row> rows_;
  std::map<std::string, Value, std::less<>> values_;  // "data.seq_length" -> "128"
};

}  // namespace bm::logparse
