// `benchmake cache push|pull [TARGET...]` (their tables say what they do) and
// the usage part of `cache stats`.
#include "cli/cache_remote_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>

#include "cache/run_health.h"
#include "cache/usage_stats.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/generate.h"
#include "engine/inspect.h"
#include "engine/plan.h"
#include "engine/step.h"
#include "engine/target_state.h"

namespace bm::cli {
namespace {

// `wanted` (all when empty) and, with upstreams, everything they depend on,
// in `order` (dependencies first).
Result<std::vector<std::string>> Select(const engine::Workspace& ws,
                                        const std::vector<engine::TargetInspection>& all,
                                        const std::vector<std::string>& wanted, bool upstreams) {
  std::vector<std::string> names;
  for (const engine::TargetInspection& t : all) names.push_back(t.name);
  if (wanted.empty()) return names;
  std::set<std::string> chosen;
  std::vector<std::string> stack;
  for (const std::string& w : wanted) {
    if (std::find(names.begin(), names.end(), w) == names.end()) {
      return engine::NoSuchTarget(ws, w, names);
    }
    stack.push_back(w);
  }
  while (!stack.empty()) {
    std::string n = stack.back();
    stack.pop_back();
    if (!chosen.insert(n).second || !upstreams) continue;
    for (const engine::TargetInspection& t : all) {
      if (t.name == n) stack.insert(stack.end(), t.upstream.begin(), t.upstream.end());
    }
  }
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (chosen.count(n)) out.push_back(n);
  }
  return out;
}

// One run for every Cache this command opens (inspection, each target): a
// remote found dead is reported once and not asked again (cache/run_health.h).
void StartRun() {
  if (std::getenv("BENCHMAKE_RUN_ID") == nullptr)
    ::setenv("BENCHMAKE_RUN_ID", cache::RunHealth::NewRunId().c_str(), 1);
}

std::string Size(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", bytes / double(1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  if (bytes >= (1ull << 10)) return fmt::format("{:.1f} KiB", bytes / double(1ull << 10));
  return fmt::format("{} B", bytes);
}

}  // namespace

const CommandSpec& CachePushSpec() {
  static const CommandSpec kSpec{
      .name = "cache push",
      .operands = "[TARGET...]",
      .operand_kind = ValueKind::kTarget,
      .max_operands = -1,
      .summary = "upload what this workspace built to the remote cache",
      .description =
          "Uploads the outputs, log and action record of each TARGET (default: every target) as "
          "last materialized in this workspace to the writable remote cache ([benchmake.cache] "
          "or $BENCHMAKE_REMOTE_CACHE; docs/REMOTE_CACHE.md). Values the remote holds already "
          "are not sent again. Unlike during a build, a failed upload is an error, and so is a "
          "TARGET named here that this workspace has not built (unnamed ones are skipped).",
      .examples = {{"benchmake cache push", "share every built target"},
                   {"benchmake cache push pretrain", "share pretrain only"}}};
  return kSpec;
}

Status CachePushCommand(const ParsedArgs& args) {
  StartRun();
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(engine::GenerateResult gen, engine::Generate(ws));
  BM_ASSIGN_OR_RETURN(std::vector<engine::TargetInspection> all,
                      engine::InspectWorkspace(ws, gen.targets));
  BM_ASSIGN_OR_RETURN(std::vector<std::string> targets, Select(ws, all, args.operands(), false));
  BM_ASSIGN_OR_RETURN(engine::WorkspaceConfig config, engine::LoadGeneratedConfig(ws));
  BM_ASSIGN_OR_RETURN(std::unique_ptr<cache::Cache> cache, engine::OpenCache(ws, config));
  uint64_t sent = 0, pushed = 0, skipped = 0;
  std::vector<std::string> unbuilt;
  for (const std::string& t : targets) {
    BM_ASSIGN_OR_RETURN(std::optional<engine::LastBuild> last, engine::ReadLastBuild(ws, t));
    std::optional<cache::ActionRecord> record;
    if (last) {
      BM_ASSIGN_OR_RETURN(record, cache->GetAction(last->key));
    }
    if (!record) {
      std::printf("%s: not built here; skipped\n", t.c_str());
      ++skipped;
      unbuilt.push_back(t);
      continue;
    }
    uint64_t n = 0;
    BM_TRY(cache->PushRecord(*record, &n).WithContext("pushing " + t));
    sent += n;
    ++pushed;
    std::printf("%s: %s\n", t.c_str(),
                n == 0 ? "already in the remote" : fmt::format("{} values sent", n).c_str());
  }
  std::printf("pushed %llu targets (%llu values sent, %s), %llu skipped\n",
              static_cast<unsigned long long>(pushed), static_cast<unsigned long long>(sent),
              Size(cache->usage().remote_bytes_up).c_str(),
              static_cast<unsigned long long>(skipped));
  // Every target by default shares what was built; a target named on the
  // command line that was not is an error, as `git push` of a missing branch.
  if (!args.operands().empty() && !unbuilt.empty())
    return Errorf(ErrorCode::kNotFound,
                  "not built here, so not pushed: {}; run `benchmake build` first",
                  fmt::join(unbuilt, ", "));
  return Status::Ok();
}

