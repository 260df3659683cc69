// `benchmake clean [TARGET...]`: removes out/ and .benchmake/ of the workspace, or
// only the named targets' outputs; the shared cache is never touched (other
// workspaces use it).
#include <algorithm>
#include <cstdio>

#include "base/file_lock.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/clean_stamp.h"
#include "engine/generate.h"
#include "engine/plan.h"

namespace bm::cli {
namespace {

// The named targets' out/NAME and their restat stamps (t/NAME.out), so that
// ninja sees them stale and the next build restores them from the cache (or
// runs them, if it no longer holds them); targets that depend on them keep
// their state: a restored output is the same bytes.
Status CleanTargets(const engine::Workspace& ws, const std::vector<std::string>& wanted) {
  BM_ASSIGN_OR_RETURN(engine::GenerateResult gen, engine::Generate(ws));
  for (const std::string& name : wanted)
    if (std::find(gen.targets.begin(), gen.targets.end(), name) == gen.targets.end())
      return engine::NoSuchTarget(ws, name, gen.targets);
  BM_TRY(engine::ForgetCleanStamp(ws));
  for (const std::string& name : wanted) {
    BM_TRY(ws.fs->Remove(ws.TargetFile(name, "out")));
    BM_TRY(ws.fs->RemoveAll(ws.OutDirOf(name)));
    std::printf("removed %s\n", ws.OutDirOf(name).c_str());
  }
  std::printf("(the cache is kept: the next build restores what it holds)\n");
  return Status::Ok();
}

}  // namespace

const CommandSpec& CleanSpec() {
  static const CommandSpec kSpec{
      .name = "clean",
      .operands = "[TARGET...]",
      .operand_kind = ValueKind::kTarget,
      .min_operands = 0,
      .max_operands = -1,
      .summary = "remove out/ and .benchmake/, or the named targets' outputs (never the cache)",
      .description =
          "Without TARGET, removes the workspace's out/ (the materialized outputs) and "
          ".benchmake/ (build.ninja, logs, state). With TARGETs, removes only their "
          "out/TARGET, and the next build restores them (ninja's `-t clean TARGET` also "
          "cleans what they were built from; name those too if you want them gone). The "
          "cache is shared by every workspace and is kept: the next build restores from "
          "it. Refuses while a build of the workspace runs.",
      .examples = {{"benchmake clean && benchmake build", "restore every target from the cache"},
                   {"benchmake clean pretrain", "remove out/pretrain only"}}};
  return kSpec;
}

Status CleanCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(FileInfo state, ws.fs->Stat(ws.StateDir()));
  FileLock lock;
  if (state.exists || !args.operands().empty()) {
    if (!state.exists) BM_TRY(ws.fs->MakeDirs(ws.StateDir()));
    BM_ASSIGN_OR_RETURN(bool got, FileLock::TryLock(ws.StateDir() + "/lock", &lock));
    if (!got)
      return Errorf(ErrorCode::kFailed, "a build of this workspace is running; not cleaning");
  }
  if (!args.operands().empty()) return CleanTargets(ws, args.operands());
  BM_TRY(ws.fs->RemoveAll(ws.OutRoot()));
  BM_TRY(ws.fs->RemoveAll(ws.StateDir()));
  std::printf("removed %s and %s (the cache is kept)\n", ws.OutRoot().c_str(),
              ws.StateDir().c_str());
  return Status::Ok();
}

}  // namespace bm::cli
