// torchtune's training bar (rules/logparse/torchtune.cc): the recipes' tqdm bar, one per epoch on
// rank 0, whose description set_description writes after every optimizer step,
//
//   1|26|Loss: 1.2436443567276:  27%|██▋       | 27/101 [07:00<17:31, 14.21s/it]
//
// "epoch|global_step|Loss: the step's loss". After step S the recipe calls pbar.update(1), which
// may draw the bar with the new count and the previous description, then set_description, which
// always draws it with S's. So the bar's count n is the steps done in this epoch's bar, n - S is
// the same for every set_description drawing of a bar (an update drawing shows one more), and
// {elapsed} at the first drawing of count n is when step n - (that offset) ended, in whole seconds
// since the bar began: a step's time is the difference from the previous count's, to +-1 s.
//
// Thread safety: TorchtuneBars is a value type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {

class TorchtuneBars {
 public:
  // Reads one line (or carriage-return segment): true when it is a bar drawing. kCorrupt naming the
  // line when its description's loss does not parse.
  Result<bool> Read(std::string_view line, int64_t no, std::string_view name);
  // The steps the bars show, ascending: loss from the descriptions, ms where the counts before and
  // at the step were both drawn with their elapsed time (consecutive, in the same epoch's bar).
  // *zero_gaps: counts of consecutive steps drawn in the same second (steps faster than the bar's
  // whole seconds can time): then no step is timed.
  std::vector<Iteration> Steps(int64_t* zero_gaps) const;
  int64_t drawings() const { return drawings_; }
  // Whether a drawing read had tqdm's counter (`| n/total [`).
  bool Counted() const;
  int64_t first_line() const { return first_line_; }

 private:
  struct Drawing {
    int64_t epoch = 0, step = 0, line = 0;
    std::optional<int64_t> n;
    std::optional<double> elapsed;
  };
  std::vector<Drawing> drawings_list_;
  std::map<int64_t, std::pair<double, int64_t>> losses_;  // step -> (loss, line)
  int64_t drawings_ = 0, first_line_ = 0;
};

}  // namespace bm::logparse
