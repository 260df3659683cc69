// `benchmake status` and `benchmake graph`.
#include <cstdio>

#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/generate.h"
#include "engine/inspect.h"

namespace bm::cli {

const CommandSpec& StatusSpec() {
  static const CommandSpec kSpec{
      .name = "status",
      .summary = "every target and its state",
      .description =
          "One line per target of the BENCHFILE: up to date, restorable from the "
          "cache, or to run, with the first reason; then how many are not up to "
          "date. Runs nothing.",
      .examples = {{"benchmake status", "what a build would do"}}};
  return kSpec;
}

Status StatusCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(engine::GenerateResult gen, engine::Generate(ws));
  BM_ASSIGN_OR_RETURN(std::vector<engine::TargetInspection> all,
                      engine::InspectWorkspace(ws, gen.targets));
  size_t width = 6;
  for (const engine::TargetInspection& t : all) width = std::max(width, t.name.size());
  int stale = 0;
  for (const engine::TargetInspection& t : all) {
    const engine::Staleness& s = t.staleness;
    stale += s.verdict != engine::Verdict::kUpToDate;
    std::string why = s.reasons.empty()
                          ? ""
                          : "  (" + s.reasons.front() + (s.reasons.size() > 1 ? ", ..." : "") + ")";
    std::printf("%-*s  %-18s%s\n", static_cast<int>(width), t.name.c_str(),
                std::string(engine::VerdictName(s.verdict)).c_str(), why.c_str());
  }
  std::printf("%zu targets, %d not up to date\n", all.size(), stale);
  return Status::Ok();
}

const CommandSpec& GraphSpec() {
  static const CommandSpec kSpec{
      .name = "graph",
      .summary = "the target graph as Graphviz dot",
      .description =
          "Prints the targets and their dependencies in Graphviz's dot language: "
          "up-to-date targets green, restorable ones blue, stale ones red.",
      .examples = {{"benchmake graph | dot -Tsvg > graph.svg", "draw it"}}};
  return kSpec;
}

Status GraphCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(engine::GenerateResult gen, engine::Generate(ws));
  BM_ASSIGN_OR_RETURN(std::vector<engine::TargetInspection> all,
                      engine::InspectWorkspace(ws, gen.targets));
  std::printf("digraph benchmake {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n");
  for (const engine::TargetInspection& t : all) {
    const char* color = t.staleness.verdict == engine::Verdict::kUpToDate  ? "darkgreen"
                        : t.staleness.verdict == engine::Verdict::kRestore ? "blue"
                                                                           : "red";
    std::printf("  \"%s\" [label=\"%s\\n(%s)\", color=%s];\n", t.name.c_str(), t.name.c_str(),
                t.rule.c_str(), color);
    for (const std::string& up : t.upstream)
      std::printf("  \"%s\" -> \"%s\";\n", up.c_str(), t.name.c_str());
  }
  std::printf("}\n");
  return Status::Ok();
}

}  // namespace bm::cli
