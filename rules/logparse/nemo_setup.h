// The start-up lines of a NeMo run (NeMo 2's nemo/lightning/megatron_init.py, NeMo 1's
// nemo/collections/nlp/modules/common/megatron/megatron_init.py, Megatron-Core's
// num_microbatches_calculator, Lightning's distributed init) that state its layout:
//
//   Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2          world size 2 -> devices
//   [NeMo I ... megatron_init:396] Rank 0 has data parallel group : [0, 1]          -> dp 2
//   [NeMo I ... megatron_init:439] Rank 0 has tensor model parallel group: [0]      -> tp 1
//   [NeMo I ... megatron_init:464] Rank 0 has pipeline model parallel group: [0]    -> pp 1
//   [NeMo I ... num_microbatches_calculator:218] setting number of microbatches to constant 4
//                                                                                  -> gas 4
//
// A group's size is its rank list's length (every rank's group of a kind has the same size; the
// data-parallel group leaves context-parallel ranks out). The number of micro-batches is the
// global batch over micro batch x data-parallel size: the gradient accumulation steps.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

// True when `line` is one of these; its fact is recorded unless the log stated it before.
bool ReadNemoSetupLine(std::string_view line, int64_t no, ParsedLog& log);

}  // namespace bm::logparse
