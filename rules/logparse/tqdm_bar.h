// tqdm's progress bars in a log: the counter "| n/total [elapsed<remaining, rate]" that tqdm's
// default format draws (the Trainer's training bar, torchtune's recipes' bar), read by the
// trainer format (trainer_dict_bars.cc) and the torchtune format.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bm::logparse {

// The last tqdm counter "| n/total [" in text (tqdm's default format:
// "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"), or "P% n/total ["
// where tqdm drew no bar (ncols 0, as in Colab: format_meter returns l_bar[:-1] + r_bar[1:]);
// nullopt when text has none.
struct TqdmCounter {
  int64_t n = 0, total = 0;
  bool last = false;  // nothing but spaces (or "^M") after the bar's closing ']'
  // {elapsed} (format_interval: "MM:SS", from an hour "H:MM:SS"): the seconds since the bar
  // began, cut to whole seconds
  std::optional<double> elapsed;
};
std::optional<TqdmCounter> ReadTqdmCounter(std::string_view text);

}  // namespace bm::logparse
