// `benchmake clean`: removes out/ and .benchmake/ of the workspace; the shared
// cache is never touched (other workspaces use it).
#include <cstdio>

#include "base/file_lock.h"
#include "cli/commands.h"
#include "cli/flags.h"

namespace bm::cli {

const CommandSpec& CleanSpec() {
  static const CommandSpec kSpec{
      .name = "clean",
      .summary = "remove out/ and .benchmake/ (never the shared cache)",
      .description =
          "Removes the workspace's out/ (the materialized outputs) and .benchmake/ "
          "(build.ninja, logs, state). The cache is shared by every workspace and is "
          "kept: the next build restores everything from it. Refuses while a build of "
          "the workspace runs.",
      .examples = {{"benchmake clean && benchmake build", "restore every target from the cache"}}};
  return kSpec;
}

Status CleanCommand(const ParsedArgs& args) {
  BM_ASSIGN_OR_RETURN(engine::Workspace ws, OpenWorkspaceFromFlags(args));
  BM_ASSIGN_OR_RETURN(FileInfo state, ws.fs->Stat(ws.StateDir()));
  FileLock lock;
  if (state.exists) {
    BM_ASSIGN_OR_RETURN(bool got, FileLock::TryLock(ws.StateDir() + "/lock", &lock));
    if (!got)
      return Errorf(ErrorCode::kFailed, "a build of this workspace is running; not cleaning");
  }
  BM_TRY(ws.fs->RemoveAll(ws.OutRoot()));
  BM_TRY(ws.fs->RemoveAll(ws.StateDir()));
  std::printf("removed %s and %s (the cache is kept)\n", ws.OutRoot().c_str(),
              ws.StateDir().c_str());
  return Status::Ok();
}

}  // namespace bm::cli
