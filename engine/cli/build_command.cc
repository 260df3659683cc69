// `benchmake build` and `benchmake step` (the command each ninja edge runs).
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "engine/build.h"
#include "engine/cli/commands.h"
#include "engine/cli/flags.h"
#include "engine/step.h"

namespace bm::engine::cli {

Status BuildCommand(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(CommonFlags flags, ParseCommonFlags(args));
  BuildOptions options;
  const std::vector<std::string>& a = flags.rest;
  for (size_t i = 0; i < a.size(); ++i) {
    auto value = [&](const std::string& flag) -> Result<int> {
      if (i + 1 >= a.size()) return Errorf(ErrorCode::kInvalidArgument, "{} needs a value", flag);
      return ParseIntFlag(flag, a[++i]);
    };
    if (a[i] == "-j") {
      BM_ASSIGN_OR_RETURN(options.jobs, value("-j"));
    } else if (a[i].rfind("-j", 0) == 0 && a[i].size() > 2) {
      BM_ASSIGN_OR_RETURN(options.jobs, ParseIntFlag("-j", a[i].substr(2)));
    } else if (a[i] == "-k") {
      BM_ASSIGN_OR_RETURN(options.keep_going, value("-k"));
    } else if (a[i] == "-n") {
      options.dry_run = true;
    } else if (a[i] == "--remeasure") {
      options.remeasure = true;
    } else if (!a[i].empty() && a[i][0] == '-') {
      return Errorf(ErrorCode::kInvalidArgument, "unknown flag '{}' for build", a[i]);
    } else {
      options.targets.push_back(a[i]);
    }
  }
  if (options.remeasure && options.targets.empty()) {
    return Errorf(ErrorCode::kInvalidArgument,
                  "--remeasure needs the targets to measure again: build --remeasure TARGET...");
  }
  BM_ASSIGN_OR_RETURN(Workspace ws, OpenWorkspaceFromFlags(flags));
  return BuildWithNinja(ws, options);
}

Status StepCommand(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(CommonFlags flags, ParseCommonFlags(args));
  StepOptions options;
  auto remeasure = std::find(flags.rest.begin(), flags.rest.end(), "--remeasure");
  if (remeasure != flags.rest.end()) {
    options.remeasure = true;
    flags.rest.erase(remeasure);
  }
  if (flags.rest.size() != 1)
    return Errorf(ErrorCode::kInvalidArgument, "usage: benchmake step TARGET [--remeasure]");
  BM_ASSIGN_OR_RETURN(Workspace ws, OpenWorkspaceFromFlags(flags));
  options.interactive = ::isatty(1) || ::isatty(2);
  options.console = &std::cout;
  BM_ASSIGN_OR_RETURN(StepReport report, RunStep(ws, flags.rest[0], options));
  (void)report;
  return Status::Ok();
}

}  // namespace bm::engine::cli
