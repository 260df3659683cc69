// `benchmake explain TARGET...` and `benchmake --debug-key TARGET`.
#include <cstdio>

#include "engine/cli/commands.h"
#include "engine/cli/flags.h"
#include "engine/generate.h"
#include "engine/inspect.h"
#include "engine/target_graph.h"
#include "engine/target_state.h"

namespace bm::engine::cli {
namespace {

Result<std::vector<TargetInspection>> InspectAll(const Workspace& ws) {
  BM_ASSIGN_OR_RETURN(GenerateResult gen, Generate(ws));
  return InspectWorkspace(ws, gen.targets);
}

Result<const TargetInspection*> FindTarget(const std::vector<TargetInspection>& all,
                                           const std::string& name) {
  std::vector<std::string> names;
  for (const TargetInspection& t : all) {
    if (t.name == name) return &t;
    names.push_back(t.name);
  }
  std::string near = NearestName(name, names);
  return Errorf(ErrorCode::kInvalidArgument, "no target '{}'{}", name,
                near.empty() ? "" : " (did you mean '" + near + "'?)");
}

}  // namespace

Status ExplainCommand(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(CommonFlags flags, ParseCommonFlags(args));
  if (flags.rest.empty())
    return Errorf(ErrorCode::kInvalidArgument, "usage: benchmake explain TARGET...");
  BM_ASSIGN_OR_RETURN(Workspace ws, OpenWorkspaceFromFlags(flags));
  BM_ASSIGN_OR_RETURN(std::vector<TargetInspection> all, InspectAll(ws));
  for (const std::string& name : flags.rest) {
    BM_ASSIGN_OR_RETURN(const TargetInspection* t, FindTarget(all, name));
    const Staleness& s = t->staleness;
    std::printf("%s: %s\n", t->name.c_str(),
                s.verdict == Verdict::kUpToDate ? "up to date"
                                                : std::string(VerdictName(s.verdict)).c_str());
    for (const std::string& r : s.reasons) std::printf("  %s\n", r.c_str());
    BM_ASSIGN_OR_RETURN(std::optional<LastBuild> last, ReadLastBuild(ws, t->name));
    if (last) {
      std::printf("  last materialized %s (%s), key %s\n", last->date.c_str(),
                  last->outcome.c_str(), last->key.Hex().c_str());
    }
  }
  return Status::Ok();
}

Status DebugKeyCommand(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(CommonFlags flags, ParseCommonFlags(args));
  if (flags.rest.size() != 1)
    return Errorf(ErrorCode::kInvalidArgument, "usage: benchmake --debug-key TARGET");
  BM_ASSIGN_OR_RETURN(Workspace ws, OpenWorkspaceFromFlags(flags));
  BM_ASSIGN_OR_RETURN(std::vector<TargetInspection> all, InspectAll(ws));
  BM_ASSIGN_OR_RETURN(const TargetInspection* t, FindTarget(all, flags.rest[0]));
  std::printf("# fields hashed for %s: Field(tag, name), Field(\"=\", value) each, XXH3-128\n",
              t->name.c_str());
  std::printf("%s", t->material.DebugString().c_str());
  if (t->staleness.verdict == Verdict::kPending) {
    std::printf("# an input is not built yet (empty value): the key will change when it is\n");
  }
  return Status::Ok();
}

}  // namespace bm::engine::cli
