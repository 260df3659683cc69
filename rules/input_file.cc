#include "rules/input_file.h"

#include <filesystem>
#include <vector>

namespace bm::rules {

namespace fs = std::filesystem;

std::string InputPath(const engine::StepContext& ctx, const std::string& name) {
  auto it = ctx.inputs.find(name);
  if (it != ctx.inputs.end()) return it->second;
  return name.starts_with("/") ? name : ctx.workspace_dir + "/" + name;
}

Result<std::string> OneFileIn(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return path;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.is_regular_file() && !e.path().filename().string().starts_with("."))
      found.push_back(e.path().string());
  if (ec) return Errorf(ErrorCode::kIo, "cannot list {}: {}", path, ec.message());
  if (found.size() != 1)
    return Errorf(ErrorCode::kInvalidArgument,
                  "{} {} is a directory with {} files; it must hold exactly one", what, path,
                  found.size());
  return found[0];
}

}  // namespace bm::rules
