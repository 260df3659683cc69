#include "engine/out_check.h"

#include <charconv>
#include <map>

#include "engine/target_state.h"

namespace bm::engine {
namespace {

constexpr std::string_view kMagic = "benchmake-out-checked 2\n";

std::string CheckedPath(const Workspace& ws) { return ws.StateDir() + "/out_checked"; }

struct Entry {
  uint64_t size = 0;
  uint64_t inode = 0;
  std::string path;  // below out/NAME; "." for the directory
};

bool ParseNumber(std::string_view s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Target → its kept entries; a foreign or damaged file is an empty map.
std::map<std::string, std::vector<Entry>> ParseChecked(std::string_view text) {
  std::map<std::string, std::vector<Entry>> kept;
  if (text.substr(0, kMagic.size()) != kMagic) return {};
  text.remove_prefix(kMagic.size());
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return {};
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view f[3];
    for (std::string_view& field : f) {
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos) return {};
      field = line.substr(0, sp);
      line.remove_prefix(sp + 1);
    }
    Entry e;
    if (!ParseNumber(f[1], &e.size) || !ParseNumber(f[2], &e.inode) || line.empty()) return {};
    e.path = std::string(line);
    kept[std::string(f[0])].push_back(std::move(e));
  }
  return kept;
}

Result<bool> StillHolds(const Workspace& ws, const std::string& target,
                        const std::vector<Entry>& entries) {
  // The record the entries came from: without it `status` calls the target never built.
  BM_ASSIGN_OR_RETURN(FileInfo last, ws.fs->Stat(ws.TargetFile(target, "last")));
  if (!last.exists || last.is_dir) return false;
  for (const Entry& e : entries) {
    std::string path = ws.OutDirOf(target) + (e.path == "." ? "" : "/" + e.path);
    BM_ASSIGN_OR_RETURN(FileInfo info, ws.fs->Stat(path));
    if (!info.exists || info.inode != e.inode || (!info.is_dir && info.size != e.size))
      return false;
  }
  return true;
}

// The entries of a target whose out/NAME holds what NAME.last records; empty
// when it does not (its NAME.out is then removed) or nothing was built.
Result<std::vector<Entry>> CheckFromLastBuild(const Workspace& ws, const std::string& target) {
  BM_ASSIGN_OR_RETURN(std::optional<LastBuild> last, ReadLastBuild(ws, target));
  BM_ASSIGN_OR_RETURN(FileInfo dir, ws.fs->Stat(ws.OutDirOf(target)));
  bool present = dir.exists && dir.is_dir;
  if (present && last) {
    BM_ASSIGN_OR_RETURN(present, OutputsPresent(ws, target, *last));
  }
  // No record (removed by hand): the step restores out/NAME and writes it again.
  if (!present || !last) {
    BM_TRY(ws.fs->RemoveAll(ws.TargetFile(target, "out")));
    return std::vector<Entry>();
  }
  std::vector<Entry> entries = {{0, dir.inode, "."}};
  for (const LastBuild::Materialized& f : last->files) entries.push_back({f.size, f.inode, f.path});
  return entries;
}

}  // namespace

Status CheckOutDirs(const Workspace& ws, const std::vector<std::string>& targets) {
  Result<std::string> before = ws.fs->ReadFile(CheckedPath(ws));
  std::map<std::string, std::vector<Entry>> kept =
      before.ok() ? ParseChecked(*before) : std::map<std::string, std::vector<Entry>>();
  std::string text(kMagic);
  for (const std::string& t : targets) {
    std::vector<Entry> entries;
    auto it = kept.find(t);
    if (it == kept.end()) {
      BM_ASSIGN_OR_RETURN(entries, CheckFromLastBuild(ws, t));
    } else {
      BM_ASSIGN_OR_RETURN(bool holds, StillHolds(ws, t, it->second));
      if (holds)
        entries = std::move(it->second);
      else
        BM_TRY(ws.fs->RemoveAll(ws.TargetFile(t, "out")));
    }
    for (const Entry& e : entries) text += fmt::format("{} {} {} {}\n", t, e.size, e.inode, e.path);
  }
  if (before.ok() && *before == text) return Status::Ok();
  return ws.fs->WriteFileAtomic(CheckedPath(ws), text, /*read_only=*/false, /*durable=*/false);
}

Status ForgetOutCheck(const Workspace& ws) { return ws.fs->RemoveAll(CheckedPath(ws)); }

}  // namespace bm::engine
