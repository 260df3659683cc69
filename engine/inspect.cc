#include "engine/inspect.h"

#include <map>

#include "engine/generate.h"
#include "engine/target_state.h"

namespace bm::engine {

Result<std::vector<TargetInspection>> InspectWorkspace(const Workspace& ws,
                                                       const std::vector<std::string>& order) {
  BM_ASSIGN_OR_RETURN(WorkspaceConfig config, LoadGeneratedConfig(ws));
  BM_ASSIGN_OR_RETURN(std::unique_ptr<cache::Cache> cache, OpenCache(ws, config));
  std::map<std::string, std::string> predicted;  // target → manifest hex ("" = unknown)
  std::vector<TargetInspection> out;
  for (const std::string& name : order) {
    TargetInspection ti;
    ti.name = name;
    BM_ASSIGN_OR_RETURN(std::string spec_text, ReadGeneratedFile(ws, name, "spec"));
    Result<KeyMaterial> parsed = KeyMaterial::Parse(spec_text);
    if (!parsed.ok()) return GeneratedFileDamaged(ws, ws.TargetFile(name, "spec"), parsed.status());
    KeyMaterial& material = *parsed;
    if (Result<std::string> p = ws.fs->ReadFile(ws.TargetFile(name, "params")); p.ok()) {
      if (Result<StepParams> sp = ParseStepParams(*p); sp.ok()) ti.rule = sp->rule;
    }
    TargetFacts facts;
    for (const std::string& up : material.Upstreams()) {
      ti.upstream.push_back(up);
      const std::string& hex = predicted[up];
      if (hex.empty()) facts.pending.push_back(up);
      material.SetInput(up, hex);
    }
    facts.material = material;
    BM_ASSIGN_OR_RETURN(facts.last, ReadLastBuild(ws, name));
    if (facts.last) {
      BM_ASSIGN_OR_RETURN(facts.outputs_present, OutputsPresent(ws, name, *facts.last));
    }
    std::optional<cache::ActionRecord> record;
    if (facts.pending.empty()) {
      BM_ASSIGN_OR_RETURN(record, cache->GetAction(material.Key()));
      facts.in_cache = record.has_value();
    }
    ti.staleness = Assess(facts);
    ti.key = material.Key();
    ti.material = material;
    switch (ti.staleness.verdict) {
      case Verdict::kUpToDate:
        predicted[name] = cache::ManifestDigest(facts.last->outputs).Hex();
        break;
      case Verdict::kRestore:
        predicted[name] = cache::ManifestDigest(record->outputs).Hex();
        break;
      default:
        predicted[name] = "";
        break;
    }
    out.push_back(std::move(ti));
  }
  return out;
}

}  // namespace bm::engine
