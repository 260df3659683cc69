// Command-line arguments of `benchmake report` and `benchmake compare`: their
// tables (base/cli/flag_table.h; help, completion and the man page come
// from them), parsed into plain values (the CLI in cli/ stays thin),
// and the dispatch from a format to its renderer.
//
//   report [SEL...] [--format md|json|csv|html] [-o FILE]
//   compare A B [--from-step N] [--tolerance PCT] [--worst K]
//               [--format md|json] [--no-alignment] [-o FILE]
//
// A selector SEL (and A, B) is a target name, NAME@WHERE (the newest cached
// measurement of NAME whose device, host or key matches WHERE), or a path to a
// run directory or metrics.json (it contains '/' or ends in ".json").
// Without --format, -o's extension picks it (.md .json .csv .html), else md.
// --tolerance is in percent: "2", "2%" and "0.5" mean 2%, 2%, 0.5%.
//
// Errors: kInvalidArgument naming the flag or the operands at fault.
#pragma once

#include <string>
#include <vector>

#include "base/cli/flag_table.h"
#include "base/result.h"
#include "engine/report/loss_alignment.h"
#include "engine/report/measurement.h"

namespace bm::report {

enum class Format { kMarkdown, kJson, kCsv, kHtml };

struct ReportArgs {
  std::vector<std::string> selectors;  // empty: every measured target
  Format format = Format::kMarkdown;
  std::string output;  // "" = stdout
};

struct CompareArgs {
  std::string a;
  std::string b;
  AlignmentOptions alignment;
  Format format = Format::kMarkdown;  // kMarkdown or kJson
  bool check_alignment = true;        // --no-alignment: deltas only, exit 0
  std::string output;
};

const cli::CommandSpec& ReportSpec();
const cli::CommandSpec& CompareSpec();

// From arguments parsed with ReportSpec() / CompareSpec().
Result<ReportArgs> ReportArgsFrom(const cli::ParsedArgs& args);
Result<CompareArgs> CompareArgsFrom(const cli::ParsedArgs& args);

// The words after the command name, through the table, then the above.
Result<ReportArgs> ParseReportArgs(const std::vector<std::string>& args);
Result<CompareArgs> ParseCompareArgs(const std::vector<std::string>& args);

// A selector that names files rather than a target.
bool IsPathSelector(const std::string& selector);

// The report of `targets` in `format`.
std::string RenderReport(Format format, const std::vector<MeasuredTarget>& targets);

}  // namespace bm::report
