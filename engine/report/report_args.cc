#include "engine/report/report_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "engine/report/csv.h"
#include "engine/report/html.h"
#include "engine/report/json_report.h"
#include "engine/report/markdown.h"
#include "engine/report/report_table.h"

namespace bm::report {

using cli::CommandSpec;
using cli::FlagSpec;
using cli::ParsedArgs;
using cli::ValueKind;

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Format FormatNamed(const std::string& value) {
  if (value == "json") return Format::kJson;
  if (value == "csv") return Format::kCsv;
  if (value == "html") return Format::kHtml;
  return Format::kMarkdown;
}

Format FormatFromExtension(const std::string& path) {
  if (EndsWith(path, ".json")) return Format::kJson;
  if (EndsWith(path, ".csv")) return Format::kCsv;
  if (EndsWith(path, ".html") || EndsWith(path, ".htm")) return Format::kHtml;
  return Format::kMarkdown;
}

FlagSpec OutputFlag() {
  return {.name = "--output",
          .short_name = "-o",
          .value_name = "FILE",
          .kind = ValueKind::kFile,
          .help = "write to FILE, atomically (never half a report)",
          .default_text = "stdout"};
}

Result<int64_t> ParseInt(const std::string& flag, const std::string& v, int64_t min) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size() || out < min) {
    return Errorf(ErrorCode::kInvalidArgument, "{} wants an integer >= {}, not '{}'", flag, min, v);
  }
  return out;
}

}  // namespace

const CommandSpec& ReportSpec() {
  static const CommandSpec kSpec{
      .name = "report",
      .operands = "[TARGET|NAME@WHERE|PATH...]",
      .operand_kind = ValueKind::kTarget,
      .max_operands = -1,
      .summary = "the measurements as the suites' tables, or HTML with plots",
      .description =
          "Tables of the measured targets: token/p/s, loss, memory, MFU (6N and PaLM), "
          "evaluation results, rounds, and where each number comes from (docs/REPORTS.md).\n\n"
          "Without an operand: every measured target, in BENCHFILE order. TARGET: its "
          "measurements. NAME@WHERE: the newest cached measurement of NAME whose device, host "
          "or key contains WHERE (the same target on another platform). PATH (contains '/' or "
          "ends in .json): a run directory or metrics.json from elsewhere.",
      .flags = {{.name = "--format",
                 .value_name = "FORMAT",
                 .kind = ValueKind::kChoice,
                 .help = "md (tables), json, csv or html (one file with charts)",
                 .default_text = "from -o's extension, else md",
                 .choices = {"md", "json", "csv", "html"}},
                OutputFlag()},
      .examples = {{"benchmake report", "every measured target as Markdown tables"},
                   {"benchmake report -o report.html", "the HTML report with loss curves"},
                   {"benchmake report pretrain@H100 pretrain@H200",
                    "one target measured on two platforms"}}};
  return kSpec;
}

