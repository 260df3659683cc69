// A Trainer log dict's text as its keys and numbers (trainer_dict_literal.cc): the literal
// transformers' ProgressCallback prints, and the pieces of one a terminal hard-wrapped. The
// dicts' meaning is trainer_dicts.h's.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bm::logparse {

// The dict's keys and their numbers: a number, a quoted number, nan / inf
// (NaN, ±Inf), and for a key naming global_step, or 'iteration', a quoted "n/m" its n (ms-swift's
// 'global_step/max_steps': '205/270', its Megatron trainer's 'iteration': '5/10635'), for
// 'elapsed_time' ms-swift's "54m 1s" or LLaMA-Factory's "0:04:02" in seconds (trainer_elapsed.h);
// nullopt for anything else
// (None, a string, a list).
using TrainerDict = std::map<std::string, std::optional<double>, std::less<>>;

// The line (spaces around it ignored) as a Python dict literal of string
// keys, or nullopt when it is not one (trainer_dict_literal.cc). *quoted_epoch, when given,
// says whether the epoch was a quoted string (transformers from 2025: f"{v:.4g}").
std::optional<TrainerDict> ParseTrainerDict(std::string_view line, bool* quoted_epoch = nullptr);

// A dict a terminal copy hard-wrapped at the window's width (tloen/alpaca-lora#268:
// `{'eval_loss': 2.22..., 'eval_runtime': 274.3799, 'eval_samples_pe` then `r_second': 7.289, ...,
// 'epoch': 0.01}`), for ForEachUnwrappedLine (wrapped_lines.h): "}" for a line that opens a dict
// (`{'` or `{"`, spaces before it, or tqdm's bar: `... 21.81s/it]{'loss': '0.01686',`) and does
// not close it, else "". The pieces after it (kTrainerDictPieces at most: a GRPO dict at 80
// columns takes 13) end at a blank line, a line with a '{' or one that starts with '[' (a
// logger's line).
inline constexpr size_t kTrainerDictPieces = 24;
std::string_view TrainerDictCompletion(std::string_view line);
bool StopsTrainerDictPieces(std::string_view line);

}  // namespace bm::logparse
