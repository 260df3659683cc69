#include "engine/clean_stamp.h"

#include <fmt/format.h>

#include <sstream>

namespace bm::engine {
namespace {

constexpr std::string_view kCleanStampMagic = "benchmake-clean 1\n";

std::string StampPath(const Workspace& ws) { return ws.StateDir() + "/clean"; }

// The files ninja reads to decide what is stale, in a fixed order.
std::vector<std::string> NinjaInputs(const Workspace& ws, const std::vector<std::string>& targets) {
  std::vector<std::string> paths = {ws.StateDir() + "/build.ninja", ws.StateDir() + "/.ninja_log"};
  for (const std::string& t : targets) {
    paths.push_back(ws.TargetFile(t, "spec"));
    paths.push_back(ws.TargetFile(t, "out"));
  }
  return paths;
}

Result<std::string> StatLine(Filesystem& fs, const std::string& path) {
  BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
  if (!info.exists) return "- - - " + path;
  return fmt::format("{} {} {} {}", info.size, info.mtime_ns, info.inode, path);
}

}  // namespace

Status WriteCleanStamp(const Workspace& ws, const std::vector<std::string>& targets) {
  std::string text(kCleanStampMagic);
  for (const std::string& path : NinjaInputs(ws, targets)) {
    BM_ASSIGN_OR_RETURN(std::string line, StatLine(*ws.fs, path));
    text += line + "\n";
  }
  return ws.fs->WriteFileAtomic(StampPath(ws), text, false, /*durable=*/false);
}

Status ForgetCleanStamp(const Workspace& ws) { return ws.fs->RemoveAll(StampPath(ws)); }

Result<std::string> GeneratedState(const Workspace& ws, const std::vector<std::string>& targets) {
  BM_ASSIGN_OR_RETURN(std::string state, StatLine(*ws.fs, ws.StateDir() + "/build.ninja"));
  for (const std::string& t : targets) {
    BM_ASSIGN_OR_RETURN(std::string line, StatLine(*ws.fs, ws.TargetFile(t, "spec")));
    state += "\n" + line;
  }
  return state;
}

bool CleanStampHolds(const Workspace& ws, const std::vector<std::string>& targets) {
  Result<std::string> text = ws.fs->ReadFile(StampPath(ws));
  if (!text.ok() || text->compare(0, kCleanStampMagic.size(), kCleanStampMagic) != 0) return false;
  std::istringstream in(text->substr(kCleanStampMagic.size()));
  std::string line;
  for (const std::string& path : NinjaInputs(ws, targets)) {
    if (!std::getline(in, line)) return false;
    Result<std::string> now = StatLine(*ws.fs, path);
    if (!now.ok() || *now != line) return false;
  }
  return !std::getline(in, line);
}

}  // namespace bm::engine
