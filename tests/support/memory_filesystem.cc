#include "tests/support/memory_filesystem.h"

#include <algorithm>

namespace bm::testing {

std::string MemoryFilesystem::Norm(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '/' && !out.empty() && out.back() == '/') continue;
    out += path[i];
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  // Drop "/./" segments.
  for (size_t p; (p = out.find("/./")) != std::string::npos;) out.erase(p, 2);
  return out;
}

bool MemoryFilesystem::IsDirLocked(const std::string& path) const {
  return path == "/" || dirs_.count(path);
}

Status MemoryFilesystem::MakeDirsLocked(const std::string& path) {
  std::string p = Norm(path);
  if (p.empty() || p == "/" || p == ".") return Status::Ok();
  if (files_.count(p)) return Errorf(ErrorCode::kIo, "mkdir {}: a file is in the way", p);
  if (dirs_.count(p)) return Status::Ok();
  BM_TRY(MakeDirsLocked(DirName(p)));
  dirs_[p] = ++clock_;
  TouchParentLocked(p);
  return Status::Ok();
}

std::shared_ptr<MemoryFilesystem::File> MemoryFilesystem::NewFileLocked(std::string data) {
  auto f = std::make_shared<File>();
  f->data = std::move(data);
  f->mtime = ++clock_;
  f->inode = next_inode_++;
  return f;
}

Result<FileInfo> MemoryFilesystem::Stat(const std::string& path) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  FileInfo info;
  if (auto it = files_.find(p); it != files_.end()) {
    info.exists = true;
    info.size = it->second->data.size();
    info.mtime_ns = it->second->mtime;
    info.inode = it->second->inode;
    info.links = static_cast<uint64_t>(it->second.use_count());  // one per path
    info.executable = it->second->executable;
  } else if (IsDirLocked(p)) {
    info.exists = true;
    info.is_dir = true;
    info.mtime_ns = dirs_[p];
  }
  return info;
}

Result<std::string> MemoryFilesystem::ReadFile(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(Norm(path));
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "opening {}: no such file", path);
  return it->second->data;
}

Status MemoryFilesystem::WriteFileAtomic(const std::string& path, std::string_view data,
                                         bool read_only, bool /*durable*/) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  if (!IsDirLocked(DirName(p)))
    return Errorf(ErrorCode::kNotFound, "creating {}: no such directory", p);
  if (!fail_writes_.empty() && p.find(fail_writes_) != std::string::npos) {
    return Errorf(ErrorCode::kIo, "writing {}: injected failure", p);
  }
  auto f = NewFileLocked(std::string(data));
  f->read_only = read_only;
  files_[p] = f;  // a new inode replaces the old one, like rename()
  TouchParentLocked(p);
  return Status::Ok();
}

Status MemoryFilesystem::MakeDirs(const std::string& path) {
  std::lock_guard lock(mu_);
  return MakeDirsLocked(path);
}

Result<std::vector<std::string>> MemoryFilesystem::ListDir(const std::string& path) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  if (!IsDirLocked(p)) return Errorf(ErrorCode::kNotFound, "listing {}: no such directory", p);
  std::string prefix = p == "/" ? "/" : p + "/";
  std::vector<std::string> names;
  auto add = [&](const std::string& child) {
    if (child.size() <= prefix.size() || child.compare(0, prefix.size(), prefix) != 0) return;
    std::string rest = child.substr(prefix.size());
    if (rest.find('/') == std::string::npos) names.push_back(rest);
  };
  for (const auto& [f, file] : files_) add(f);
  for (const auto& [d, m] : dirs_) add(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status MemoryFilesystem::Remove(const std::string& path) {
  std::lock_guard lock(mu_);
  if (!fail_removes_.empty() && Norm(path).find(fail_removes_) != std::string::npos)
    return Errorf(ErrorCode::kIo, "removing {}: Permission denied (injected)", Norm(path));
  if (files_.erase(Norm(path))) TouchParentLocked(Norm(path));
  return Status::Ok();
}

Status MemoryFilesystem::RemoveAll(const std::string& path) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  std::string prefix = p + "/";
  for (auto it = files_.begin(); it != files_.end();) {
    it = (it->first == p || it->first.compare(0, prefix.size(), prefix) == 0) ? files_.erase(it)
                                                                              : std::next(it);
  }
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    it = (it->first == p || it->first.compare(0, prefix.size(), prefix) == 0) ? dirs_.erase(it)
                                                                              : std::next(it);
  }
  return Status::Ok();
}

