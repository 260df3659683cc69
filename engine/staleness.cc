#include "engine/staleness.h"

namespace bm::engine {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kUpToDate:
      return "up to date";
    case Verdict::kRestore:
      return "restore from cache";
    case Verdict::kRun:
      return "run";
    case Verdict::kPending:
      return "waits for upstream";
  }
  return "?";
}

Staleness Assess(const TargetFacts& f) {
  Staleness s;
  if (!f.last) {
    s.reasons.push_back("never built in this workspace");
  } else {
    s.reasons = DiffKeyMaterial(f.last->material, f.material);
  }
  if (!f.pending.empty()) {
    std::string names;
    for (const std::string& p : f.pending) names += (names.empty() ? "" : ", ") + p;
    s.verdict = Verdict::kPending;
    s.reasons.push_back("decided after " + names + " rebuild" + (f.pending.size() == 1 ? "s" : ""));
    return s;
  }
  bool same_key = f.last && f.last->key == f.material.Key();
  if (same_key && f.outputs_present) {
    s.verdict = Verdict::kUpToDate;
    s.reasons.clear();
    return s;
  }
  if (same_key) s.reasons.push_back("outputs missing from out/");
  if (f.in_cache) {
    s.verdict = Verdict::kRestore;
    s.reasons.push_back("in cache");
  } else {
    s.verdict = Verdict::kRun;
    s.reasons.push_back("not in cache");
  }
  return s;
}

}  // namespace bm::engine
