// The spans and derived values of Megatron's iteration records, after the lines are read
// (megatron.cc's top comment says why each rule holds): spans from the gaps; ms-swift's first
// line past iteration 1; core >= 0.16's first interval, which does not reset, turned into the
// iterations after the first; samples per step from `consumed samples` where a line prints no
// global batch size; an all-skipped interval's loss dropped; a line that prints the skipped
// count but no loss though not all its iterations were skipped, a NaN loss. Notes say so.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string_view>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// log.iterations: not empty, ascending. consumed: an iteration line's `consumed samples`, by
// line; counted_lines: the lines that print `number of skipped iterations`; swift: the lines
// are ms-swift's (`memory(GiB):`).
void SpanMegatronRecords(ParsedLog& log, const std::map<int64_t, double>& consumed,
                         const std::set<int64_t>& counted_lines, bool swift, std::string_view name);

}  // namespace bm::logparse
