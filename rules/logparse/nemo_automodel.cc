#include "rules/logparse/nemo_automodel.h"

#include <fmt/format.h>

#include <algorithm>

#include "rules/logparse/line_kinds.h"
#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

// The value of a `key value` field ("loss 0.6974"; "mem: 11.66 GiB" before e557448, August
// 2025), or nullopt when the field is another key's. *colon: whether the key had a colon.
std::optional<std::string_view> AutomodelField(std::string_view field, std::string_view key,
                                               bool* colon) {
  field = Trim(field);
  if (!field.starts_with(key) || field.size() <= key.size()) return std::nullopt;
  std::string_view rest = field.substr(key.size());
  *colon = rest.starts_with(": ");
  if (*colon) rest.remove_prefix(1);
  if (!rest.starts_with(' ')) return std::nullopt;
  return Trim(rest);
}

int64_t AutomodelGcd(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t r = a % b;
    a = b;
    b = r;
  }
  return a < 0 ? -a : a;
}

}  // namespace

Result<std::optional<AutomodelLine>> ReadAutomodelLine(std::string_view line, int64_t no,
                                                       std::string_view name, bool cut) {
  // The fields from "step N | epoch E | loss X", after any logger prefix.
  size_t at = line.find("step ");
  while (at != std::string_view::npos) {
    // After a space, or after the `INFO:root:` of Python's default logging format.
    const bool starts = at == 0 || line[at - 1] == ' ' || line[at - 1] == ':';
    if (starts) {
      std::string_view rest = line.substr(at + 5);
      size_t end = 0;
      // Automodel prints "step 9 | epoch 0"; a page may align it ("step 0  | epoch 0").
      if (LeadingNumber(rest, &end) && rest.substr(SkipSpaces(rest, end)).starts_with("| epoch ") &&
          rest.find(" | loss ") != std::string_view::npos)
        break;
    }
    at = line.find("step ", at + 1);
  }
  if (at == std::string_view::npos) return std::optional<AutomodelLine>();
  AutomodelLine out;
  out.it.line = no;
  // `[val] name "default" | step` (train_ft since f6ff70d, November 2025), `[val] NAME | step`
  // (the KD recipes), `[val] step` (before; the VLM recipes).
  constexpr std::string_view kVal = "[val] ";
  if (size_t v = line.rfind(kVal, at); v != std::string_view::npos) {
    out.val = true;
    std::string_view named = line.substr(v + kVal.size(), at - v - kVal.size());
    if (named.starts_with("name \"")) {
      named.remove_prefix(6);
      named = named.substr(0, named.find('"'));
    } else {
      named = Trim(named);
      if (named.ends_with('|')) named = Trim(named.substr(0, named.size() - 1));
    }
    out.val_name = NoteText(named);
  }
  std::string_view fields = line.substr(at);
  bool have_step = false;
  while (!fields.empty()) {
    size_t bar = fields.find(" | ");
    if (bar == std::string_view::npos && cut) break;  // the cut-off last field
    std::string_view field = fields.substr(0, bar);
    fields = bar == std::string_view::npos ? std::string_view() : fields.substr(bar + 3);
    struct Key {
      std::string_view key;
      std::optional<double>* target;
    };
    std::optional<double> step, tps, mem;
    const Key keys[] = {
        {"step", &step},    {"loss", &out.it.loss}, {"grad_norm", &out.it.grad_norm},
        {"lr", &out.it.lr}, {"mem", &mem},          {"tps", &tps}};
    for (const Key& k : keys) {
      bool colon = false;
      std::optional<std::string_view> value = AutomodelField(field, k.key, &colon);
      if (!value) continue;
      if (colon && k.key == "mem") out.mem_colon = true;
      size_t end = 0;
      std::optional<double> v = LeadingNumber(*value, &end);
      std::string_view unit = v ? Trim(value->substr(end)) : *value;
      // mem: "24.90 GiB"; tps: "11278.56(1409.82/gpu)"; others end with the number. The docs'
      // agent SFT guide shows `tps 210.68/gpu` (the per-GPU figure alone, no code prints it):
      // no total rate, nothing read.
      const bool per_gpu_only = k.key == "tps" && unit == "/gpu";
      const bool ok = v && (unit.empty() || (k.key == "mem" && unit == "GiB") || per_gpu_only ||
                            (k.key == "tps" && unit.starts_with('(') && unit.ends_with("/gpu)")));
      if (!ok) {
        return Errorf(ErrorCode::kCorrupt, "{}:{}: NeMo Automodel's '{}' is '{}', not a number",
                      name, no, k.key, *value);
      }
      if (!per_gpu_only) *k.target = v;
    }
    if (step && !WholeCount(*step)) {
      return Errorf(ErrorCode::kCorrupt, "{}:{}: NeMo Automodel's 'step' is {}, not a step", name,
                    no, *step);
    }
    if (step) {
      out.printed_step = *WholeCount(*step);
      have_step = true;
    }
    if (tps) out.it.tokens_per_s = tps;
    if (mem) out.mem_gib = mem;
  }
  if (!have_step) return std::optional<AutomodelLine>();
  out.it.step = out.printed_step + 1;
  return std::optional<AutomodelLine>(std::move(out));
}

