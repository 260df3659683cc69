// One MFU figure from the MFU a trainer prints on each record (Iteration::mfu: torchtitan's
// `mfu: U%`), over the records of a window of steps: those past the first `warmup` steps, the
// ones external_metrics times (a record counts only when all the steps it spans are past them).
//
// Each record's MFU is its own interval's: flops per token x the tokens since the previous
// line / (the seconds since it x the peak), as torchtitan's MetricsProcessor.log computes it
// from tps. Over several records with the same tokens per step the figure is the window's
// tokens over its time: the mean weighted by each record's time, span / mfu, i.e. the harmonic
// mean with the steps each record spans as weights (an arithmetic mean would weigh a slow
// interval as much as a fast one of the same span, and overstate it). Records without a figure
// (`mfu: N/A`) or with 0 (`0.00%`, below what two decimals of a percent show) are left out and
// counted. A FLOP/s per device a trainer prints on each record (Iteration::flops_per_device_per_s:
// Megatron-DeepSpeed's `TFLOPs: x` = its FLOPs per iteration / (seconds per iteration x world
// size), Megatron-LM's `throughput per GPU (TFLOP/s/GPU)`, GPT-NeoX's `approx flops per GPU`,
// NeMo 2's `TFLOPS_per_GPU`, Nanotron's `model_tflops_per_gpu`, torchtitan's `tflops`) is the
// same kind of figure, its interval's work over its time, and is averaged the same way (NeMo's is
// itself the printer's arithmetic mean of per-step figures over its interval).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

struct RecordsMfu {
  double value = 0;        // the window's MFU, a fraction (or FLOP/s per device)
  int64_t first_step = 0;  // the first step of the records averaged
  int64_t last_step = 0;   // the last
  int64_t records = 0;     // records averaged
  int64_t left_out = 0;    // records of the window with no figure or 0
  int64_t line = 0;        // the last averaged record's line
};

// nullopt when no record of the window has a figure above 0. `figure`: the records' field averaged
// (Iteration::mfu, or Iteration::flops_per_device_per_s).
std::optional<RecordsMfu> MfuOverRecords(
    const std::vector<Iteration>& its, int64_t warmup,
    std::optional<double> Iteration::*figure = &Iteration::mfu);

// Takes the records' flops_per_device_per_s out (a trainer whose FLOPs count another sequence
// length than the one trained: Megatron-Bridge's and NeMo's at model.seq_length) and adds a note,
// "mfu.stated_flops_per_device: NAME:LINE: the WHAT of N record(s) not read: WHY", naming the
// first record's line. Nothing when no record has one.
void DropRecordsFlops(ParsedLog& log, std::string_view name, std::string_view what,
                      std::string_view why);

}  // namespace bm::logparse
