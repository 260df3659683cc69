#include "rules/logparse/deepspeed_flops_profile.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "rules/logparse/line_scan.h"

namespace bm::logparse {
namespace {

constexpr std::string_view kProfileHeader = "DeepSpeed Flops Profiler ---";
constexpr std::string_view kProfileEnd = "Aggregated Profile per ";
constexpr int64_t kProfileMaxLines = 40;  // the summary is about 30 lines

// The text after `label` where the label begins the line's text: after a prefix (srun's `0: `, a
// host's `10.254.21.77: `, `> `, spaces) or another rank's field glued before it, but not inside
// another label ("/ iter latency:" in the FLOPS line).
std::optional<std::string_view> ProfileField(std::string_view line, std::string_view label) {
  const size_t at = line.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view before = Trim(line.substr(0, at));
  if (!before.empty()) {
    const char c = before.back();
    if (c == '/' || c == '*' || c == '=' || std::isalnum(static_cast<unsigned char>(c)))
      return std::nullopt;
  }
  return Trim(line.substr(at + label.size()));
}

}  // namespace

Result<bool> FlopsProfileReader::Read(std::string_view line, int64_t line_no,
                                      std::string_view name) {
  if (line.find(kProfileHeader) != std::string_view::npos) {
    header_line_ = line_no;
    inside_ = true;
    lines_in_ = 0;
    ++summaries_;
  }
  if (!inside_) return false;
  if (++lines_in_ > kProfileMaxLines || line.find(kProfileEnd) != std::string_view::npos) {
    inside_ = false;
    return line.find(kProfileEnd) != std::string_view::npos;
  }
  bool field = line_no == header_line_;
  auto bad = [&](std::string_view what, std::string_view value) {
    return Errorf(ErrorCode::kCorrupt,
                  "{}:{}: DeepSpeed flops profiler summary: '{}' is not {} (number_to_string's "
                  "'2.35 TFLOPS', '487.61 ms', '382.64 G')",
                  name, line_no, value, what);
  };
  // Each field: its label, the unit its value carries, where it goes.
  struct Spec {
    std::string_view label;
    std::string_view unit;
    std::optional<Field>* into;
    bool positive;  // a latency or rate: a value <= 0 is no figure
  };
  const Spec specs[] = {
      {"world size:", "", &world_, false},
      {"batch size per GPU:", "", &batch_, false},
      {"batch size per device:", "", &batch_, false},
      {"fwd flops per GPU:", "", &fwd_flops_, false},
      {"fwd flops per device:", "", &fwd_flops_, false},
      {"iter latency:", "s", &iter_s_, true},
      {"samples/second:", "", &samples_, true},
  };
  if (std::optional<std::string_view> v = ProfileField(line, "Profile Summary at step ")) {
    field = true;
    std::optional<int64_t> n = WholeCount(LeadingNumber(*v));
    if (!n) return bad("a step", v->substr(0, v->find(':')));
    if (!step_) step_ = Field{static_cast<double>(*n), line_no};
  }
  for (const Spec& s : specs) {
    std::optional<std::string_view> v = ProfileField(line, s.label);
    if (!v) continue;
    field = true;
    const std::string_view text = v->substr(0, v->find("  "));
    std::optional<double> x = SiValue(text, s.unit);
    if (!x) return bad(s.unit == "s" ? "a duration" : "a number", text);
    if (s.positive && !(*x > 0 && std::isfinite(*x))) {
      if (not_positive_line_ == 0) not_positive_line_ = line_no;
      continue;
    }
    if (!*s.into) *s.into = Field{*x, line_no};
  }
  // "FLOPS per GPU = 3 * fwd flops per GPU / iter latency:", not the fwd, bwd or fwd+bwd lines.
  for (std::string_view per : {"FLOPS per GPU = ", "FLOPS per device = "}) {
    const size_t at = line.find(per);
    if (at == std::string_view::npos) continue;
    const std::string_view before = line.substr(0, at);
    if (before.ends_with("fwd ") || before.ends_with("bwd ")) continue;
    const size_t colon = line.find(':', at);
    if (colon == std::string_view::npos ||
        line.substr(at, colon - at).find("/ iter latency") == std::string_view::npos)
      continue;
    field = true;
    std::string_view text = Trim(line.substr(colon + 1));
    text = text.substr(0, text.find("  "));
    std::optional<double> x = SiValue(text, "FLOPS");
    if (!x) return bad("a rate", text);
    if (!(*x > 0 && std::isfinite(*x))) {
      if (not_positive_line_ == 0) not_positive_line_ = line_no;
    } else if (!flops_) {
      flops_ = Field{*x, line_no};
      flops_label_ = std::string(Trim(line.substr(at + per.size(), colon - at - per.size())));
    }
  }
  return field;
}

void FlopsProfileReader::Report(std::string_view name, ParsedLog& log) const {
  if (summaries_ == 0) return;
  const std::string step = step_ ? fmt::format("at step {} ", step_->value) : std::string();
  if (!flops_) {
    log.notes.push_back(fmt::format(
        "{}:{}: DeepSpeed's flops profiler summary {}prints no whole-iteration FLOPS line "
        "('FLOPS per GPU = 3 * fwd flops per GPU / iter latency': DeepSpeed before 0.4.0, or the "
        "profiler run without the engine's timers){}: no FLOPS figure read",
        name, header_line_, step,
        not_positive_line_ ? fmt::format("; line {} prints a latency or rate that is not "
                                         "positive (timers that did not time the step)",
                                         not_positive_line_)
                           : std::string()));
    return;
  }
  log.stated_flops_per_device = Fact{flops_->value, flops_->line};
  std::string rest;
  if (iter_s_) rest += fmt::format(", its iter latency {:g} ms", iter_s_->value * 1000.0);
  if (samples_) {
    rest += fmt::format(", samples/second {:g}", samples_->value);
    if (batch_ && world_)
      rest += fmt::format(
          " (batch size per GPU {:g} x world size {:g} / iter latency, model-"
          "parallel ranks counted)",
          batch_->value, world_->value);
  }
  log.notes.push_back(fmt::format(
      "{}:{}: DeepSpeed's flops profiler {}(line {}): {:g} TFLOP/s per GPU = {}{}: one "
      "micro-batch on rank 0, its forward flops as the profiler's hooks count them over its "
      "forward, backward and step() time",
      name, flops_->line, step, header_line_, flops_->value / 1e12, flops_label_, rest));
}

}  // namespace bm::logparse