bool IsNemoAutomodelLine(std::string_view line) {
  Result<std::optional<AutomodelLine>> a = ReadAutomodelLine(line, 0, "", false);
  return !a.ok() || (a->has_value() && !(*a)->val);
}

Result<bool> AutomodelReader::Read(std::string_view line, int64_t no, std::string_view name,
                                   bool cut, ParsedLog& log) {
  if (line.ends_with("| Step scheduler:")) {
    if (block_line_ == 0) block_line_ = no;
    return true;
  }
  BM_ASSIGN_OR_RETURN(std::optional<AutomodelLine> a, ReadAutomodelLine(line, no, name, cut));
  if (!a) return false;
  if (first_line_ == 0) first_line_ = no;
  step0_ = step0_ || a->printed_step == 0;
  if (a->mem_colon && micro_line_ == 0) micro_line_ = no;
  if (a->mem_gib && *a->mem_gib > peak_gib_) peak_gib_ = *a->mem_gib;
  if (!a->val) {
    if (block_line_ > 0 && !first_after_block_) first_after_block_ = a->printed_step;
    lines_.push_back(no);
    printed_.push_back(a->printed_step);
    AddIteration(log.iterations, a->it, &log.restarts);
  } else if (a->it.loss && (val_name_.empty() || val_name_ == a->val_name)) {
    val_name_ = a->val_name;
    log.evals.push_back({a->it.step, *a->it.loss, no});
    log.eval_what =
        val_name_.empty()
            ? std::string("NeMo Automodel '[val] step N | ... | loss X'")
            : fmt::format("NeMo Automodel '[val] ... | loss X' (validation set \"{}\")", val_name_);
  }
  return true;
}

void AutomodelReader::Finish(ParsedLog& log, std::string_view name) const {
  if (first_line_ == 0) return;
  // Before e557448 (`mem:` with a colon) the printed step counted micro-batches from 1 and a line
  // came at each optimizer step: the accumulation steps are the lines' common spacing.
  int64_t accumulation = 0;
  if (micro_line_ > 0 && printed_.size() > 1) {
    for (size_t i = 0; i < printed_.size(); ++i) {
      accumulation = AutomodelGcd(accumulation, printed_[i]);
      if (i > 0) accumulation = AutomodelGcd(accumulation, printed_[i] - printed_[i - 1]);
    }
  }
  const bool micro = accumulation > 0;
  // Counting from 1: the micro-batch era (one line: its spacing unknown), or the first line after
  // the `Step scheduler:` block is step 1.
  const bool from_one = !micro && (micro_line_ > 0 || (!step0_ && first_after_block_ == 1));
  auto step_of = [&](int64_t read_step) {  // read_step = printed + 1
    if (micro) return (read_step - 1) / accumulation;
    return from_one ? read_step - 1 : read_step;
  };
  for (Iteration& it : log.iterations) {
    if (!std::binary_search(lines_.begin(), lines_.end(), it.line)) continue;
    it.span = 1;  // a line is one step's values, whatever lines a page left out
    it.step = step_of(it.step);
  }
  for (EvalPoint& e : log.evals) e.step = step_of(e.step);
  if (!log.peak_memory_bytes && peak_gib_ >= 0) {
    log.peak_memory_bytes = peak_gib_ * 1024.0 * 1024.0 * 1024.0;
    log.memory_source =
        "NeMo Automodel 'mem' (torch.cuda.max_memory_allocated of the main rank, GiB: allocated, "
        "not reserved)";
  }
  std::string steps;
  if (micro) {
    steps = fmt::format(
        "step = the printed step / {}: the log prints 'mem:' (line {}), Automodel before "
        "e557448 (August 2025), whose step counted micro-batches; {} is the spacing of its lines "
        "(the gradient accumulation steps)",
        accumulation, micro_line_, accumulation);
  } else if (micro_line_ > 0) {
    steps =
        "step = the printed step; the log prints 'mem:' (Automodel before e557448, August 2025, "
        "whose step counted micro-batches from 1), but has one line only: the accumulation steps "
        "are not known, the step is the micro-batch count (the optimizer step without "
        "accumulation)";
  } else if (from_one) {
    steps = fmt::format(
        "step = the printed step (the first after the 'Step scheduler:' block, line {}, is 1: "
        "Automodel between e557448, August 2025, and ebd03b0, October 2025, counted from 1)",
        block_line_);
  } else if (step0_) {
    steps = "step = the printed step + 1 (the log's step 0 shows its count from 0)";
  } else {
    steps =
        "step = the printed step + 1 (Automodel's StepScheduler counts from 0 since ebd03b0, "
        "October 2025; from August to October 2025 it counted from 1, which this log does not "
        "show: such a log reads one step high)";
  }
  log.notes.push_back(fmt::format(
      "{}:{}: NeMo Automodel lines, each one step's values (span 1): {}; tps is the step's tokens "
      "on all ranks / its time, read as "
      "printed (the tokens of a step are not printed: no time per step; '/gpu' divides by DP x "
      "CP only, not read as per device)",
      name, first_line_, steps));
}

}  // namespace bm::logparse
