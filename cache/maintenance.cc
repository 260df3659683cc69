#include "cache/maintenance.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <string>

#include "cache/action_record.h"

namespace bm::cache {
namespace {

struct Entry {
  Namespace ns;
  std::string path;
  std::string name;
  uint64_t size;
  int64_t mtime_ns;
  bool is_dir;  // damage: the store renames only files into place
};

Result<std::vector<Entry>> ListEntries(LocalStore& store) {
  Filesystem& fs = store.fs();
  std::vector<Entry> entries;
  for (Namespace ns : {Namespace::kCas, Namespace::kAc}) {
    std::string top = store.root() + "/" + std::string(NamespaceName(ns));
    BM_ASSIGN_OR_RETURN(FileInfo top_info, fs.Stat(top));
    if (!top_info.exists) continue;
    BM_ASSIGN_OR_RETURN(std::vector<std::string> shards, fs.ListDir(top));
    for (const std::string& shard : shards) {
      std::string dir = top + "/" + shard;
      BM_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(dir));
      for (const std::string& name : names) {
        std::string path = dir + "/" + name;
        BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
        if (!info.exists) continue;
        entries.push_back(
            Entry{ns, path, name, info.is_dir ? 0 : info.size, info.mtime_ns, info.is_dir});
      }
    }
  }
  return entries;
}

// A temporary untouched this long was left by a killed process; a younger one
// may belong to a running fetch or install.
constexpr int64_t kStaleTempNs = int64_t{3600} * 1000000000;

// Removes what in tmp/ (a file, or a fetch's directory) has not been written
// for kStaleTempNs, counting it in `report`.
Status RemoveStaleTemps(LocalStore& store, int64_t now_ns, GcReport& report) {
  Filesystem& fs = store.fs();
  BM_ASSIGN_OR_RETURN(FileInfo top, fs.Stat(store.TempDir()));
  if (!top.exists) return Status::Ok();
  BM_ASSIGN_OR_RETURN(std::vector<std::string> names, fs.ListDir(store.TempDir()));
  for (const std::string& name : names) {
    std::string path = store.TempDir() + "/" + name;
    BM_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
    if (!info.exists) continue;
    int64_t newest = info.mtime_ns;
    uint64_t bytes = info.is_dir ? 0 : info.size;
    if (info.is_dir) {
      Result<std::vector<std::string>> files = ListFilesRecursive(fs, path);
      if (!files.ok()) continue;  // going away under us
      for (const std::string& f : *files) {
        Result<FileInfo> fi = fs.Stat(path + "/" + f);
        if (!fi.ok() || !fi->exists) continue;
        newest = std::max(newest, fi->mtime_ns);
        bytes += fi->size;
      }
    }
    if (now_ns - newest < kStaleTempNs) continue;
    BM_TRY(fs.RemoveAll(path));
    ++report.stale_temps;
    report.stale_temp_bytes += bytes;
  }
  return Status::Ok();
}

}  // namespace

Result<StoreStats> ComputeStats(LocalStore& store) {
  BM_ASSIGN_OR_RETURN(std::vector<Entry> entries, ListEntries(store));
  StoreStats stats;
  for (const Entry& e : entries) {
    if (e.is_dir) continue;
    if (e.ns == Namespace::kCas) {
      ++stats.blobs;
      stats.blob_bytes += e.size;
    } else {
      ++stats.actions;
      stats.action_bytes += e.size;
    }
  }
  return stats;
}

Result<VerifyReport> Verify(LocalStore& store) {
  Filesystem& fs = store.fs();
  BM_ASSIGN_OR_RETURN(std::vector<Entry> entries, ListEntries(store));
  VerifyReport report;
  for (const Entry& e : entries) {
    ++report.checked;
    std::string problem;
    if (e.is_dir) {
      problem = "a directory, not a file";
    } else if (e.ns == Namespace::kCas) {
      Result<Digest> d = fs.HashFile(e.path);
      if (!d.ok())
        problem = d.status().message();
      else if (d->Hex() != e.name)
        problem = "bytes hash to " + d->Hex();
    } else {
      Result<std::string> bytes = fs.ReadFile(e.path);
      Result<ActionRecord> r =
          bytes.ok() ? ParseRecord(*bytes) : Result<ActionRecord>(bytes.status());
      if (!r.ok())
        problem = r.status().message();
      else if (r->key.Hex() != e.name)
        problem = "record is for key " + r->key.Hex();
    }
    if (!problem.empty()) {
      Status removed = e.is_dir ? fs.RemoveAll(e.path) : fs.Remove(e.path);
      if (removed.ok())
        report.evicted.push_back(e.path + ": " + problem);
      else
        report.not_evicted.push_back(e.path + ": " + problem + " (" + removed.message() + ")");
    }
  }
  return report;
}

Result<GcReport> CollectGarbage(LocalStore& store, uint64_t max_bytes, int64_t now_ns) {
  Filesystem& fs = store.fs();
  if (now_ns < 0) {
    now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  }
  GcReport report;
  BM_TRY(RemoveStaleTemps(store, now_ns, report));
  BM_ASSIGN_OR_RETURN(std::vector<Entry> entries, ListEntries(store));
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.mtime_ns < b.mtime_ns; });
  uint64_t total = 0;
  for (const Entry& e : entries) total += e.size;
  for (const Entry& e : entries) {
    if (total <= max_bytes) break;
    if (e.is_dir) continue;  // verify's to report
    BM_TRY(fs.Remove(e.path));
    total -= e.size;
    ++report.removed;
    report.removed_bytes += e.size;
  }
  report.kept_bytes = total;
  return report;
}

Result<uint64_t> ParseSize(std::string_view text) {
  std::string s(text);
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(s, &pos);
  } catch (...) {
    return Errorf(ErrorCode::kInvalidArgument, "bad size '{}' (e.g. 10G, 512M)", text);
  }
  std::string unit = s.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (unit.size() == 2 && unit[1] == 'I') unit.pop_back();
  double mult = 1;
  if (unit == "K")
    mult = 1024.0;
  else if (unit == "M")
    mult = 1024.0 * 1024;
  else if (unit == "G")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    return Errorf(ErrorCode::kInvalidArgument, "bad size unit in '{}' (K, M, G, T)", text);
  if (value < 0) return Errorf(ErrorCode::kInvalidArgument, "negative size '{}'", text);
  if (!std::isfinite(value) || value * mult >= 9.2e18) {
    return Errorf(ErrorCode::kInvalidArgument, "bad size '{}' (e.g. 10G, 512M)", text);
  }
  return static_cast<uint64_t>(std::llround(value * mult));
}

std::string FormatSize(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace bm::cache
