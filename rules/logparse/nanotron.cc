// Nanotron's iteration lines, as its trainer (huggingface/nanotron, src/nanotron/trainer.py
// train_step_logs, LoggerWriter.add_scalars_from_list in logging.py) prints them at step 1 and
// every logging.iteration_step_info_interval steps, on its one logger rank (DP 0, TP 0, the
// output pipeline stage):
//
//   01/17/2024 13:47:27 [INFO|DP=0|PP=0|TP=0|ip-26-0-160-225]: iteration: 992 / 1000 |
//   consumed_tokens: 635K | elapsed_time_per_iteration_ms: 41.2 | tokens_per_sec: 15.5K |
//   tokens_per_sec_per_gpu: 1.94K | global_batch_size: 20 | lm_loss: 10.6 | lr: 1e-05 |
//   model_tflops_per_gpu: 0.0095 | hardware_tflops_per_gpu: 0.00951 | grad_norm: 0.507 (one line)
//
// `iteration: N / M` is the 1-based optimizer step and the run's last. Every number is
// human_format's: 3 significant digits, then K, M, G (B since April 2025), T, P, E for powers of
// 1000 (below 1: Python's `{:.3g}`, `1e-05`). A record is its own step only: the timer starts at
// the top of each iteration and stops (after torch.cuda.synchronize, or a barrier) at the line,
// so `elapsed_time_per_iteration_ms` (`time_per_iteration_ms` since 2b141c2, March 2025) is
// that step's time, data loading and the step included; span 1 however far apart the lines.
// `tokens_per_sec` = the global batch (samples) x the sequence length / that time: over all
// devices; `tokens_per_sec_per_gpu` = that / the world size (every rank, TP and PP included),
// the rate read. Their ratio is the world size, read as `devices` where every line gives the same
// whole number within their digits (below 50 devices: 1% of the ratio must not reach the next).
// `global_batch_size` counts samples, and tokens (global_batch_size_in_tokens) since 2b141c2:
// read as the step's samples only when it is not the step's tokens (its tokens_per_sec x time)
// and is exact: below 1000 (human_format prints 1024 as `1.02K`).
// `lm_loss` is the step's loss, averaged over the data-parallel ranks. `cuda_max_memory_reserved`
// (on the lines of steps 1-4 and after each checkpoint interval, nanotron before 7bc9923, June
// 2025) is torch.cuda.max_memory_reserved() of the logger rank's device in bytes, never reset.
// `model_tflops_per_gpu` (get_flops_per_sec in models/llama.py, qwen.py, ...: the model's FLOPs
// of the global batch, 3 x forward, no causal halving, / the step's seconds / the world size /
// 1e12) is read as the record's FLOP/s per device (mfu.stated_flops_per_device); it is no MFU (no
// peak is printed). `hardware_tflops_per_gpu` (the same in llama.py, a placeholder) is not read.
#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kNanotronIteration = "iteration: ";

// Where `iteration: N / M | ` starts in the line, N, and where the fields after it start; npos
// when the line is none.
size_t NanotronFields(std::string_view line, int64_t* step) {
  size_t at = line.find(kNanotronIteration);
  while (at != std::string_view::npos) {
    const bool starts = at == 0 || line[at - 1] == ' ' || line[at - 1] == ':';
    std::string_view rest = line.substr(at + kNanotronIteration.size());
    size_t end = 0, last_end = 0;
    std::optional<int64_t> n = WholeCount(LeadingNumber(rest, &end));
    if (starts && n && rest.substr(end).starts_with(" / ")) {
      std::string_view last = rest.substr(end + 3);
      if (WholeCount(LeadingNumber(last, &last_end)) && last.substr(last_end).starts_with(" | ")) {
        *step = *n;
        return at + kNanotronIteration.size() + end + 3 + last_end + 3;
      }
    }
    at = line.find(kNanotronIteration, at + 1);
  }
  return std::string_view::npos;
}

// human_format's text as a number: `634K` 634e3, `85.8G` 85.8e9, `1e-05`; nullopt otherwise.
// Read as the decimal it stands for (`2.03K` is 2030, not 2.03 x 1000 in binary).
std::optional<double> HumanNumber(std::string_view value) {
  value = Trim(value);
  size_t end = 0;
  if (!LeadingNumber(value, &end)) return std::nullopt;
  std::string_view suffix = value.substr(end);
  if (suffix.empty()) return ParseNumber(value);
  if (suffix.size() != 1) return std::nullopt;
  constexpr std::string_view kSizes = "KMGTPE";
  size_t power = kSizes.find(suffix[0]);
  if (suffix[0] == 'B') power = 2;  // billions: human_format's "G" since April 2025
  if (power == std::string_view::npos ||
      value.substr(0, end).find_first_of("eE") != std::string_view::npos)
    return std::nullopt;
  return ParseNumber(fmt::format("{}e{}", value.substr(0, end), 3 * (power + 1)));
}

}  // namespace

bool IsNanotronIterationLine(std::string_view line) {
  int64_t step = 0;
  return NanotronFields(line, &step) != std::string_view::npos;
}

