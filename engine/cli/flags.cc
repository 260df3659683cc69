#include "engine/cli/flags.h"

#include "base/real_filesystem.h"
#include "base/subprocess_runner.h"
#include "rules/registry.h"

namespace bm::engine::cli {

Result<Workspace> OpenWorkspaceFromFlags(const ParsedArgs& args) {
  static SubprocessRunner runner;
  static RuleRegistry* rules = [] {
    auto* r = new RuleRegistry;
    rules::RegisterBuiltinRules(*r);
    return r;
  }();
  return OpenWorkspace(DiskFilesystem(), runner, *rules, args.dir(), args.file());
}

}  // namespace bm::engine::cli
