// torchtitan's training lines, as MetricsProcessor.log (pytorch/torchtitan, torchtitan/components/
// metrics.py; train.py before 2025-03) prints them at step 1 and every metrics.log_freq steps:
//
//   [rank0]:[titan] 2025-11-25 19:45:01,496 - root - INFO - step:  2  loss:  7.7082
//   grad_norm:  1.5585  memory:  1.34GiB(0.96%)  tps: 301,092  tflops: 21.55  mfu: 2.18% (one line)
//
// Fields by version: `wps:` (to 2024-11), then `tps:`; `tflops:` since 2025-02; `grad_norm:`
// since 2025-06; `mfu: N/A` with FP8/MX (2026-02). `step` is the 1-based optimizer step (the
// trainer counts it up before the step). `loss` is that step's loss averaged over the DP ranks
// (since 2fa6d83, 2025-01; before it, the mean over the steps since the previous line): not a
// mean over the record's span. `memory: X GiB(P%)` is torch.cuda.memory_stats()'s
// reserved_bytes.all.peak / 2^30 on the printing rank's device since the previous line (the
// monitor's peak is reset after each line). `tps` is the tokens the rank loaded since the
// previous line / (the seconds since it x the non-data-parallel degree tp x pp x cp): a rate per
// device over the record's span, the same on every rank of a step but for the clock.
//
// `tflops` = num_flops_per_token x tps / 1e12 and `mfu` = 100 x num_flops_per_token x tps / the
// device's peak, over the record's span like tps. num_flops_per_token (models/utils.py
// get_dense_model_nparams_and_flops, get_moe_model_nparams_and_flops) is PaLM's: 6 x the
// parameters without the embedding (with tied embeddings, all; a MoE counts its active
// experts, top_k / num_experts of the routed ones) + 6 x layers x heads x (qk + v head dims) x
// the configured sequence length (12 x L x H x T for Llama; no causal halving, recomputation
// not counted; only full-attention layers of a hybrid). The peak (tools/utils.py
// get_peak_flops, BF16 dense, by the device name or lspci's H100 line): A100 312, A6000
// 154.85, H100 SXM 989 (PCIe 756, NVL 835), H200 989, H20 148, B200/B300 2250, GB200/GB300
// 2500, MI250X 191.5 (per GCD), MI300X/MI325X 1300, MI355X 2500, L40S 362, Intel Max 1550
// 512 x compute units x 1.3 GHz, Trainium 2/3 158, TPU v4 275 .. v7 1153.5 TFLOP/s; any other
// device falls back to A100's 312 with a warning `Peak flops undefined for: NAME, fallback to
// A100` (noted); the trainer prints the peak it took, `Peak FLOPS used for computing MFU:
// 9.890e+14` (since 2024-08, #554; noted). With Float8/MXFP8/NVFP4 layers the line says `mfu: N/A`
// since f113706 (2026-02-28); before, the number is against the BF16 peak (a note when the log says
// float8 or MX is active). Each record's mfu is read (Iteration::mfu); the one figure for the timed
// steps is records_mfu.h's, where the warm-up is known.
//
// Per record: step, loss, grad_norm, the per-device token rate, mfu, tflops (its FLOP/s per device,
// for mfu.stated_flops_per_device; printed with `mfu: N/A` too), and, when the start-up lines
// (rules/logparse/torchtitan_setup.h) give the tokens of one step and the world size, the
// time per step: (global batch x sequence length, or the tokens per train step) / world size /
// tps. A record spans the steps since the previous line (the first of a run: since the run's
// "Training starts at step N"). Every rank may print (LOG_RANK, torchrun --tee): the first
// record of a step is kept. A "Training starts at step N" line after records at or past N is a
// resumed run: its records replace those from N on. `validate step: N  loss: X ...`
// (log_validation) is an evaluation at step N, not a record.
//
// With pipeline parallelism only the last stage has the loss: the other ranks print a placeholder
// (`loss: -1.0000`, torchtitan's `torch.tensor([-1.0])`; summed over the data-parallel ranks since
// 2026-02, so -2.0 and so on: pytorch/torchtitan#1232, #2606). A negative loss is that, no loss:
// the record has none, and another rank's record of the step (LOG_RANK=0,7) gives it its loss.
// A line a terminal copy or a commit message hard-wrapped (`step:  1  loss:` then `7.98820
// grad_norm: ...  tps: 1,578` then `tflops: 0.86  mfu: N/A`, pytorch/torchtitan#3932) is read
// joined (wrapped_lines.h), up to its `mfu:`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"
#include "rules/logparse/log_parser.h"
#include "rules/logparse/torchtitan_setup.h"
#include "rules/logparse/wrapped_lines.h"

