// `benchmake report` and `benchmake compare`: argument parsing, rendering and
// the measured targets all live in engine/report/; this file only wires them
// to the workspace, stdout and -o.
#include <unistd.h>

#include <cstdio>

#include "base/real_filesystem.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/report/compare.h"
#include "engine/report/report_args.h"
#include "engine/report/workspace_results.h"

namespace bm::cli {
namespace {

bool NeedsWorkspace(const std::vector<std::string>& selectors) {
  if (selectors.empty()) return true;
  for (const std::string& s : selectors)
    if (!report::IsPathSelector(s)) return true;
  return false;
}

Result<std::vector<report::MeasuredTarget>> Collect(const ParsedArgs& args,
                                                    const std::vector<std::string>& selectors) {
  std::vector<std::string> notes;
  Result<std::vector<report::MeasuredTarget>> out =
      [&]() -> Result<std::vector<report::MeasuredTarget>> {
    if (!NeedsWorkspace(selectors)) return report::CollectMeasured(nullptr, selectors, notes);
    BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
    return report::CollectMeasured(&ws, selectors, notes);
  }();
  std::string note = Styled("note:", Style::kNote, UseColor(args.color(), STDERR_FILENO));
  for (const std::string& n : notes)
    std::fprintf(stderr, "benchmake: %s %s\n", note.c_str(), n.c_str());
  return out;
}

// stdout, or the file atomically (never half-written).
Status Emit(const std::string& output, const std::string& text) {
  if (output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  return DiskFilesystem().WriteFileAtomic(output, text).WithContext("writing " + output);
}

}  // namespace

Status ReportCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(report::ReportArgs ra, report::ReportArgsFrom(args));
  BM_ASSIGN_OR_RETURN(std::vector<report::MeasuredTarget> targets, Collect(args, ra.selectors));
  return Emit(ra.output, report::RenderReport(ra.format, targets));
}

Status CompareCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(report::CompareArgs ca, report::CompareArgsFrom(args));
  BM_ASSIGN_OR_RETURN(std::vector<report::MeasuredTarget> two, Collect(args, {ca.a, ca.b}));
  report::Comparison c = report::Compare(two[0], two[1], ca.alignment);
  BM_TRY(Emit(ca.output, ca.format == report::Format::kJson ? report::RenderComparisonJson(c)
                                                            : report::RenderComparisonMarkdown(c)));
  if (!ca.check_alignment || c.aligned()) return Status::Ok();
  // The exit code is the verdict: 1 when the loss curves are not aligned.
  return Status(ErrorCode::kFailed, c.Verdict());
}

}  // namespace bm::cli
