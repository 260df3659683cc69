// `benchmake clean`: removes out/ and .benchmake/ of the workspace; the shared
// cache is never touched (other workspaces use it).
#include <cstdio>

#include "base/file_lock.h"
#include "engine/cli/commands.h"
#include "engine/cli/flags.h"

namespace bm::engine::cli {

Status CleanCommand(const std::vector<std::string>& args) {
  BM_ASSIGN_OR_RETURN(CommonFlags flags, ParseCommonFlags(args));
  if (!flags.rest.empty()) return Errorf(ErrorCode::kInvalidArgument, "usage: benchmake clean");
  BM_ASSIGN_OR_RETURN(Workspace ws, OpenWorkspaceFromFlags(flags));
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

}  // namespace bm::engine::cli
