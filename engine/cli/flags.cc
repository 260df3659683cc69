#include "engine/cli/flags.h"

#include <charconv>

#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "rules/registry.h"

namespace bm::engine::cli {

Result<CommonFlags> ParseCommonFlags(const std::vector<std::string>& args) {
  CommonFlags flags;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-C" || args[i] == "-f") {
      if (i + 1 >= args.size())
        return Errorf(ErrorCode::kInvalidArgument, "{} needs a value", args[i]);
      (args[i] == "-C" ? flags.dir : flags.file) = args[i + 1];
      ++i;
    } else {
      flags.rest.push_back(args[i]);
    }
  }
  return flags;
}

Result<Workspace> OpenWorkspaceFromFlags(const CommonFlags& flags) {
  static SubprocessRunner runner;
  static RuleRegistry* rules = [] {
    auto* r = new RuleRegistry;
    rules::RegisterBuiltinRules(*r);
    return r;
  }();
  return OpenWorkspace(DiskFilesystem(), runner, *rules, flags.dir, flags.file);
}

Result<int> ParseIntFlag(const std::string& flag, const std::string& value) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < 0) {
    return Errorf(ErrorCode::kInvalidArgument, "{} wants a non-negative integer, not '{}'", flag,
                  value);
  }
  return v;
}

}  // namespace bm::engine::cli
