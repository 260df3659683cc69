// NaN steps counted alike in every format. Megatron prints its own count (`number of nan
// iterations:`, Iteration::nan); the other formats print only the loss, so a record whose loss is
// NaN or Inf (`'loss': nan`, `loss: nan`, `reduced_train_loss: inf`) counts here as one step: all
// of it when the record is one step; a lower bound when it spans several (a mean over the span
// is not finite when one of its losses is not; a step's own loss, torchtitan's, says nothing of
// the steps between), with a note naming the first such record's line and, for spans, that the
// count is a lower bound. A record that already counts its NaN steps (nan > 0) keeps its count.
//
// Thread safety: pure function.
#pragma once

#include <string_view>

#include "rules/logparse/log_parser.h"

namespace bm::logparse {

void CountNonFiniteLosses(ParsedLog& log, std::string_view name);

}  // namespace bm::logparse
