// `benchmake explain TARGET...` and `benchmake --debug-key TARGET`.
#include <cstdio>

#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/generate.h"
#include "engine/inspect.h"
#include "engine/plan.h"
#include "engine/target_graph.h"
#include "engine/target_state.h"

namespace bm::cli {
namespace {

Result<std::vector<engine::TargetInspection>> InspectAll(const engine::Workspace& ws) {
  BM_ASSIGN_OR_RETURN(engine::GenerateResult gen, engine::Generate(ws));
  return engine::InspectWorkspace(ws, gen.targets);
}

Result<const engine::TargetInspection*> FindTarget(const engine::Workspace& ws,
                                                   const std::vector<engine::TargetInspection>& all,
                                                   const std::string& name) {
  std::vector<std::string> names;
  for (const engine::TargetInspection& t : all) {
    if (t.name == name) return &t;
    names.push_back(t.name);
  }
  return engine::NoSuchTarget(ws, name, names);
}

}  // namespace

const CommandSpec& ExplainSpec() {
  static const CommandSpec kSpec{
      .name = "explain",
      .operands = "TARGET...",
      .operand_kind = ValueKind::kTarget,
      .min_operands = 1,
      .max_operands = -1,
      .summary = "why a target is (not) up to date, field by field",
      .description =
          "For each TARGET: whether it is up to date, can be restored from the "
          "cache, or must run, and why, parameter by parameter (`param lbs: 4 → 8`, "
          "`input data: output changed`, `platform: H100 → H200`), then when and how "
          "it was last materialized.",
      .examples = {{"benchmake explain pretrain", "what changed since pretrain last ran"}}};
  return kSpec;
}

Status ExplainCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(std::vector<engine::TargetInspection> all, InspectAll(ws));
  for (const std::string& name : args.operands()) {
    BM_ASSIGN_OR_RETURN(const engine::TargetInspection* t, FindTarget(ws, all, name));
    const engine::Staleness& s = t->staleness;
    std::printf("%s: %s\n", t->name.c_str(),
                s.verdict == engine::Verdict::kUpToDate
                    ? "up to date"
                    : std::string(engine::VerdictName(s.verdict)).c_str());
    for (const std::string& r : s.reasons) std::printf("  %s\n", r.c_str());
    BM_ASSIGN_OR_RETURN(std::optional<engine::LastBuild> last, engine::ReadLastBuild(ws, t->name));
    if (last) {
      std::printf("  last materialized %s (%s), key %s\n", last->date.c_str(),
                  last->outcome.c_str(), last->key.Hex().c_str());
    }
  }
  return Status::Ok();
}

const CommandSpec& DebugKeySpec() {
  static const CommandSpec kSpec{
      .name = "debug-key",
      .operands = "TARGET",
      .operand_kind = ValueKind::kTarget,
      .min_operands = 1,
      .max_operands = 1,
      .summary = "print exactly what a target's key hashes",
      .description =
          "Prints every field that enters TARGET's action key, in the order hashed: "
          "the rule and its version, the key parameters, the digest of each input "
          "and, for platform-dependent rules, the platform facts. Also spelled "
          "`benchmake --debug-key TARGET`.",
      .examples = {{"benchmake debug-key pretrain", "the key material of pretrain"}}};
  return kSpec;
}

Status DebugKeyCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(std::vector<engine::TargetInspection> all, InspectAll(ws));
  BM_ASSIGN_OR_RETURN(const engine::TargetInspection* t, FindTarget(ws, all, args.operands()[0]));
  std::printf("# fields hashed for %s: Field(tag, name), Field(\"=\", value) each, XXH3-128\n",
              t->name.c_str());
  std::printf("%s", t->material.DebugString().c_str());
  if (t->staleness.verdict == engine::Verdict::kPending) {
    std::printf("# an input is not built yet (empty value): the key will change when it is\n");
  }
  return Status::Ok();
}

}  // namespace bm::cli