Status MemoryFilesystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  std::string f = Norm(from), t = Norm(to);
  if (!IsDirLocked(DirName(t)))
    return Errorf(ErrorCode::kNotFound, "rename to {}: no such directory", t);
  if (auto it = files_.find(f); it != files_.end()) {
    files_[t] = it->second;
    files_.erase(f);
    TouchParentLocked(f);
    TouchParentLocked(t);
    if (!vanish_.empty() && t.find(vanish_) != std::string::npos) files_.erase(t);
    return Status::Ok();
  }
  if (IsDirLocked(f)) {
    std::string prefix = f + "/";
    std::map<std::string, std::shared_ptr<File>> moved_files;
    std::map<std::string, int64_t> moved_dirs;
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first.compare(0, prefix.size(), prefix) == 0) {
        moved_files[t + it->first.substr(f.size())] = it->second;
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = dirs_.begin(); it != dirs_.end();) {
      if (it->first == f || it->first.compare(0, prefix.size(), prefix) == 0) {
        moved_dirs[t + it->first.substr(f.size())] = it->second;
        it = dirs_.erase(it);
      } else {
        ++it;
      }
    }
    files_.insert(moved_files.begin(), moved_files.end());
    dirs_.insert(moved_dirs.begin(), moved_dirs.end());
    return Status::Ok();
  }
  return Errorf(ErrorCode::kNotFound, "renaming {}: no such file", f);
}

Status MemoryFilesystem::LinkOrCopy(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  std::string f = Norm(from), t = Norm(to);
  auto it = files_.find(f);
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "linking {}: no such file", f);
  if (files_.count(t)) return Errorf(ErrorCode::kAlreadyExists, "linking to {}: exists", t);
  if (!IsDirLocked(DirName(t)))
    return Errorf(ErrorCode::kNotFound, "linking to {}: no such directory", t);
  files_[t] = it->second;
  TouchParentLocked(t);
  return Status::Ok();
}

Status MemoryFilesystem::CopyReadOnly(const std::string& from, const std::string& to,
                                      bool executable) {
  std::lock_guard lock(mu_);
  std::string f = Norm(from), t = Norm(to);
  auto it = files_.find(f);
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "copying {}: no such file", f);
  if (files_.count(t)) return Errorf(ErrorCode::kAlreadyExists, "copying to {}: exists", t);
  if (!IsDirLocked(DirName(t)))
    return Errorf(ErrorCode::kNotFound, "copying to {}: no such directory", t);
  auto copy = std::make_shared<File>(*it->second);
  copy->inode = next_inode_++;
  copy->mtime = ++clock_;
  copy->read_only = true;
  copy->executable = executable;
  files_[t] = copy;
  TouchParentLocked(t);
  return Status::Ok();
}

Status MemoryFilesystem::SetReadOnly(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(Norm(path));
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "chmod {}: no such file", path);
  it->second->read_only = true;
  return Status::Ok();
}

Status MemoryFilesystem::SetExecutable(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(Norm(path));
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "chmod {}: no such file", path);
  it->second->executable = true;
  return Status::Ok();
}

Status MemoryFilesystem::Touch(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(Norm(path));
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "touching {}: no such file", path);
  it->second->mtime = ++clock_;
  return Status::Ok();
}

Result<Digest> MemoryFilesystem::HashFile(const std::string& path) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  auto it = files_.find(p);
  if (it == files_.end()) return Errorf(ErrorCode::kNotFound, "opening {}: no such file", path);
  ++hash_counts_[p];
  return DigestOf(it->second->data);
}

Result<std::string> MemoryFilesystem::MakeTempDir(const std::string& parent,
                                                  const std::string& prefix) {
  std::lock_guard lock(mu_);
  BM_TRY(MakeDirsLocked(parent));
  std::string p = Norm(parent) + "/" + prefix + std::to_string(++temp_counter_);
  BM_TRY(MakeDirsLocked(p));
  return p;
}

void MemoryFilesystem::Write(const std::string& path, std::string_view data) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  (void)MakeDirsLocked(DirName(p));
  auto it = files_.find(p);
  if (it == files_.end()) {
    files_[p] = NewFileLocked(std::string(data));
    TouchParentLocked(p);  // a new entry, as WriteFileAtomic's
  } else {
    it->second->data = std::string(data);
    it->second->mtime = ++clock_;
  }
}

void MemoryFilesystem::CorruptInPlace(const std::string& path, std::string_view data) {
  std::lock_guard lock(mu_);
  auto it = files_.find(Norm(path));
  if (it != files_.end()) it->second->data = std::string(data);
}

bool MemoryFilesystem::Exists(const std::string& path) {
  std::lock_guard lock(mu_);
  std::string p = Norm(path);
  return files_.count(p) || IsDirLocked(p);
}

std::string MemoryFilesystem::Read(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(Norm(path));
  return it == files_.end() ? "" : it->second->data;
}

int MemoryFilesystem::hash_count(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = hash_counts_.find(Norm(path));
  return it == hash_counts_.end() ? 0 : it->second;
}

}  // namespace bm::testing

namespace bm::testing {

// Like a real directory, a parent's mtime changes when entries come or go.
void MemoryFilesystem::TouchParentLocked(const std::string& path) {
  auto it = dirs_.find(DirName(path));
  if (it != dirs_.end()) it->second = ++clock_;
}

}  // namespace bm::testing
