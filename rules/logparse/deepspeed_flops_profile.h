// DeepSpeed's flops profiler summary (deepspeed/profiling/flops_profiler/profiler.py,
// FlopsProfiler.print_model_profile), which the engine prints on rank 0 in step() at the profiled
// step (ds_config "flops_profiler": {"enabled": true, "profile_step": N}):
//
//   -------------------------- DeepSpeed Flops Profiler --------------------------
//   Profile Summary at step 2:
//   Notations: ...
//   world size:                                                             3
//   batch size per GPU:                                                     32
//   fwd flops per GPU:                                                      382.64 G
//   iter latency:                                                           487.61 ms
//   FLOPS per GPU = 3 * fwd flops per GPU / iter latency:                   2.35 TFLOPS
//   samples/second:                                                         196.88
//   ----------------------------- Aggregated Profile per GPU -----------------------------
//
// Its figures are those of one micro-batch on rank 0: the forward flops its module hooks count
// (flops = 2 x MACs), and the engine's wall-clock timers of that micro-batch's forward, backward
// and step() (iter latency; step() prints the summary at the first micro-batch of the step, so
// under gradient accumulation the optimizer's update is not in it). The whole-iteration figure is
// (2 + recompute_fwd_factor + 1) x fwd flops / iter latency, per GPU ("per device" in a fork);
// samples/second is batch size per GPU x world size / iter latency (world size counts the
// model-parallel ranks too). Numbers come as number_to_string prints them: round(x / unit, 2)
// with :g and an SI prefix (T G M K, m u; a duration's unit `s`, a rate's `FLOPS`), before
// DeepSpeed 0.10 (July 2023) as str(round(x / unit, 2)) with T/G/M/K only, the fwd flops in G.
// Releases before May 2021, and the profiler run without the engine (no world size, no bwd or
// iter latency), print no whole-iteration line: no figure then.
// "Profile Summary at step N" is the engine's global_steps: the optimizer steps done before the
// profiled micro-batch.
//
// A summary line (after the header, until the aggregated profile's header or 40 lines) is read
// after any prefix (srun's `0: `, a pdsh host, a quote's `> `, indentation), several ranks'
// summaries interleaved included: the first value of each field is kept. A field whose value does
// not parse is an error (kCorrupt, "NAME:LINE: ..."); a latency or rate that is not positive (the
// timers of a run whose backward ran outside the engine) is no figure, with a note.
//
// Thread safety: a value type, one per log.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

class FlopsProfileReader {
 public:
  // The line, if it is one of the summary's: its field read; true then (the line is no record of
  // any other kind). kCorrupt for a field whose value does not parse.
  Result<bool> Read(std::string_view line, int64_t line_no, std::string_view name);

  // After the log: the whole-iteration FLOPS per GPU as log.stated_flops_per_device, and the
  // summary's step, latency and samples/second in a note (or why no figure was read).
  void Report(std::string_view name, ParsedLog& log) const;

 private:
  struct Field {
    double value = 0;
    int64_t line = 0;
  };
  int64_t header_line_ = 0;  // the last header's line (0: none yet)
  int64_t lines_in_ = 0;     // lines since it, while inside a summary
  bool inside_ = false;
  std::optional<Field> step_, world_, batch_, fwd_flops_, iter_s_, flops_, samples_;
  std::string flops_label_;        // "3 * fwd flops per GPU / iter latency"
  int64_t not_positive_line_ = 0;  // the first latency or rate that was not positive
  int64_t summaries_ = 0;          // headers seen
};

}  // namespace bm::logparse