const CommandSpec& CachePullSpec() {
  static const CommandSpec kSpec{
      .name = "cache pull",
      .operands = "[TARGET...]",
      .operand_kind = ValueKind::kTarget,
      .max_operands = -1,
      .summary = "restore targets from the caches without running anything",
      .description =
          "Restores each TARGET (default: every target) and the upstream targets its key "
          "depends on from the local cache, else the remote one, running no step. A target that "
          "no cache holds (its record, or one of its blobs) is listed as needing `benchmake "
          "build`, and so is every target downstream of it.",
      .examples = {
          {"benchmake cache pull pretrain", "the checkpoint and metrics another machine pushed"}}};
  return kSpec;
}

Status CachePullCommand(const ParsedArgs& args) {
  StartRun();
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(engine::GenerateResult gen, engine::Generate(ws));
  BM_ASSIGN_OR_RETURN(std::vector<engine::TargetInspection> all,
                      engine::InspectWorkspace(ws, gen.targets));
  BM_ASSIGN_OR_RETURN(std::vector<std::string> targets, Select(ws, all, args.operands(), true));
  engine::StepOptions options;
  options.console = &std::cout;
  options.restore_only = true;
  uint64_t restored = 0, missing = 0;
  std::set<std::string> not_pulled;  // its dependents cannot be restored either
  for (const std::string& t : targets) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const engine::TargetInspection& i) { return i.name == t; });
    auto up = std::find_if(it->upstream.begin(), it->upstream.end(),
                           [&](const std::string& u) { return not_pulled.count(u) > 0; });
    std::string why;
    if (up != it->upstream.end()) {
      why = "its input " + *up + " is not restored";
    } else if (it->staleness.verdict == engine::Verdict::kUpToDate) {
      continue;
    } else if (it->staleness.verdict != engine::Verdict::kRestore) {
      why = it->staleness.verdict == engine::Verdict::kRun
                ? "no cache holds its key"
                : std::string(engine::VerdictName(it->staleness.verdict));
    } else {
      Result<engine::StepReport> r = engine::RunStep(ws, t, options);
      if (r.ok()) {
        if (r->outcome == engine::StepOutcome::kRestored) ++restored;
        continue;
      }
      if (r.status().code() != ErrorCode::kNotFound && r.status().code() != ErrorCode::kCorrupt)
        return r.status();
      why = r.status().message();
    }
    std::printf("%s: not in the cache (%s); needs `benchmake build`\n", t.c_str(), why.c_str());
    not_pulled.insert(t);
    ++missing;
  }
  std::printf("pulled %llu targets, %llu not in the cache\n",
              static_cast<unsigned long long>(restored), static_cast<unsigned long long>(missing));
  return Status::Ok();
}

Status PrintUsageStats(const std::string& cache_root) {
  BM_ASSIGN_OR_RETURN(cache::UsageStats u, cache::LoadUsage(cache_root));
  std::printf("local:   %llu hits, %llu misses\n", static_cast<unsigned long long>(u.local_hits),
              static_cast<unsigned long long>(u.local_misses));
  std::printf(
      "remote:  %llu hits, %llu misses, %s down, %s up (%llu values), %llu failures, "
      "%llu corrupt, %llu rejected\n",
      static_cast<unsigned long long>(u.remote_hits),
      static_cast<unsigned long long>(u.remote_misses), Size(u.remote_bytes_down).c_str(),
      Size(u.remote_bytes_up).c_str(), static_cast<unsigned long long>(u.remote_uploads),
      static_cast<unsigned long long>(u.remote_failures),
      static_cast<unsigned long long>(u.remote_corrupt),
      static_cast<unsigned long long>(u.remote_rejected));
  return Status::Ok();
}

}  // namespace bm::cli