const CommandSpec& CompareSpec() {
  static const AlignmentOptions kDefaults;
  static const CommandSpec kSpec{
      .name = "compare",
      .operands = "A B",
      .operand_kind = ValueKind::kTarget,
      .min_operands = 2,
      .max_operands = 2,
      .summary = "metric deltas and loss alignment of two runs",
      .description =
          "Compares run B (the candidate) with run A (the reference); each is a target, "
          "NAME@WHERE or a path, as for `benchmake report`. Prints both runs' metrics with "
          "B - A and (B - A) / A, the settings and platform facts that differ, and the loss "
          "alignment as the suites check it: from --from-step on, the mean of |loss_B - "
          "loss_A| / loss_A below --tolerance.\n\n"
          "The exit status is the verdict: 0 aligned, 1 not aligned or not checkable.",
      .flags = {{.name = "--from-step",
                 .value_name = "N",
                 .kind = ValueKind::kNumber,
                 .help = "the first step the alignment counts",
                 .default_text = fmt::format("{}", kDefaults.from_step)},
                {.name = "--tolerance",
                 .value_name = "PCT",
                 .kind = ValueKind::kText,
                 .help = "the largest mean relative loss difference, in percent (2, 2%, 0.5)",
                 .default_text = fmt::format("{}%", kDefaults.tolerance * 100)},
                {.name = "--worst",
                 .value_name = "K",
                 .kind = ValueKind::kNumber,
                 .help = "list the K steps that differ most",
                 .default_text = fmt::format("{}", kDefaults.worst)},
                {.name = "--format",
                 .value_name = "FORMAT",
                 .kind = ValueKind::kChoice,
                 .help = "md or json",
                 .default_text = "from -o's extension, else md",
                 .choices = {"md", "json"}},
                {.name = "--no-alignment",
                 .help = "print the deltas only and exit 0, whatever the loss curves say"},
                OutputFlag()},
      .examples = {{"benchmake compare pretrain@H100 pretrain@H200",
                    "is the H200 run aligned with the H100 one?"},
                   {"benchmake compare a b --tolerance 1 -o diff.json", "stricter, as JSON"}}};
  return kSpec;
}

bool IsPathSelector(const std::string& s) {
  return s.find('/') != std::string::npos || EndsWith(s, ".json");
}

Result<ReportArgs> ReportArgsFrom(const ParsedArgs& args) {
  ReportArgs r;
  r.selectors = args.operands();
  r.output = args.ValueOr("--output", "");
  std::optional<std::string> format = args.Value("--format");
  r.format = format ? FormatNamed(*format) : FormatFromExtension(r.output);
  return r;
}

Result<CompareArgs> CompareArgsFrom(const ParsedArgs& args) {
  CompareArgs c;
  c.a = args.operands().at(0);
  c.b = args.operands().at(1);
  c.output = args.ValueOr("--output", "");
  c.check_alignment = !args.Has("--no-alignment");
  std::optional<std::string> format = args.Value("--format");
  c.format = format ? FormatNamed(*format)
                    : (EndsWith(c.output, ".json") ? Format::kJson : Format::kMarkdown);
  if (std::optional<std::string> v = args.Value("--from-step")) {
    BM_ASSIGN_OR_RETURN(c.alignment.from_step, ParseInt("--from-step", *v, 0));
  }
  if (std::optional<std::string> v = args.Value("--worst")) {
    BM_ASSIGN_OR_RETURN(int64_t worst, ParseInt("--worst", *v, 0));
    c.alignment.worst = static_cast<int>(std::min<int64_t>(worst, 1000000));
  }
  if (std::optional<std::string> v = args.Value("--tolerance")) {
    std::string t = *v;
    if (!t.empty() && t.back() == '%') t.pop_back();
    double pct = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), pct);
    if (ec != std::errc() || p != t.data() + t.size() || !(pct > 0) || !std::isfinite(pct)) {
      return Errorf(ErrorCode::kInvalidArgument,
                    "--tolerance wants a positive percentage such as 2 or 2%, not '{}'", *v);
    }
    c.alignment.tolerance = pct / 100;
  }
  return c;
}

Result<ReportArgs> ParseReportArgs(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(ParsedArgs parsed, cli::ParseCommandLine(ReportSpec(), args));
  return ReportArgsFrom(parsed);
}

Result<CompareArgs> ParseCompareArgs(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(ParsedArgs parsed, cli::ParseCommandLine(CompareSpec(), args));
  return CompareArgsFrom(parsed);
}

std::string RenderReport(Format format, const std::vector<MeasuredTarget>& targets) {
  switch (format) {
    case Format::kJson:
      return RenderJson(BuildRows(targets));
    case Format::kCsv:
      return RenderCsv(BuildRows(targets));
    case Format::kHtml:
      return RenderHtml(targets);
    case Format::kMarkdown:
      break;
  }
  return RenderMarkdown(BuildRows(targets));
}

}  // namespace bm::report
