#include "base/stat_cache.h"

#include <charconv>

namespace bm {
namespace {

constexpr std::string_view kMagic = "benchmake-stat-cache 1\n";

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Status StatCache::Load() {
  Result<std::string> text = fs_.ReadFile(file_);
  if (!text.ok() || text->compare(0, kMagic.size(), kMagic) != 0) return Status::Ok();
  std::string_view rest = std::string_view(*text).substr(kMagic.size());
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) break;
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl + 1);
    std::string_view fields[4];
    bool ok = true;
    for (auto& f : fields) {
      size_t sp = line.find(' ');
      if (sp == std::string_view::npos) {
        ok = false;
        break;
      }
      f = line.substr(0, sp);
      line.remove_prefix(sp + 1);
    }
    Entry e{};
    Result<Digest> d =
        ok ? Digest::FromHex(fields[0]) : Result<Digest>(Status(ErrorCode::kCorrupt, ""));
    if (!d.ok() || !ParseNumber(fields[1], &e.size) || !ParseNumber(fields[2], &e.mtime_ns) ||
        !ParseNumber(fields[3], &e.inode) || line.empty())
      continue;
    e.digest = *d;
    entries_[std::string(line)] = e;
  }
  return Status::Ok();
}

Status StatCache::Save() {
  if (!dirty_) return Status::Ok();
  std::string out(kMagic);
  for (const auto& [path, e] : entries_) {
    out += fmt::format("{} {} {} {} {}\n", e.digest.Hex(), e.size, e.mtime_ns, e.inode, path);
  }
  BM_TRY(fs_.WriteFileAtomic(file_, out, /*read_only=*/false, /*durable=*/false));
  dirty_ = false;
  return Status::Ok();
}

Result<Digest> StatCache::Hash(const std::string& path, const FileInfo& info) {
  auto it = entries_.find(path);
  if (it != entries_.end() && it->second.size == info.size &&
      it->second.mtime_ns == info.mtime_ns && it->second.inode == info.inode) {
    return it->second.digest;
  }
  BM_ASSIGN_OR_RETURN(Digest d, fs_.HashFile(path));
  ++hashed_;
  entries_[path] = Entry{info.size, info.mtime_ns, info.inode, d};
  dirty_ = true;
  return d;
}

}  // namespace bm
