#include "engine/plan.h"

#include <algorithm>
#include <deque>
#include <map>

#include "base/nearest_name.h"
#include "engine/generate.h"
#include "engine/target_state.h"

namespace bm::engine {

Status NoSuchTarget(const Workspace& ws, const std::string& name,
                    const std::vector<std::string>& names) {
  return Errorf(ErrorCode::kInvalidArgument, "no target '{}' in {}{}", name, ws.benchfile,
                DidYouMean(name, names));
}

Result<std::vector<std::string>> PlanBuild(const Workspace& ws,
                                           const std::vector<std::string>& targets,
                                           const std::vector<std::string>& all) {
  BM_ASSIGN_OR_RETURN(WorkspaceConfig config, LoadGeneratedConfig(ws));
  // Breadth first from the requested targets; needed_by keeps the first
  // requested target that reached each one, for the message.
  std::map<std::string, std::string> needed_by;
  std::deque<std::string> queue;
  for (const std::string& t : targets.empty() ? all : targets) {
    if (std::find(all.begin(), all.end(), t) == all.end()) {
      return NoSuchTarget(ws, t, all);
    }
    if (needed_by.emplace(t, t).second) queue.push_back(t);
  }
  std::vector<std::pair<std::string, std::string>> errors;  // (target, what), sorted below
  while (!queue.empty()) {
    const std::string name = queue.front();
    queue.pop_front();
    BM_ASSIGN_OR_RETURN(std::string text, ReadGeneratedFile(ws, name, "params"));
    Result<StepParams> parsed = ParseStepParams(text);
    if (!parsed.ok())
      return GeneratedFileDamaged(ws, ws.TargetFile(name, "params"), parsed.status());
    const StepParams& step = *parsed;
    const Rule* rule = ws.rules->Find(step.rule);
    if (rule == nullptr) {
      return Errorf(ErrorCode::kCorrupt, "target '{}' names rule '{}', which this build lacks",
                    name, step.rule);
    }
    const std::string& root = needed_by.at(name);
    const std::string who =
        fmt::format("target '{}'{}", name, root == name ? "" : " (needed by '" + root + "')");
    // Slurm places its steps' GPUs, mpirun's hosts have their own.
    if (step.gpus > config.gpus && UsesLocalGpus(step.placement)) {
      auto layout = step.params.find("layout");
      const bool named =
          layout != step.params.end() && layout->is_string() && !layout->get<std::string>().empty();
      errors.emplace_back(
          name, fmt::format("{} needs {} GPU(s){} but this machine has {} ([benchmake] gpus or "
                            "$BENCHMAKE_GPUS set the count)",
                            who, step.gpus,
                            named ? " for layout " + layout->get<std::string>() : std::string(),
                            config.gpus));
    }
    for (const std::string& why : rule->Unsupported(step.params))
      errors.emplace_back(name, fmt::format("{} cannot run here: {}", who, why));
    for (const std::string& up : step.upstream_targets) {
      if (needed_by.emplace(up, root).second) queue.push_back(up);
    }
  }
  if (!errors.empty()) {
    // Each line at its target's [target.NAME], as the BENCHFILE's own errors are.
    const std::map<std::string, std::string> where = ReadTargetLocations(ws);
    std::sort(errors.begin(), errors.end());
    std::vector<std::string> lines;
    for (const auto& [target, what] : errors) {
      auto at = where.find(target);
      lines.push_back(at == where.end() ? what : at->second + ": " + what);
    }
    return Errorf(ErrorCode::kInvalidArgument, "{}; nothing was run{}", fmt::join(lines, "\n"),
                  targets.empty() ? " (name the targets to build: benchmake build TARGET...)" : "");
  }
  std::vector<std::string> order;
  for (const std::string& t : all)
    if (needed_by.count(t)) order.push_back(t);
  return order;
}

}  // namespace bm::engine
