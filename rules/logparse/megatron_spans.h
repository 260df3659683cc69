// The spans and derived values of Megatron's iteration records, after the lines are read
// (megatron.cc's top comment says why each rule holds): spans from the gaps; ms-swift's first
// line past iteration 1; core >= 0.16's first interval, which does not reset, turned into the
// iterations after the first (its time, loss and counts, and its FLOP/s per device: the same
// FLOPs an iteration over their time); samples per step from `consumed samples` where a line prints
// no global batch size; the token rate from `consumed tokens` where a line prints none; an
// all-skipped interval's loss dropped; a line that prints the skipped count but no loss though
// not all its iterations were skipped, a NaN loss; a record after an excerpt's elision mark
// (`...` for the lines a README left out), the interval, not the gap. Notes say so.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string_view>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// What the iteration lines say besides their records, by line number.
struct IterationLineExtras {
  std::map<int64_t, double> consumed_samples;  // `consumed samples:`
  // `consumed tokens:` (Megatron-DeepSpeed, ModelLink, MindSpeed-LLM's FSDP2 trainer): all
  // ranks' tokens since the run's start.
  std::map<int64_t, double> consumed_tokens;
  std::set<int64_t> counted_lines;  // the lines that print `number of skipped iterations`
  // The lines of records an excerpt's elision mark (`...`, `[...]`) comes before, since the
  // record before them: the lines between were left out.
  std::set<int64_t> after_elision;
  bool swift = false;  // the lines are ms-swift's (`memory(GiB):`)
};

// log.iterations: not empty, ascending.
void SpanMegatronRecords(ParsedLog& log, const IterationLineExtras& extras, std::string_view name);

}  // namespace bm::logparse
