#include "rules/output_file.h"

#include "base/real_filesystem.h"

namespace bm::rules {

Status WriteOutputFile(const std::string& path, std::string_view bytes) {
  RealFilesystem disk;
  return disk.WriteFileAtomic(path, bytes, /*read_only=*/false, /*durable=*/false);
}

Status WriteOutputJson(const std::string& path, const nlohmann::json& value) {
  return WriteOutputFile(path, value.dump(2) + "\n");
}

}  // namespace bm::rules
