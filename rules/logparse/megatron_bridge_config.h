// Megatron-Bridge's print of its ConfigContainer, the start-up statement of a Bridge run's
// batch sizes, sequence length, layout and precision (Bridge prints no Megatron-LM argument
// block). megatron.cc feeds it every line; what it reads becomes facts where the argument block
// did not state them. Two shapes, by Bridge version:
//
// - YAML (training/setup.py `maybe_log_and_save_config` to v0.3.x, February 2026:
//   `------- Task Configuration -------`, then `cfg.print_yaml()`, `yaml.safe_dump` of
//   `to_dict()` with sorted keys; scripts such as run_recipe.py still call `print_yaml()` without
//   the header). It starts at the top `_target_: ...ConfigContainer` and ends at the first line
//   whose text (after the prefix the first line had, a launcher's `0: ` or `[default0]:`) is
//   blank or not a top-level `key:`:
//     _target_: megatron.bridge.training.config.ConfigContainer
//     dataset:
//       sequence_length: 1024          (to July 2026; from e28e1ca, `seq_length: 1024`)
//     mixed_precision:                 (or a recipe name: `mixed_precision: bf16_mixed`)
//       bf16: true
//     model:
//       seq_length: 131072             (the model's maximum, NOT the training length)
//       tensor_model_parallel_size: 1
//     train:
//       global_batch_size: 512
//       micro_batch_size: 1
//   Keys are read by their path (indentation-aware): `model.seq_length` is never the sequence
//   length; a nested `model.transformer:` (MCore's ModelConfig, from March 2026) counts as
//   `model`.
// - Summary (ConfigContainer.log_non_default_values, from #2184, v0.4.0, April 2026; `[dataset]`
//   from #2514): `Configuration Summary (Non-Default Values vs Megatron Core)`, sections
//   `[model] Non-default values (vs Mcore TransformerConfig):` with `  bf16: True  (Mcore default:
//   False)` (only values that differ: tp 1 is not printed), and `[train]:`, `[dataset]:` with
//   `  global_batch_size: 512` (Python reprs), up to the closing `=====` rule.
//
// Read: train.global_batch_size (gbs), train.micro_batch_size (lbs), dataset.sequence_length or
// dataset.seq_length (mpe), model.tensor_model_parallel_size (tp), model.pipeline_model_
// parallel_size (pp), model.num_layers / hidden_size / num_attention_heads; the precision from
// mixed_precision (a recipe name: bf16_* / fp16_*; or its bf16 / fp16 flags), else model.bf16 /
// model.fp16 (both false in the YAML: fp32). The first print's value of a key wins (every rank
// prints the same). Not read: train.train_iters (no such fact), Bridge's `Step Time : 4.65s GPU
// utilization: x MODEL_TFLOP/s/GPU` line (train_utils.py `training_log`, from d42316e, September
// 2025): its time is the same interval's `elapsed time per iteration` in seconds to 2 decimals,
// and its FLOPs count cfg.model.seq_length tokens a sample (in 2026 still the fallback without
// packed-sequence metadata): 59892.5 "TFLOP/s/GPU" on H100s for a 1B model whose
// model.seq_length 131072 was not the 1024 it trained (~130 with 1024). The same figure is the
// iteration line's `throughput per GPU (TFLOP/s/GPU)` with log_throughput: megatron.cc drops it
// where SeqLengthMismatch says the two lengths differ.
//
// Thread safety: a reader is one log's state; not shared.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

class BridgeConfigReader {
 public:
  // Reads `line` (1-based number `no`) when it starts or continues a config print; true when
  // the line was part of one (the caller reads nothing else from it).
  bool Read(std::string_view line, int64_t no);

  // Adds what the prints stated to `log`: a fact the log already has (the argument block's) is
  // kept, and a different value here is a note naming both lines; likewise the precision. Notes
  // too where model.seq_length differs from the training length read, and where
  // context_parallel_size > 1 (the log states no data-parallel size).
  void Apply(ParsedLog& log, std::string_view name) const;

  // Where the print states a model.seq_length other than the training length (dataset.
  // sequence_length or dataset.seq_length): "NAME:L model.seq_length 131072, not NAME:L
  // dataset.sequence_length 1024"; "" otherwise. Bridge's FLOPs (its `throughput per GPU
  // (TFLOP/s/GPU)` and `Step Time` lines) count model.seq_length tokens a sample.
  std::string SeqLengthMismatch(std::string_view name) const;

 private:
  enum class Shape { kNone, kYaml, kSummary };
  struct Value {
    std::string text;
    int64_t line = 0;
  };
  void Record(const std::string& path, std::string_view text, int64_t no);
  bool ReadYaml(std::string_view content, int64_t no);
  bool ReadSummary(std::string_view content, int64_t no);
  const Value* Find(std::string_view path) const;

  Shape shape_ = Shape::kNone;
  std::string prefix_;                                // before the first line's text
  std::vector<std::pair<size_t, std::string>> at_;    // YAML: the open sections' indents and keys
  size_t last_indent_ = 0;                            // YAML: the last key line's indent
  std::string section_;                               // Summary: "[train]" -> "train"
  int rules_ = 0;                                     // Summary: `=====` lines since the title
  std::map<std::string, Value, std::less<>> values_;  // "dataset.sequence_length" -> "1024"
};

}  // namespace bm::logparse