Result<ParsedLog> ParseNanotronLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "nanotron";
  Status error = Status::Ok();
  double reserved = -1;
  int64_t gbs_tokens_line = 0, gbs_rounded_line = 0;
  double world = 0;  // tokens_per_sec / tokens_per_sec_per_gpu, where every line gives the same
  int64_t world_line = 0;
  bool world_unclear = false;
  log.lines = ForEachLine(text, [&](std::string_view line, int64_t no) {
    if (!error.ok()) return;
    int64_t step = 0;
    const size_t at = NanotronFields(line, &step);
    if (at == std::string_view::npos) return;
    const bool cut = IsCutLastLine(text, line);
    Iteration it;
    it.step = step;
    it.line = no;
    std::optional<double> gbs, memory, tokens_per_s, tflops;
    bool gbs_rounded = false;
    ForEachKeyValue(line.substr(at), " | ", cut, [&](std::string_view key, std::string_view value) {
      struct Key {
        std::string_view key;
        std::optional<double>* target;
      };
      const Key keys[] = {{"elapsed_time_per_iteration_ms", &it.ms},
                          {"time_per_iteration_ms", &it.ms},
                          {"tokens_per_sec", &tokens_per_s},
                          {"tokens_per_sec_per_gpu", &it.tokens_per_device_per_s},
                          {"global_batch_size", &gbs},
                          {"lm_loss", &it.loss},
                          {"lr", &it.lr},
                          {"grad_norm", &it.grad_norm},
                          {"cuda_max_memory_reserved", &memory},
                          {"model_tflops_per_gpu", &tflops}};
      for (const Key& k : keys) {
        if (key != k.key) continue;
        std::optional<double> v = HumanNumber(value);
        if (!v) {
          error = Errorf(ErrorCode::kCorrupt, "{}:{}: Nanotron's '{}' is '{}', not a number", name,
                         no, key, value);
          return false;
        }
        *k.target = v;
        // human_format keeps 3 digits: a count of 1000 or more (`1.02K` for 1024) is rounded.
        if (k.key == "global_batch_size")
          gbs_rounded = !value.empty() && std::isalpha(static_cast<unsigned char>(value.back()));
      }
      return true;
    });
    if (!error.ok()) return;
    if (tflops) it.flops_per_device_per_s = *tflops * 1e12;
    if (memory && *memory > reserved) reserved = *memory;
    if (tokens_per_s && it.tokens_per_device_per_s && *it.tokens_per_device_per_s > 0) {
      // The world size the rate was divided by, to the 3 digits of each (1% at most).
      const double ratio = *tokens_per_s / *it.tokens_per_device_per_s;
      const double n = std::round(ratio);
      const bool clean = n >= 1 && std::fabs(ratio - n) <= 0.01 * ratio && 0.01 * ratio < 0.5;
      if (!clean || (world != 0 && world != n)) {
        world_unclear = true;
      } else if (world == 0) {
        world = n;
        world_line = no;
      }
    }
    if (gbs && tokens_per_s && it.ms) {
      // Samples, or (since 2b141c2) the step's tokens: tokens_per_sec x the step's time, to
      // human_format's 3 digits.
      const double step_tokens = *tokens_per_s * *it.ms / 1000.0;
      if (std::fabs(*gbs / step_tokens - 1.0) < 0.02) {
        if (gbs_tokens_line == 0) gbs_tokens_line = no;
      } else if (gbs_rounded) {
        if (gbs_rounded_line == 0) gbs_rounded_line = no;
      } else {
        it.samples = gbs;
      }
    }
    AddIteration(log.iterations, it, &log.restarts);
  });
  BM_TRY(error);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no Nanotron iteration lines ('iteration: N / M | consumed_tokens: ... | "
                  "elapsed_time_per_iteration_ms: ... | tokens_per_sec: ... | lm_loss: ...') in {} "
                  "lines{}",
                  name, log.lines, OtherFormatHint(text, "nanotron"));
  }
  if (world > 0 && !world_unclear) {
    SetFact(log, "devices", world, world_line);
    log.notes.push_back(fmt::format(
        "{}:{}: {} devices: tokens_per_sec / tokens_per_sec_per_gpu (Nanotron divides by the "
        "world size), the same whole number on every line to their 3 digits",
        name, world_line, world));
  }
  if (reserved >= 0) {
    log.peak_memory_bytes = reserved;
    log.memory_source =
        "Nanotron 'cuda_max_memory_reserved' (max_memory_reserved of the logger rank's device, "
        "bytes to 3 digits)";
  }
  log.notes.push_back(fmt::format(
      "{}: each Nanotron line is its own step's (time, loss, rates), not a mean since the "
      "previous line; its numbers have 3 significant digits (human_format)",
      name));
  if (gbs_rounded_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: global_batch_size is printed to 3 digits (human_format: 1.02K for 1024), no exact "
        "count of samples: none read (set gbs)",
        name, gbs_rounded_line));
  }
  if (gbs_tokens_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: global_batch_size is the step's tokens (Nanotron since 2b141c2, March 2025), not "
        "its samples: no samples read",
        name, gbs_tokens_line));
  }
  return log;
}

}  // namespace bm::logparse