namespace bm::logparse {
namespace {

// A training or validation line: where "step:" starts, and whether it is "validate step:".
struct TitanStepAt {
  size_t at = std::string_view::npos;
  bool validate = false;
};

TitanStepAt FindTitanStep(std::string_view line) {
  size_t at = line.find("step: ");
  while (at != std::string_view::npos) {
    const bool whole = at == 0 || line[at - 1] == ' ' || line[at - 1] == ']' ||
                       line[at - 1] == ':' || line[at - 1] == '\t';
    if (whole) {
      std::string_view before = line.substr(0, at);
      size_t end = 0;
      std::string_view rest = line.substr(at + 6);
      // "step:  2  loss:" — the step, then two spaces and the loss.
      if (WholeCount(LeadingNumber(rest, &end)) && rest.substr(end).starts_with("  loss:"))
        return {at, before.ends_with("validate ")};
    }
    at = line.find("step: ", at + 1);
  }
  return {};
}

// The raw value of `key: value` in a torchtitan line (after the step): the text up to the next
// space; "" when the key is absent. *cut when the value runs to the end of a line that was cut
// off (the log's last line without its newline).
std::string_view TitanValue(std::string_view line, std::string_view key, bool last_line_cut,
                            bool* cut) {
  size_t p = FindKeyValue(line, key, ":");
  *cut = false;
  if (p == std::string_view::npos) return {};
  p = SkipSpaces(line, p);
  size_t e = line.find(' ', p);
  if (e == std::string_view::npos) {
    e = line.size();
    *cut = last_line_cut;
  }
  return line.substr(p, e - p);
}

// A field's number; kCorrupt naming the line when the value is not one. nullopt when absent or
// cut off.
Result<std::optional<double>> TitanField(std::string_view line, std::string_view key,
                                         bool last_line_cut, int64_t no, std::string_view name) {
  bool cut = false;
  std::string_view value = TitanValue(line, key, last_line_cut, &cut);
  if (value.empty() || cut) return std::optional<double>();
  size_t end = 0;
  std::optional<double> v = GroupedNumber(value, &end);
  // memory: "1.34GiB(0.96%)"; mfu: "2.18%"; others end with the number.
  std::string_view unit = v ? value.substr(end) : value;
  const bool ok = v && (unit.empty() || unit == "%" || unit.starts_with("GiB("));
  if (!ok) {
    return Errorf(ErrorCode::kCorrupt, "{}:{}: torchtitan's '{}' is '{}', not a number", name, no,
                  key, value);
  }
  return v;
}

// What the lines say about torchtitan's `mfu:` and its peak, for the notes.
struct TitanMfuLines {
  int64_t numbers = 0, na = 0, zeros = 0;  // training lines by their mfu
  int64_t first_na = 0, first_zero = 0;
  int64_t fallback_line = 0;  // `Peak flops undefined for: NAME, fallback to A100`
  std::string fallback_device;
  int64_t quantized_line = 0;  // a line saying Float8/MX/NVFP4 layers are in use
  std::optional<Fact> peak;    // `Peak FLOPS used for computing MFU: 9.890e+14` (since #554)
  double above_one = 0;        // the largest mfu above 100%, and its line
  int64_t above_one_line = 0;
};

// The start-up lines that matter to the mfu: get_peak_flops' fallback warning, the quantization
// converters' messages (components/quantization/float8.py, mx.py, nvfp4.py).
void ReadTitanPeakLine(std::string_view line, int64_t no, TitanMfuLines& m) {
  if (size_t at = line.find("Peak flops undefined for");
      at != std::string_view::npos && line.find("fallback to A100") != std::string_view::npos) {
    if (m.fallback_line != 0) return;
    std::string_view rest = line.substr(at + 24);
    rest = rest.substr(0, rest.find(", fallback to"));
    m.fallback_line = no;
    m.fallback_device = NoteText(
        Trim(rest.substr(rest.find(':') == std::string_view::npos ? 0 : rest.find(':') + 1)));
    return;
  }
  if (size_t at = line.find("Peak FLOPS used for computing MFU:"); at != std::string_view::npos) {
    std::optional<double> v = LeadingNumber(line.substr(at + 34));
    if (v && *v > 0 && !m.peak) m.peak = Fact{*v, no};
    return;
  }
  for (std::string_view q : {"Float8 training active", "Swapped to Float8Linear",
                             "layers to MXFP8Linear", "layers to NVFP4Linear"}) {
    if (m.quantized_line == 0 && line.find(q) != std::string_view::npos) m.quantized_line = no;
  }
}

// `mfu: 2.18%` as a fraction, `mfu: N/A` as nullopt with *na; kCorrupt naming the line otherwise.
// Text after the `%` (a markdown fence a page glued on) is not the value's.
Result<std::optional<double>> TitanMfu(std::string_view fields, bool last_line_cut, int64_t no,
                                       std::string_view name, bool* na) {
  bool cut = false;
  std::string_view value = TitanValue(fields, "mfu", last_line_cut, &cut);
  *na = value.starts_with("N/A");
  if (value.empty() || cut || *na) return std::optional<double>();
  size_t end = 0;
  std::optional<double> v = GroupedNumber(value, &end);
  if (!v || !value.substr(end).starts_with('%')) {
    return Errorf(ErrorCode::kCorrupt, "{}:{}: torchtitan's 'mfu' is '{}', not a percentage or N/A",
                  name, no, value);
  }
  return std::optional<double>(*v / 100.0);
}

// A line that starts another log record (a logger's prefix, another step line): where the pieces
// of a hard-wrapped training line end.
bool StartsTitanRecord(std::string_view line) {
  std::string_view t = Trim(line);
  return t.starts_with('[') || FindTitanStep(line).at != std::string_view::npos ||
         line.find(" - INFO - ") != std::string_view::npos ||
         line.find(" - WARNING - ") != std::string_view::npos;
}

void AddTitanMfuNotes(const TitanMfuLines& m, std::string_view name,
                      std::vector<std::string>& notes) {
  if (m.na > 0) {
    notes.push_back(fmt::format(
        "{}:{}: {} training line(s) print 'mfu: N/A' (torchtitan with Float8/MX/NVFP4 layers "
        "since f113706, February 2026: its peaks are BF16's){}",
        name, m.first_na, m.na,
        m.numbers == 0 ? ", none a number: no stated MFU"
                       : fmt::format(", {} a number: only those give the stated MFU", m.numbers)));
  }
  if (m.zeros > 0) {
    notes.push_back(fmt::format(
        "{}:{}: {} training line(s) print 'mfu: 0.00%' (below 0.005%: a first step whose "
        "time holds the start-up, or a model whose flops per token torchtitan counts as about "
        "0), left out of the stated MFU",
        name, m.first_zero, m.zeros));
  }
  if (m.numbers == 0) return;
  if (m.peak) {
    notes.push_back(fmt::format(
        "{}:{}: torchtitan's mfu divides by {:g} TFLOP/s per device (its 'Peak FLOPS used for "
        "computing MFU')",
        name, m.peak->line, m.peak->value / 1e12));
  }
  if (m.fallback_line > 0) {
    notes.push_back(fmt::format(
        "{}:{}: torchtitan's peak table does not know the device ('{}'): its mfu is against "
        "A100's 312 TFLOP/s (get_peak_flops' fallback)",
        name, m.fallback_line, m.fallback_device));
  }
  if (m.above_one_line > 0) {
    notes.push_back(fmt::format(
        "{}:{}: mfu {:.2f}% is above 100%: torchtitan divided by a lower peak than the device's "
        "(its A100 fallback for a device its table lacked: B200 before May 2025, MI355X before "
        "October 2025; or the BF16 peak with Float8/MX layers before f113706)",
        name, m.above_one_line, m.above_one * 100));
  }
  if (m.quantized_line > 0) {
    notes.push_back(fmt::format(
        "{}:{}: Float8/MX layers and a numeric mfu: against the BF16 peak, which low-precision "
        "matmuls can exceed (torchtitan before f113706, February 2026, or where its config "
        "check does not see the converted layers)",
        name, m.quantized_line));
  }
}

}  // namespace

bool IsTorchtitanStepLine(std::string_view line) {
  TitanStepAt s = FindTitanStep(line);
  if (s.at == std::string_view::npos || s.validate) return false;
  std::string_view rest = line.substr(s.at);
  // The first piece of a hard-wrapped line (or one whose rate an excerpt left out) has no rate:
  // torchtitan's `[titan]` prefix tells, or ezpz's naming torchtitan's metrics module, or the
  // memory field.
  return FindKeyValue(rest, "tps", ":") != std::string_view::npos ||
         FindKeyValue(rest, "wps", ":") != std::string_view::npos ||
         line.find("[titan]") != std::string_view::npos ||
         // `memory: 18.42GiB(6.40%)  ...`: an excerpt that elided the rest of the fields.
         rest.find("GiB(") != std::string_view::npos ||
         line.substr(0, s.at).find("components/metrics:") != std::string_view::npos;
}

Result<ParsedLog> ParseTorchtitanLog(std::string_view text, std::string_view name) {
  ParsedLog log;
  log.format = "torchtitan";
  TorchtitanSetup setup;
  Status error = Status::Ok();
  double peak_gib = -1;
  int64_t copies = 0, copy_line = 0, wps_line = 0;
  bool tflops = false;  // a training line with `tflops:` (torchtitan since February 2025)
  int64_t placeholders = 0, placeholder_line = 0;       // PP's `loss: -1.0000`
  std::optional<int64_t> run_start;                     // the last "Training starts at step N"
  std::vector<std::pair<int64_t, int64_t>> run_starts;  // (N, line) of each run
  // A training line without its `mfu:` (the last field since 2024) is read with the pieces that
  // bring it, if the following lines are such pieces and no new records.
  auto completion = [](std::string_view l) -> std::string_view {
    TitanStepAt s = FindTitanStep(l);
    if (s.at == std::string_view::npos || s.validate) return "";
    return FindKeyValue(l.substr(s.at), "mfu", ":") == std::string_view::npos ? "mfu:" : "";
  };
  TitanMfuLines mfu_lines;
  auto read_line = [&](std::string_view line, int64_t no) {
    TitanStepAt s = FindTitanStep(line);
    if (s.at == std::string_view::npos) {
      ReadTitanPeakLine(line, no, mfu_lines);
      Result<std::optional<int64_t>> start = ReadTorchtitanSetupLine(line, no, name, log, setup);
      if (!start.ok()) {
        error = start.status();
      } else if (start->has_value()) {
        // Another rank's line of the run already started (it may come after the first rank's
        // first record): no new run.
        const bool same_run = !run_starts.empty() && run_starts.back().first == **start &&
                              (log.iterations.empty() || log.iterations.back().step <= **start);
        if (!same_run) {
          run_start = **start;
          run_starts.emplace_back(**start, no);
        }
      }
      return;
    }
    // The log's last line without its newline (a joined line is a copy: never that).
    const bool cut = IsCutLastLine(text, line);
    std::string_view fields = line.substr(s.at);
    auto field = [&](std::string_view key) {
      Result<std::optional<double>> v = TitanField(fields, key, cut, no, name);
      if (!v.ok()) {
        if (error.ok()) error = v.status();
        return std::optional<double>();
      }
      return *v;
    };
    const int64_t step = *WholeCount(LeadingNumber(fields.substr(6)));
    std::optional<double> loss = field("loss");
    if (loss && *loss < 0 && !s.validate) {
      // A rank without the last pipeline stage: no loss.
      loss.reset();
      ++placeholders;
      if (placeholder_line == 0) placeholder_line = no;
    }
    if (std::optional<double> gib = field("memory"); gib && *gib > peak_gib) peak_gib = *gib;
    if (s.validate) {
      if (!error.ok() || !loss) return;
      if (!log.evals.empty() && log.evals.back().step == step) return;  // another rank's
      log.evals.push_back({step, *loss, no});
      log.eval_what = "torchtitan 'validate step: N  loss: X' (log_validation)";
      return;
    }
    tflops = tflops || FindKeyValue(fields, "tflops", ":") != std::string_view::npos;
    Iteration it;
    it.step = step;
    it.line = no;
    it.loss = loss;
    it.grad_norm = field("grad_norm");
    if (std::optional<double> t = field("tflops")) it.flops_per_device_per_s = *t * 1e12;
    bool na = false;
    if (Result<std::optional<double>> mfu = TitanMfu(fields, cut, no, name, &na); !mfu.ok()) {
      if (error.ok()) error = mfu.status();
    } else {
      it.mfu = *mfu;
    }
    if (na && mfu_lines.na++ == 0) mfu_lines.first_na = no;
    if (it.mfu && *it.mfu > 0) ++mfu_lines.numbers;
    if (it.mfu && *it.mfu > 1 && *it.mfu > mfu_lines.above_one) {
      mfu_lines.above_one = *it.mfu;
      mfu_lines.above_one_line = no;
    }
    if (it.mfu && *it.mfu == 0 && mfu_lines.zeros++ == 0) mfu_lines.first_zero = no;
    std::optional<double> rate = field("tps");
    if (!rate) {
      rate = field("wps");
      if (rate && wps_line == 0) wps_line = no;
    }
    if (!error.ok()) return;
    it.tokens_per_device_per_s = rate;
    if (run_start && !log.iterations.empty() && log.iterations.back().step >= *run_start) {
      // A resumed run: its records replace the earlier run's from its first step on.
      while (!log.iterations.empty() && log.iterations.back().step >= *run_start)
        log.iterations.pop_back();
      ++log.restarts;
    } else if (!log.iterations.empty() && log.iterations.back().step >= step) {
      // Another rank's record of a step already read (ranks print in any order): the first kept,
      // with this one's loss when it had the placeholder.
      ++copies;
      if (copy_line == 0) copy_line = no;
      run_start.reset();
      for (auto kept = log.iterations.rbegin(); kept != log.iterations.rend(); ++kept) {
        if (kept->step != step) continue;
        if (!kept->loss) kept->loss = it.loss;
        break;
      }
      return;
    }
    run_start.reset();
    log.iterations.push_back(it);
  };
  bool failed = false;
  const UnwrappedRead read = ForEachUnwrappedLine(
      text, completion, StartsTitanRecord,
      [&](std::string_view line, int64_t no) {
        read_line(line, no);
        failed = !error.ok();
      },
      &failed);
  log.lines = read.lines;
  BM_TRY(error);
  if (log.iterations.empty()) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}: no torchtitan training lines ('step: N  loss: X  ...  memory: M GiB(P%)  "
                  "tps: T  ...') in {} lines{}{}",
                  name, log.lines,
                  log.evals.empty() ? "" : " (only 'validate step' evaluation lines)",
                  OtherFormatHint(text, "torchtitan"));
  }
  FillSpansFromGaps(log.iterations);
  // The first record of each run spans from the run's first step.
  for (const auto& [start, start_line] : run_starts) {
    for (Iteration& it : log.iterations) {
      if (it.line < start_line || it.step < start) continue;
      it.span = std::min(it.span, it.step - start + 1);
      break;
    }
  }
  // The tokens one device processes per step, from the start-up lines.
  auto fact = [&](const char* n) -> const Fact* {
    auto f = log.facts.find(n);
    return f == log.facts.end() ? nullptr : &f->second;
  };
  const Fact* devices = fact("devices");
  const Fact* gbs = fact("gbs");
  const Fact* seq = fact("mpe");
  std::optional<double> step_tokens;
  std::string tokens_from;
  if (setup.tokens_per_step) {
    step_tokens = setup.tokens_per_step->value;
    tokens_from = fmt::format("{} tokens per train step (line {})", *step_tokens,
                              setup.tokens_per_step->line);
  } else if (gbs && seq) {
    step_tokens = gbs->value * seq->value;
    tokens_from = fmt::format("global batch size {} x sequence length {} (line {})", gbs->value,
                              seq->value, gbs->line);
  }
  if (step_tokens && devices && devices->value > 0) {
    const double per_device = *step_tokens / devices->value;
    for (Iteration& it : log.iterations) {
      if (gbs) it.samples = gbs->value;
      if (it.tokens_per_device_per_s && *it.tokens_per_device_per_s > 0)
        it.ms = per_device / *it.tokens_per_device_per_s * 1000.0;
    }
    log.notes.push_back(fmt::format(
        "{}: time per step = {} tokens per device per step / tps: {} over {} devices (the device "
        "mesh, line {}); each record's tps is the mean since the previous line",
        name, per_device, tokens_from, devices->value, devices->line));
  } else {
    log.notes.push_back(fmt::format(
        "{}: no time per step: the log does not state {} (torchtitan's start-up lines 'Trainer "
        "is initialized with ...' and 'Building ... device mesh ...'); tps read as printed",
        name,
        !step_tokens
            ? (devices ? "the tokens of a step" : "the tokens of a step nor the world size")
            : "the world size"));
    if (gbs)
      for (Iteration& it : log.iterations) it.samples = gbs->value;
  }
  if (wps_line > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: 'wps' lines (torchtitan before November 2024): each record's loss is the mean over "
        "the steps since the previous line",
        name, wps_line));
  } else if (!tflops) {
    log.notes.push_back(fmt::format(
        "{}: each record's loss is its step's (averaged over the data-parallel ranks; torchtitan "
        "since 2fa6d83, January 2025); the lines have no 'tflops' (torchtitan before February "
        "2025, or a fork): from November 2024 to 2fa6d83 a record's loss was the mean over the "
        "steps since the previous line, which the log does not tell",
        name));
  } else {
    log.notes.push_back(fmt::format(
        "{}: each record's loss is its step's (averaged over the data-parallel ranks; torchtitan "
        "since 2fa6d83, January 2025), not a mean over the steps since the previous line",
        name));
  }
  if (read.joined > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} training line(s) hard-wrapped over several lines (a terminal copy or a "
        "wrapped message) read joined",
        name, read.first_joined, read.joined));
  }
  if (placeholders > 0) {
    const auto lossless = std::count_if(log.iterations.begin(), log.iterations.end(),
                                        [](const Iteration& it) { return !it.loss; });
    log.notes.push_back(fmt::format(
        "{}:{}: {} line(s) print a negative loss: pipeline parallelism's placeholder on the ranks "
        "without the last stage (torchtitan prints -1, or -1 summed over the data-parallel "
        "ranks), read as no loss; {}",
        name, placeholder_line, placeholders,
        lossless == 0 ? std::string("every step has another rank's line (the last stage's) with "
                                    "its loss")
                      : fmt::format("{} record(s) have no loss: no last-stage rank's line for "
                                    "their step (LOG_RANK)",
                                    lossless)));
  }
  AddTitanMfuNotes(mfu_lines, name, log.notes);
  if (copies > 0) {
    log.notes.push_back(fmt::format(
        "{}:{}: {} records of steps already read (other ranks' lines) left out: the first "
        "printed is kept",
        name, copy_line, copies));
  }
  if (peak_gib == 0) {
    // The caching allocator's counters were not kept (PYTORCH_NO_CUDA_MEMORY_CACHING, another
    // allocator): nothing measured (pytorch/torchtitan#1437).
    log.notes.push_back(fmt::format(
        "{}: every 'memory:' is 0.00GiB: the device's reserved-memory counter was not kept (no "
        "caching allocator), no peak memory read",
        name));
  } else if (peak_gib > 0) {
    log.peak_memory_bytes = peak_gib * 1024.0 * 1024.0 * 1024.0;
    log.memory_source =
        "torchtitan 'memory: X GiB' (max reserved: reserved_bytes.all.peak, the printing rank's "
        "device)";
  }
  return log;
}

}  // namespace bm::logparse
