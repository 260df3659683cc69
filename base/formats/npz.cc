// .npz: a zip of NAME.npy entries (base/archive does the zip part).
#include "base/archive.h"
#include "base/formats/npy.h"

namespace bm::formats {

Result<std::map<std::string, NpyArray>> ReadNpz(const std::string& path) {
  BM_ASSIGN_OR_RETURN(auto entries, ReadZipEntries(path));
  std::map<std::string, NpyArray> arrays;
  for (auto& [entry, bytes] : entries) {
    std::string name = entry;
    if (name.size() > 4 && name.ends_with(".npy")) name.resize(name.size() - 4);
    BM_ASSIGN_OR_RETURN(NpyArray a, ParseNpy(bytes, path + ":" + entry));
    arrays.emplace(name, std::move(a));
  }
  return arrays;
}

Status WriteNpz(const std::string& path, const std::map<std::string, NpyArray>& arrays) {
  std::map<std::string, std::string> entries;
  for (const auto& [name, array] : arrays) entries.emplace(name + ".npy", SerializeNpy(array));
  return WriteStoredZip(path, entries);
}

}  // namespace bm::formats
