#include "engine/results.h"

#include "engine/generate.h"
#include "engine/inspect.h"
#include "engine/target_state.h"

namespace bm::engine {

Result<std::vector<TargetResult>> LoadResults(const Workspace& ws) {
  BM_ASSIGN_OR_RETURN(GenerateResult gen, Generate(ws));
  BM_ASSIGN_OR_RETURN(std::vector<TargetInspection> inspections, InspectWorkspace(ws, gen.targets));
  BM_ASSIGN_OR_RETURN(WorkspaceConfig config, LoadGeneratedConfig(ws));
  BM_ASSIGN_OR_RETURN(std::unique_ptr<cache::Cache> cache, OpenCache(ws, config));
  std::vector<TargetResult> out;
  for (const TargetInspection& ti : inspections) {
    TargetResult r;
    r.name = ti.name;
    r.rule = ti.rule;
    r.out_dir = ws.OutDirOf(ti.name);
    r.log_path = ws.LogOf(ti.name);
    r.up_to_date = ti.staleness.verdict == Verdict::kUpToDate;
    BM_ASSIGN_OR_RETURN(std::optional<LastBuild> last, ReadLastBuild(ws, ti.name));
    if (last) {
      BM_ASSIGN_OR_RETURN(std::optional<cache::ActionRecord> record, cache->GetAction(last->key));
      if (record) {
        r.built = true;
        r.key = last->key;
        r.fresh = last->outcome == "ran";
        r.materialized_at = last->date;
        r.record = std::move(*record);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace bm::engine
