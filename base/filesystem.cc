#include "base/filesystem.h"

#include <algorithm>
#include <functional>

namespace bm {

Result<bool> WriteFileIfChanged(Filesystem& fs, const std::string& path, std::string_view data) {
  BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
  if (info.exists && !info.is_dir && info.size == data.size()) {
    Result<std::string> old = fs.ReadFile(path);
    if (old.ok() && *old == data) return false;
  }
  BM_TRY(fs.WriteFileAtomic(path, data, /*read_only=*/false, /*durable=*/false));
  return true;
}

Result<std::vector<std::string>> ListFilesRecursive(Filesystem& fs, const std::string& dir,
                                                    std::vector<std::string>* subdirs,
                                                    std::vector<std::string>* linked) {
  std::vector<std::string> out;
  // The directories on the way down, by (device, inode): a link back to one of them is a loop,
  // which `find -L` reports too; walked, it would end only at the system's path limit.
  BM_ASSIGN_OR_RETURN(FileInfo top, fs.Stat(dir));
  std::vector<std::pair<uint64_t, uint64_t>> above = {{top.device, top.inode}};
  std::function<Status(const std::string&, bool)> walk = [&](const std::string& rel,
                                                             bool via_link) -> Status {
    std::string abs = rel.empty() ? dir : JoinPath(dir, rel);
    BM_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(abs));
    for (const std::string& name : names) {
      std::string child = rel.empty() ? name : rel + "/" + name;
      BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(JoinPath(dir, child)));
      bool link = via_link;
      if (linked && !link && info.exists) {
        BM_ASSIGN_OR_RETURN(link, fs.IsSymlink(JoinPath(dir, child)));
      }
      if (info.is_dir) {
        const std::pair<uint64_t, uint64_t> id{info.device, info.inode};
        if (info.inode != 0 && std::find(above.begin(), above.end(), id) != above.end()) {
          return Errorf(ErrorCode::kInvalidArgument,
                        "{}: a directory link loop (it leads back to a directory above it)",
                        JoinPath(dir, child));
        }
        if (subdirs) subdirs->push_back(child);
        above.push_back(id);
        BM_TRY(walk(child, link));
        above.pop_back();
      } else if (info.exists) {
        out.push_back(child);
        if (link) linked->push_back(child);
      }
    }
    return Status::Ok();
  };
  BM_TRY(walk("", false));
  std::sort(out.begin(), out.end());
  if (linked) std::sort(linked->begin(), linked->end());
  return out;
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty() || (!b.empty() && b.front() == '/')) return std::string(b);
  std::string out(a);
  if (out.back() != '/') out.push_back('/');
  out.append(b);
  return out;
}

std::string DirName(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

}  // namespace bm
